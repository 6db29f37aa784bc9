#ifndef MQ_DEMUX_H
#define MQ_DEMUX_H

#include <stddef.h>

#include <libavformat/avformat.h>

#include "input/segment_io.h"

/// One demuxer session over a track's byte queue: from an init segment to the next one (or
/// the end of input). Decode thread only.
typedef struct mq_demux {
    AVFormatContext *fmt;
    AVIOContext *pb;
    AVStream *st; // the selected stream; the others are discarded
} mq_demux;

/// Opens the input's demuxer (fMP4 with tfdt timestamps, MPEG-TS, or probed for a whole file,
/// among the formats lavf_input.h allows) and selects the best stream of `type`.
/// Blocks until the init segment and the first media segment's header arrived.
/// On failure returns an mq_err (MQ_ERR_REFUSED: a format not allowed) and writes a reason
/// into `why`.
int mq_demux_open(mq_byte_queue *in, enum AVMediaType type, mq_demux **out, char *why, size_t n);

/// The next packet of the selected stream; AVERROR_EOF at the end of the session.
int mq_demux_read(mq_demux *d, AVPacket *pkt);

void mq_demux_destroy(mq_demux **d);

#endif
