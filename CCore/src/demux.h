#ifndef MQ_DEMUX_H
#define MQ_DEMUX_H

#include <stddef.h>

#include <libavformat/avformat.h>

#include "segment_io.h"

/// One demuxer session over a track's byte queue: from an init segment to the next one (or
/// the end of input). Decode thread only.
typedef struct mq_demux {
    AVFormatContext *fmt;
    AVIOContext *pb;
    AVStream *st; // the selected stream; the others are discarded
} mq_demux;

/// Opens the fMP4 demuxer (tfdt timestamps) and selects the best stream of `type`.
/// Blocks until the init segment and the first media segment's header arrived.
/// On failure returns an mq_err and writes a reason into `why`.
int mq_demux_open(mq_byte_queue *in, enum AVMediaType type, mq_demux **out, char *why, size_t n);

/// The next packet of the selected stream; AVERROR_EOF at the end of the session.
int mq_demux_read(mq_demux *d, AVPacket *pkt);

void mq_demux_destroy(mq_demux **d);

#endif
