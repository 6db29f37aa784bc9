// What libavformat may open (issue #36, item 4): posters, clips and file items open only a
// local regular file, read through a checked descriptor, as a format of their kind, and no
// demuxer may open another input its bytes name. Refused (MQ_ERR_REFUSED, with a log line, and
// nothing else opened: inotify on the file a playlist names): an HLS playlist or a concat list
// as a poster, a clip or a file item; "concat:", "tcp://…?listen" (no socket made), "subfile,",
// "file:" paths; a FIFO (without blocking), /dev/zero, a directory; a format of another kind.
// A symbolic link is followed to a regular file (and refused to anything else). A real PNG,
// JPEG and MP4 still open and decode.
//
//   lavf_input_test <media dir> <scratch dir>     exit 0 when every check passed

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

#include "core/log.h"
#include "input/demux.h"
#include "input/lavf_input.h"
#include "input/segment_io.h"
#include "mq_err.h"
#include "mq_player.h"
#include "test_util.h"
#include "video/video_render.h"

static char media[512], dir[512];

static const char *at(char *buf, const char *base, const char *name)
{
    snprintf(buf, 1024, "%s/%s", base, name);
    return buf;
}

static bool write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return false;
    fputs(text, f);
    return fclose(f) == 0;
}

/* ---- what the process did ---- */

/// Sockets the process holds (its /proc/self/fd entries that are sockets).
static int count_sockets(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        char link[300], target[128];
        snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
        ssize_t k = readlink(link, target, sizeof target - 1);
        if (k > 0 && (target[k] = '\0', strncmp(target, "socket:", 7) == 0))
            n++;
    }
    closedir(d);
    return n;
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
static bool listening(int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bool ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    if (s >= 0)
        close(s);
    return ok;
}

