#ifndef MQ_LAVF_INPUT_H
#define MQ_LAVF_INPUT_H

#include <stddef.h>

#include <libavformat/avformat.h>

/// What libavformat may open for us (issue #36, item 4). Every input is read through an
/// AVIOContext of ours: a track's byte queue (segment_io.c), or a local regular file checked
/// and opened here. So no protocol is needed and none is allowed (protocol_whitelist ""); the
/// demuxer must be one of the input's kind (format_whitelist, checked after probing); and a
/// nested open is refused (io_open): an HLS or DASH playlist, a concat list, an image sequence
/// or an MP4 data reference would otherwise fetch the URLs or files its bytes name.

/// Demuxers allowed, by what the input is (libavformat's names; one matches by any of its).
#define MQ_FORMATS_FMP4 "mov,mp4,m4a,3gp,3g2,mj2"
#define MQ_FORMATS_MPEGTS "mpegts"
/// Still images: the single-picture demuxers (not image2, which opens files by a name pattern).
#define MQ_FORMATS_IMAGE "png_pipe,jpeg_pipe,bmp_pipe,webp_pipe,gif"
/// Audio and video files: clips, and a file item's media.
#define MQ_FORMATS_MEDIA "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,mpegts,wav,mp3,aac,flac,ogg"
/// A file item (MQ_CONTAINER_PROBED): media or a still.
#define MQ_FORMATS_FILE MQ_FORMATS_MEDIA "," MQ_FORMATS_IMAGE

/// The error mq_lavf_open_input returns for a refusal: a format not allowed, or a nested open
/// the demuxer could not do without.
#define MQ_AVERROR_REFUSED AVERROR(EPERM)

/// Opens `*fmt` (allocated by the caller, its custom `pb` set) as `format` (NULL: probed from
/// the bytes, without a file name: no extension decides) when that demuxer is one of `formats`,
/// with no protocol and nested opens refused. `what` names the input in `why`. Returns 0 or an
/// AVERROR (MQ_AVERROR_REFUSED for a refusal), `why` then says what failed; on failure `*fmt`
/// is freed and NULL (the pb is the caller's). `*opts` as avformat_open_input takes it.
int mq_lavf_open_input(AVFormatContext **fmt, const AVInputFormat *format, const char *formats, AVDictionary **opts,
                       const char *what, char *why, size_t n);

/// The io_open callback set by mq_lavf_open_input: refuses every nested open (logs the URL).
int mq_lavf_refuse_open(AVFormatContext *s, AVIOContext **pb, const char *url, int flags, AVDictionary **options);

/// A local regular file read by libavformat through a descriptor checked here (no name is
/// handed to libavformat, so nothing it parses can make it another file or a URL).
typedef struct mq_file_input {
    AVFormatContext *fmt; ///< opened (probed, whitelisted), ready for avformat_find_stream_info
    AVIOContext *pb;      ///< reads `fd` (seekable)
    int fd;
} mq_file_input;

/// Opens `path` for `what` ("poster", "clip": in the log line) with a demuxer among `formats`.
/// Refused (MQ_ERR_REFUSED, a log line says why): a path whose first component holds a ':' (a
/// URL or a libavformat protocol: `concat:`, `tcp://`, `file:`, `subfile,…:`; write `./a:b`
/// for such a local name), anything but a regular file (a FIFO, a device, a socket, a
/// directory; a symbolic link is followed: its target must be a regular file), a format not in
/// `formats`. MQ_ERR_IO when it cannot be opened or read, MQ_ERR_DEMUX when libavformat does
/// not recognise it, MQ_ERR_INVALID_ARGUMENT for an empty path.
int mq_file_input_open(const char *path, const char *formats, const char *what, mq_file_input **out);
/// Closes the demuxer, the AVIOContext and the file. NULL-safe; sets `*in` to NULL.
void mq_file_input_destroy(mq_file_input **in);

#endif
