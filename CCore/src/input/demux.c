#include "input/demux.h"

#include <stdio.h>
#include <stdlib.h>

#include "input/lavf_input.h"
#include "mq_err.h"
#include "mq_player.h"

static const char *container_name(mq_byte_queue *in);

enum { MQ_MPEGTS_PROBESIZE = 256 << 10 };

static int open_input(mq_demux *d, mq_byte_queue *in, char *why, size_t n)
{
    d->fmt = avformat_alloc_context();
    if (!d->fmt) {
        snprintf(why, n, "out of memory");
        return AVERROR(ENOMEM);
    }
    d->fmt->pb = d->pb;
    d->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
    d->fmt->interrupt_callback.callback = mq_segment_io_interrupt;
    d->fmt->interrupt_callback.opaque = in;

    AVDictionary *opts = NULL;
    const AVInputFormat *format;
    const char *formats;
    int container = mq_byte_queue_container(in);
    if (container == MQ_CONTAINER_MPEGTS) {
        format = av_find_input_format("mpegts");
        formats = MQ_FORMATS_MPEGTS;
        // The transport stream demuxer keeps everything it reads looking for the programme's
        // tables so it can go back (probesize, 5 MB by default): a buffer filled as the stream
        // flows in, given back only once full, 5 MiB per track for the first 13 s of a 3 Mb/s
        // stream (the peak RSS on ffmpeg's HLS; 1 MiB still made the start-up's peak). HLS
        // puts the tables at each segment's start (RFC 8216 3.2); broadcast encoders repeat
        // them every 100 ms (0.5 s at most, ETSI TR 101 290): 256 KiB holds 100 ms at 20 Mb/s.
        d->fmt->probesize = MQ_MPEGTS_PROBESIZE;
    } else if (container == MQ_CONTAINER_PROBED) {
        format = NULL; // probed from the first bytes: media or a still, nothing naming other inputs
        formats = MQ_FORMATS_FILE;
    } else {
        // Fragment timestamps from tfdt, so pts are the stream's real media time on a live edge.
        av_dict_set(&opts, "use_tfdt", "1", 0);
        format = av_find_input_format("mp4");
        formats = MQ_FORMATS_FMP4;
    }
    char what[32];
    snprintf(what, sizeof what, "%s stream", container_name(in));
    int ret = mq_lavf_open_input(&d->fmt, format, formats, &opts, what, why, n);
    av_dict_free(&opts);
    return ret; // on failure d->fmt is freed (not our pb)
}

static int select_stream(mq_demux *d, enum AVMediaType type)
{
    int idx = av_find_best_stream(d->fmt, type, -1, -1, NULL, 0);
    // A transport stream's audio has no rate or layout until its frames are parsed (which
    // av_find_best_stream requires): the first stream of the kind with a known codec, whose
    // decoder reads them from the stream (ADTS headers, in-band parameter sets).
    for (unsigned i = 0; idx < 0 && i < d->fmt->nb_streams; i++) {
        const AVCodecParameters *par = d->fmt->streams[i]->codecpar;
        if (par->codec_type == type && par->codec_id != AV_CODEC_ID_NONE)
            idx = (int)i;
    }
    if (idx < 0)
        return idx;
    for (unsigned i = 0; i < d->fmt->nb_streams; i++)
        d->fmt->streams[i]->discard = (int)i == idx ? AVDISCARD_DEFAULT : AVDISCARD_ALL;
    d->st = d->fmt->streams[idx];
    return 0;
}

static const char *container_name(mq_byte_queue *in)
{
    switch (mq_byte_queue_container(in)) {
    case MQ_CONTAINER_MPEGTS:
        return "MPEG-TS";
    case MQ_CONTAINER_PROBED:
        return "file";
    default:
        return "fMP4";
    }
}

int mq_demux_open(mq_byte_queue *in, enum AVMediaType type, mq_demux **out, char *why, size_t n)
{
    mq_demux *d = calloc(1, sizeof *d);
    if (!d)
        return MQ_ERR_NO_MEMORY;
    int err = MQ_ERR_NO_MEMORY;
    if (mq_segment_io_open(in, &d->pb) < 0)
        goto fail;
    int ret = open_input(d, in, why, n);
    err = ret == MQ_AVERROR_REFUSED ? MQ_ERR_REFUSED : MQ_ERR_DEMUX;
    if (ret < 0)
        goto fail;
    ret = select_stream(d, type);
    if (ret < 0) {
        err = MQ_ERR_NOT_FOUND; // a readable input without this kind of stream (a file without sound)
        int container = mq_byte_queue_container(in);
        snprintf(why, n, "no %s stream in the %s", av_get_media_type_string(type),
                 container == MQ_CONTAINER_MPEGTS   ? "transport stream"
                 : container == MQ_CONTAINER_PROBED ? "file"
                                                    : "init segment");
        goto fail;
    }
    *out = d;
    return MQ_OK;
fail:
    mq_demux_destroy(&d);
    return err;
}

int mq_demux_read(mq_demux *d, AVPacket *pkt)
{
    for (;;) {
        int ret = av_read_frame(d->fmt, pkt);
        if (ret < 0)
            return ret;
        if (pkt->stream_index == d->st->index)
            return 0;
        av_packet_unref(pkt);
    }
}

void mq_demux_destroy(mq_demux **pd)
{
    mq_demux *d = pd ? *pd : NULL;
    if (!d)
        return;
    avformat_close_input(&d->fmt);
    mq_segment_io_close(&d->pb);
    free(d);
    *pd = NULL;
}