/// inotify on the file a playlist names: any open or read of it is seen.
static int watch(const char *path)
{
    int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd >= 0 && inotify_add_watch(fd, path, IN_OPEN | IN_ACCESS) < 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

/// Events the watch saw since the last call (-1: no inotify here).
static int touched(int fd)
{
    if (fd < 0)
        return -1;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    int n = 0;
    ssize_t k;
    while ((k = read(fd, buf, sizeof buf)) > 0)
        for (char *p = buf; p < buf + k; p += sizeof(struct inotify_event) + ((struct inotify_event *)(void *)p)->len)
            n++;
    return n;
}

/// stderr (mq_log's lines) goes to a file from `capture_start` to `capture_end`, which
/// returns what was written (static buffer).
static int saved_stderr = -1;
static char captured[8192];

static void capture_start(void)
{
    char path[1024];
    fflush(stderr);
    saved_stderr = dup(2);
    int fd = open(at(path, dir, "stderr.log"), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    dup2(fd, 2);
    close(fd);
}

static const char *capture_end(void)
{
    char path[1024];
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    FILE *f = fopen(at(path, dir, "stderr.log"), "r");
    size_t n = f ? fread(captured, 1, sizeof captured - 1, f) : 0;
    captured[n] = '\0';
    if (f)
        fclose(f);
    fputs(captured, stderr); // still shown
    return captured;
}

/* ---- opening through each path ---- */

static int open_poster(const char *path)
{
    AVFrame *f = NULL;
    int ret = mq_image_load(path, &f);
    if (ret == MQ_OK)
        CHECK(f && f->width == 64 && f->height == 48, "%s: a 64x48 picture (%dx%d)", path, f ? f->width : 0,
              f ? f->height : 0);
    else
        CHECK(!f, "%s: no picture on failure", path);
    av_frame_free(&f);
    return ret;
}

static int open_clip(const char *path)
{
    mq_clip *c = NULL;
    int ret = mq_clip_open(path, 48000, 2, 0, false, 0, NAN, &c);
    CHECK((ret == MQ_OK) == (c != NULL), "%s: a clip exactly on success", path);
    mq_clip_destroy(&c);
    return ret;
}

/// A file item: the bytes pushed whole to a track's queue as MQ_CONTAINER_PROBED.
static int open_file_item(const char *path, enum AVMediaType type, char *why, size_t n)
{
    size_t size = 0;
    uint8_t *bytes = mqt_read_file(path, &size);
    mq_byte_queue *q = NULL;
    mq_demux *d = NULL;
    int ret = bytes && mq_byte_queue_create(&q) == MQ_OK ? MQ_OK : MQ_ERR_IO;
    if (ret == MQ_OK) {
        mq_byte_queue_set_container(q, MQ_CONTAINER_PROBED);
        mq_byte_queue_push(q, bytes, size);
        mq_byte_queue_end(q);
        why[0] = '\0';
        ret = mq_demux_open(q, type, &d, why, n);
    }
    if (ret == MQ_OK) { // a real input: its first packet reads
        AVPacket *pkt = av_packet_alloc();
        CHECK(mq_demux_read(d, pkt) == 0 && pkt->size > 0, "%s: a packet", path);
        av_packet_free(&pkt);
    }
    mq_demux_destroy(&d);
    mq_byte_queue_destroy(&q);
    free(bytes);
    return ret;
}

/// The first video frame of an opened file decodes.
static bool decodes(mq_file_input *in)
{
    const AVCodec *codec = NULL;
    AVCodecContext *dec = NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *f = av_frame_alloc();
    int idx = avformat_find_stream_info(in->fmt, NULL) >= 0
                  ? av_find_best_stream(in->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0)
                  : -1;
    bool ok = idx >= 0 && (dec = avcodec_alloc_context3(codec)) &&
              avcodec_parameters_to_context(dec, in->fmt->streams[idx]->codecpar) >= 0 &&
              avcodec_open2(dec, codec, NULL) >= 0;
    int got = AVERROR(EAGAIN);
    while (ok && got == AVERROR(EAGAIN) && av_read_frame(in->fmt, pkt) >= 0) {
        if (pkt->stream_index == idx && avcodec_send_packet(dec, pkt) >= 0)
            got = avcodec_receive_frame(dec, f);
        av_packet_unref(pkt);
    }
    ok = ok && got >= 0 && f->width > 0;
    av_frame_free(&f);
    av_packet_free(&pkt);
    avcodec_free_context(&dec);
    return ok;
}

/* ---- tests ---- */

static void test_real_inputs_open(void)
{
    char png[1024], jpg[1024], mp4[1024], m4a[1024], wav[1024], why[256];
    at(png, media, "still.png"), at(jpg, media, "still.jpg"), at(mp4, media, "video.mp4");
    at(m4a, media, "music660.m4a"), at(wav, media, "music660.wav");
    CHECK(open_poster(png) == MQ_OK, "a PNG poster");
    CHECK(open_poster(jpg) == MQ_OK, "a JPEG poster");
    CHECK(open_clip(m4a) == MQ_OK, "an M4A clip");
    CHECK(open_clip(wav) == MQ_OK, "a WAV clip");
    CHECK(open_clip(mp4) == MQ_ERR_UNSUPPORTED, "an MP4 without sound opens, has no audio to play");
    mq_file_input *in = NULL;
    CHECK(mq_file_input_open(mp4, MQ_FORMATS_MEDIA, "test", &in) == MQ_OK && in && decodes(in),
          "an MP4 opens and decodes");
    if (in) { // nested opens are refused on what it opened
        char other[1024];
        AVIOContext *pb = NULL;
        CHECK(in->fmt->io_open == mq_lavf_refuse_open, "io_open refuses");
        CHECK(in->fmt->io_open(in->fmt, &pb, at(other, media, "muxed.ts"), AVIO_FLAG_READ, NULL) ==
                      MQ_AVERROR_REFUSED &&
                  !pb,
              "a nested open is refused");
        CHECK(in->fmt->protocol_whitelist && !strcmp(in->fmt->protocol_whitelist, ""), "no protocol allowed");
        CHECK(in->fmt->format_whitelist && !strcmp(in->fmt->format_whitelist, MQ_FORMATS_MEDIA),
              "format whitelist set");
    }
    mq_file_input_destroy(&in);
    CHECK(in == NULL, "destroy clears the pointer");
    CHECK(open_file_item(mp4, AVMEDIA_TYPE_VIDEO, why, sizeof why) == MQ_OK, "an MP4 file item (%s)", why);
    CHECK(open_file_item(png, AVMEDIA_TYPE_VIDEO, why, sizeof why) == MQ_OK, "a PNG file item (%s)", why);
    CHECK(open_file_item(at(mp4, media, "muxed.ts"), AVMEDIA_TYPE_AUDIO, why, sizeof why) == MQ_OK,
          "a TS file item (%s)", why);
}

/// A playlist or list naming a local file, given where a media file or a still is taken.
static void test_lists_naming_other_inputs(void)
{
    char other[1024], m3u8[1024], ffconcat[1024], text[4096], why[256];
    at(other, dir, "other.ts");
    size_t size = 0;
    uint8_t *ts = mqt_read_file(at(text, media, "muxed.ts"), &size);
    FILE *f = fopen(other, "wb");
    CHECK(ts && f && fwrite(ts, 1, size, f) == size, "the other file");
    if (f)
        fclose(f);
    free(ts);
    snprintf(text, sizeof text,
             "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:0\n"
             "#EXTINF:2.0,\nfile://%s\n#EXTINF:2.0,\n%s\n#EXT-X-ENDLIST\n",
             other, other);
    CHECK(write_file(at(m3u8, dir, "list.m3u8"), text), "playlist written");
    snprintf(text, sizeof text, "ffconcat version 1.0\nfile other.ts\nfile '%s'\n", other);
    CHECK(write_file(at(ffconcat, dir, "list.ffconcat"), text), "concat list written");

    int w = watch(other);
    if (w < 0)
        printf("lavf_input_test: no inotify: the other file's opens are not watched\n");
    capture_start();
    int poster = open_poster(m3u8), clip = open_clip(m3u8),
        item = open_file_item(m3u8, AVMEDIA_TYPE_VIDEO, why, sizeof why);
    const char *log = capture_end();
    CHECK(poster == MQ_ERR_REFUSED, "an HLS playlist as a poster is refused (%d)", poster);
    CHECK(clip == MQ_ERR_REFUSED, "an HLS playlist as a clip is refused (%d)", clip);
    CHECK(item == MQ_ERR_REFUSED && strstr(why, "(hls)"), "an HLS playlist as a file item is refused (%d: %s)", item,
          why);
    CHECK(strstr(log, "poster") && strstr(log, "clip") && strstr(log, "refused") && strstr(log, "(hls)"),
          "a log line names what was refused");
    CHECK(open_poster(ffconcat) == MQ_ERR_REFUSED, "a concat list as a poster is refused");
    CHECK(open_clip(ffconcat) == MQ_ERR_REFUSED, "a concat list as a clip is refused");
    CHECK(open_file_item(ffconcat, AVMEDIA_TYPE_AUDIO, why, sizeof why) == MQ_ERR_REFUSED && strstr(why, "(concat)"),
          "a concat list as a file item is refused (%s)", why);
    CHECK(touched(w) <= 0, "the file they name was neither opened nor read");
    if (w >= 0)
        close(w);
}

/// Paths libavformat would take as a protocol: refused before anything is opened.
static void test_protocol_paths(void)
{
    char path[2200], other[1024];
    at(other, dir, "other.ts");
    int w = watch(other), sockets = count_sockets();
    CHECK(!listening(1), "nothing listens on port 1 before");
    snprintf(path, sizeof path, "concat:%s|%s", other, other);
    CHECK(open_clip(path) == MQ_ERR_REFUSED, "concat: as a clip");
    CHECK(open_poster(path) == MQ_ERR_REFUSED, "concat: as a poster");
    CHECK(open_clip("tcp://127.0.0.1:1?listen") == MQ_ERR_REFUSED, "tcp://…?listen as a clip");
    CHECK(open_poster("tcp://127.0.0.1:1?listen") == MQ_ERR_REFUSED, "tcp://…?listen as a poster");
    CHECK(count_sockets() == sockets && !listening(1), "no socket made, nothing listens");
    snprintf(path, sizeof path, "subfile,,start,0,end,1000,,:%s", other);
    CHECK(open_clip(path) == MQ_ERR_REFUSED, "subfile, as a clip");
    snprintf(path, sizeof path, "file:%s", other);
    CHECK(open_clip(path) == MQ_ERR_REFUSED, "file: as a clip");
    CHECK(open_clip("http://127.0.0.1:1/a.mp3") == MQ_ERR_REFUSED, "http: as a clip");
    CHECK(touched(w) <= 0, "the files they name were neither opened nor read");
    if (w >= 0)
        close(w);
    mq_file_input *in = NULL;
    CHECK(mq_file_input_open("", MQ_FORMATS_MEDIA, "test", &in) == MQ_ERR_INVALID_ARGUMENT && !in, "an empty path");
}

/// Special files, and symbolic links.
static void test_special_files(void)
{
    char fifo[1024], png[1024], link[1024], dangling[1024], zero_link[1024], fifo_link[1024];
    at(fifo, dir, "fifo");
    unlink(fifo);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    double t0 = mq_clock_now();
    CHECK(open_poster(fifo) == MQ_ERR_REFUSED, "a FIFO as a poster");
    CHECK(open_clip(fifo) == MQ_ERR_REFUSED, "a FIFO as a clip");
    CHECK(mq_clock_now() - t0 < 1.0, "refused at once, without waiting for a writer (%.2f s)", mq_clock_now() - t0);
    CHECK(open_poster("/dev/zero") == MQ_ERR_REFUSED, "/dev/zero as a poster");
    CHECK(open_clip("/dev/zero") == MQ_ERR_REFUSED, "/dev/zero as a clip");
    CHECK(open_clip(dir) == MQ_ERR_REFUSED, "a directory as a clip");
    CHECK(open_clip("/nonexistent/a.m4a") == MQ_ERR_IO, "a missing file is an I/O error");

    at(png, media, "still.png");
    at(link, dir, "poster-link.png"), at(dangling, dir, "dangling.png");
    at(zero_link, dir, "zero.png"), at(fifo_link, dir, "fifo.png");
    unlink(link), unlink(dangling), unlink(zero_link), unlink(fifo_link);
    CHECK(symlink(png, link) == 0 && symlink("/nonexistent/x.png", dangling) == 0 &&
              symlink("/dev/zero", zero_link) == 0 && symlink(fifo, fifo_link) == 0,
          "symlinks: %s", strerror(errno));
    CHECK(open_poster(link) == MQ_OK, "a symbolic link to a PNG is followed");
    CHECK(open_poster(zero_link) == MQ_ERR_REFUSED, "a symbolic link to /dev/zero is refused");
    CHECK(open_poster(fifo_link) == MQ_ERR_REFUSED, "a symbolic link to a FIFO is refused");
    CHECK(open_poster(dangling) == MQ_ERR_IO, "a dangling symbolic link is an I/O error");
    unlink(link), unlink(dangling), unlink(zero_link), unlink(fifo_link), unlink(fifo);
}

/// A real file of another kind than the one asked for.
static void test_formats_by_kind(void)
{
    char path[1024], why[256];
    CHECK(open_poster(at(path, media, "video.mp4")) == MQ_ERR_REFUSED, "an MP4 is not a poster");
    CHECK(open_poster(at(path, media, "music660.wav")) == MQ_ERR_REFUSED, "a WAV is not a poster");
    CHECK(open_clip(at(path, media, "still.png")) == MQ_ERR_REFUSED, "a PNG is not a clip");
    // An fMP4 track forced to its demuxer: a still pushed there is not demuxed as one.
    size_t size = 0;
    uint8_t *bytes = mqt_read_file(at(path, media, "still.png"), &size);
    mq_byte_queue *q = NULL;
    mq_demux *d = NULL;
    mq_byte_queue_create(&q);
    mq_byte_queue_set_container(q, MQ_CONTAINER_MPEGTS);
    mq_byte_queue_push(q, bytes, size);
    mq_byte_queue_end(q);
    int ret = mq_demux_open(q, AVMEDIA_TYPE_VIDEO, &d, why, sizeof why);
    CHECK(ret < 0 && ret != MQ_ERR_REFUSED && !d, "a PNG on an MPEG-TS track is not a transport stream (%d: %s)", ret,
          why);
    mq_demux_destroy(&d);
    mq_byte_queue_destroy(&q);
    free(bytes);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: lavf_input_test <media dir> <scratch dir>\n");
        return 2;
    }
    mkdir(argv[2], 0700);
    char real[2][PATH_MAX]; // absolute: a symbolic link made to a test file must resolve
    if (!realpath(argv[1], real[0]) || !realpath(argv[2], real[1]) || strlen(real[0]) >= sizeof media ||
        strlen(real[1]) >= sizeof dir) {
        fprintf(stderr, "lavf_input_test: %s, %s: %s\n", argv[1], argv[2], strerror(errno));
        return 2;
    }
    memcpy(media, real[0], strlen(real[0]) + 1);
    memcpy(dir, real[1], strlen(real[1]) + 1);
    mq_ffmpeg_init();
    test_real_inputs_open();
    test_lists_naming_other_inputs();
    test_protocol_paths();
    test_special_files();
    test_formats_by_kind();
    return mqt_done("lavf_input_test");
}
