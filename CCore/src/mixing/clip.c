#include "mixing/clip.h"

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "audio/resample.h"
#include "core/log.h"
#include "core/thread.h"
#include "input/lavf_input.h"
#include "mq_err.h"
#include "mq_player.h"

#define MQ_CLIP_BLOCKS 16u
#define MQ_CLIP_BLOCK_FRAMES 2048

struct mq_clip_priv {
    // immutable after create
    int32_t rate, channels;
    bool loop;
    int32_t fade; // cross-fade frames at the loop point
    pthread_t thread;
    bool thread_started;
    _Atomic bool quit;
    _Atomic bool exited; // the clip thread is returning: a join will not wait
    // clip thread only
    mq_file_input *in;    // the file
    AVFormatContext *fmt; // in->fmt (borrowed)
    AVCodecContext *dec;
    SwrContext *swr;
    AVPacket *pkt;
    AVFrame *frame;
    int stream;
    double target;  // after a seek: clip time to start from exactly (NAN: none)
    int64_t pos;    // frames of the file passed on in this pass (from its start)
    int64_t length; // frames in the file by its container (edit list / duration): decoder
                    // padding past it is dropped; 0: unknown, keep everything
    int64_t skip;   // frames still to drop to reach it
    float *hold;    // the last `fade` frames produced, not yet passed on (the loop tail)
    int32_t held;
    float *conv; // resampler output
    int32_t conv_cap;
    int32_t fading; // frames of the cross-fade done in this pass, -1: not fading
    double pts;     // clip time of the next frame passed on
};

/* ---- output: hold line → ring ---- */

/// Passes `n` frames to the ring (waits for room, polling: the audio thread never signals).
static int emit(mq_clip *c, const float *src, int32_t n)
{
    struct mq_clip_priv *q = c->priv;
    while (n > 0) {
        mq_pcm_block *b;
        while (!(b = mq_pcm_ring_acquire(c->ring))) {
            if (atomic_load(&q->quit))
                return MQ_ERR_CLOSED;
            mq_sleep_until(mq_clock_now() + 0.005);
        }
        int32_t k = n < c->ring->block_frames ? n : c->ring->block_frames;
        memcpy(b->data, src, (size_t)k * (size_t)q->channels * sizeof(float));
        b->pts = q->pts;
        b->rate = 1.0;
        b->frames = k;
        q->pts += (double)k / q->rate;
        mq_pcm_ring_commit(c->ring, q->pts);
        src += (size_t)k * (size_t)q->channels;
        n -= k;
    }
    return MQ_OK;
}

/// Takes `n` new frames: while a loop cross-fade is running they are mixed with the held tail
/// of the previous pass; the last `fade` frames are held back (they may become the next tail).
static int produce(mq_clip *c, float *src, int32_t n)
{
    struct mq_clip_priv *q = c->priv;
    const int ch = q->channels;
    for (; q->fading >= 0 && q->fading < q->held && n > 0; q->fading++, n--, src += ch) {
        float x = (float)(q->fading + 0.5) / (float)q->held; // 0 → 1 over the fade
        float *tail = q->hold + (size_t)q->fading * (size_t)ch;
        for (int j = 0; j < ch; j++)
            tail[j] = tail[j] * (1.0f - x) + src[j] * x;
    }
    if (q->fading >= 0 && q->fading >= q->held) { // the fade is complete: pass it on
        int ret = emit(c, q->hold, q->held);
        q->held = 0;
        q->fading = -1;
        if (ret < 0)
            return ret;
    }
    if (q->fading >= 0 || n == 0)
        return MQ_OK;
    // Keep the last `fade` frames of (hold + src) held; emit the rest.
    int32_t total = q->held + n, out = total > q->fade ? total - q->fade : 0;
    int32_t from_hold = out < q->held ? out : q->held;
    int ret = emit(c, q->hold, from_hold);
    if (ret < 0)
        return ret;
    memmove(q->hold, q->hold + (size_t)from_hold * (size_t)ch,
            (size_t)(q->held - from_hold) * (size_t)ch * sizeof(float));
    q->held -= from_hold;
    int32_t from_src = out - from_hold;
    if ((ret = emit(c, src, from_src)) < 0)
        return ret;
    memcpy(q->hold + (size_t)q->held * (size_t)ch, src + (size_t)from_src * (size_t)ch,
           (size_t)(n - from_src) * (size_t)ch * sizeof(float));
    q->held += n - from_src;
    return MQ_OK;
}

/* ---- decoding ---- */

static int convert(mq_clip *c, const AVFrame *f)
{
    struct mq_clip_priv *q = c->priv;
    if (!q->swr && mq_resampler_open(&q->swr, f, q->rate, q->channels) < 0)
        return MQ_ERR_DECODE;
    int want = swr_get_out_samples(q->swr, f ? f->nb_samples : 0);
    if (want > q->conv_cap) {
        float *grown = realloc(q->conv, (size_t)want * (size_t)q->channels * sizeof(float));
        if (!grown)
            return MQ_ERR_NO_MEMORY;
        q->conv = grown;
        q->conv_cap = want;
    }
    uint8_t *out = (uint8_t *)q->conv;
    int n = swr_convert(q->swr, &out, want, f ? (const uint8_t **)f->extended_data : NULL, f ? f->nb_samples : 0);
    if (n < 0)
        return MQ_ERR_DECODE;
    float *src = q->conv;
    if (!isnan(q->target)) { // the first frame after a seek: how far before the target it starts
        AVStream *st = q->fmt->streams[q->stream];
        int64_t ts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
        double start = st->start_time != AV_NOPTS_VALUE ? (double)st->start_time * av_q2d(st->time_base) : 0;
        double at = ts != AV_NOPTS_VALUE ? (double)ts * av_q2d(st->time_base) - start : 0;
        q->skip = q->target > at ? llround((q->target - at) * q->rate) : 0;
        q->target = NAN;
    }
    if (q->skip > 0) { // reach the start offset to the frame
        int32_t k = q->skip < n ? (int32_t)q->skip : n;
        q->skip -= k;
        src += (size_t)k * (size_t)q->channels;
        n -= k;
    }
    if (q->length > 0 && q->pos + n > q->length) // the encoder's end padding (AAC, MP3)
        n = q->pos < q->length ? (int32_t)(q->length - q->pos) : 0;
    q->pos += n;
    return produce(c, src, n);
}

/// Decodes the file once, to its end. Returns MQ_OK at the end of the file.
static int decode_pass(mq_clip *c)
{
    struct mq_clip_priv *q = c->priv;
    int ret = 0;
    while (!atomic_load(&q->quit)) {
        ret = av_read_frame(q->fmt, q->pkt);
        bool eof = ret == AVERROR_EOF;
        if (ret < 0 && !eof)
            return MQ_ERR_DEMUX;
        if (!eof && q->pkt->stream_index != q->stream) {
            av_packet_unref(q->pkt);
            continue;
        }
        ret = avcodec_send_packet(q->dec, eof ? NULL : q->pkt);
        av_packet_unref(q->pkt);
        if (ret < 0 && ret != AVERROR(EAGAIN) && ret != AVERROR_EOF)
            continue; // one bad packet: skip it
        while ((ret = avcodec_receive_frame(q->dec, q->frame)) >= 0) {
            ret = convert(c, q->frame);
            av_frame_unref(q->frame);
            if (ret < 0)
                return ret;
        }
        if (eof)
            return MQ_OK;
    }
    return MQ_ERR_CLOSED;
}

static int rewind_file(mq_clip *c, double offset)
{
    struct mq_clip_priv *q = c->priv;
    AVStream *st = q->fmt->streams[q->stream];
    int64_t ts = av_rescale_q((int64_t)(offset * AV_TIME_BASE), AV_TIME_BASE_Q, st->time_base);
    if (st->start_time != AV_NOPTS_VALUE)
        ts += st->start_time;
    if (avformat_seek_file(q->fmt, q->stream, INT64_MIN, ts, ts, 0) < 0 &&
        avformat_seek_file(q->fmt, q->stream, INT64_MIN, ts, INT64_MAX, 0) < 0)
        return MQ_ERR_DEMUX;
    avcodec_flush_buffers(q->dec);
    swr_free(&q->swr);
    // The seek lands on or before `offset` (a packet start): the first frame decoded tells how
    // many frames to drop (convert). Times count from the stream's start time.
    q->target = offset;
    q->skip = 0;
    q->pos = llround(offset * q->rate);
    return MQ_OK;
}

static void *clip_main(void *arg)
{
    mq_clip *c = arg;
    struct mq_clip_priv *q = c->priv;
    int ret;
    while ((ret = decode_pass(c)) == MQ_OK && q->loop) {
        if (rewind_file(c, 0) < 0) {
            ret = MQ_ERR_DEMUX;
            break;
        }
        q->fading = q->held > 0 ? 0 : -1; // cross-fade the held tail into the start
    }
    if (ret == MQ_OK) { // a single pass ended: pass on the tail
        ret = emit(c, q->hold, q->held);
        q->held = 0;
        atomic_store(&c->ring->eof, true);
    } else if (ret != MQ_ERR_CLOSED) {
        atomic_store(&c->error, ret);
        atomic_store(&c->ring->eof, true);
    }
    atomic_store(&q->exited, true);
    return NULL;
}

/* ---- create / destroy ---- */

static int open_input(mq_clip *c, const char *path)
{
    struct mq_clip_priv *q = c->priv;
    int ret = mq_file_input_open(path, MQ_FORMATS_MEDIA, "clip", &q->in);
    if (ret < 0)
        return ret;
    q->fmt = q->in->fmt;
    if (avformat_find_stream_info(q->fmt, NULL) < 0)
        return MQ_ERR_DEMUX;
    const AVCodec *codec = NULL;
    q->stream = av_find_best_stream(q->fmt, AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
    if (q->stream < 0 || !codec)
        return MQ_ERR_UNSUPPORTED;
    q->dec = avcodec_alloc_context3(codec);
    if (!q->dec)
        return MQ_ERR_NO_MEMORY;
    if (avcodec_parameters_to_context(q->dec, q->fmt->streams[q->stream]->codecpar) < 0 ||
        avcodec_open2(q->dec, codec, NULL) < 0)
        return MQ_ERR_UNSUPPORTED;
    AVStream *st = q->fmt->streams[q->stream];
    if (st->duration > 0 && st->duration != AV_NOPTS_VALUE)
        c->duration = (double)st->duration * av_q2d(st->time_base);
    else if (q->fmt->duration > 0)
        c->duration = (double)q->fmt->duration / AV_TIME_BASE;
    q->length = (int64_t)llround(c->duration * q->rate);
    return MQ_OK;
}

int mq_clip_open(const char *path, int32_t rate, int32_t channels, double offset, bool loop, double crossfade,
                 double start_at, mq_clip **out)
{
    if (out)
        *out = NULL;
    if (!path || !out || rate <= 0 || channels <= 0 || channels > 8 || !(offset >= 0) || !isfinite(offset) ||
        !(crossfade >= 0) || crossfade > 5 || isinf(start_at))
        return MQ_ERR_INVALID_ARGUMENT;
    mq_ffmpeg_init(); // a clip may be opened before any player exists
    mq_clip *c = calloc(1, sizeof *c);
    struct mq_clip_priv *q = c ? calloc(1, sizeof *q) : NULL;
    if (!q) {
        free(c);
        return MQ_ERR_NO_MEMORY;
    }
    c->priv = q;
    c->rate = rate;
    c->channels = channels;
    c->start_at = start_at;
    q->rate = rate;
    q->channels = channels;
    q->loop = loop;
    q->fading = -1;
    q->target = NAN;
    int ret = mq_pcm_ring_create(MQ_CLIP_BLOCKS, MQ_CLIP_BLOCK_FRAMES, channels, &c->ring);
    if (ret < 0)
        goto fail;
    ret = MQ_ERR_NO_MEMORY;
    if (!(q->pkt = av_packet_alloc()) || !(q->frame = av_frame_alloc()))
        goto fail;
    if ((ret = open_input(c, path)) < 0)
        goto fail;
    // The fade never takes more than a third of the clip.
    q->fade = (int32_t)lround(crossfade * rate);
    if (c->duration > 0 && q->fade > (int32_t)(c->duration * rate / 3))
        q->fade = (int32_t)(c->duration * rate / 3);
    q->fade = loop ? q->fade : 0;
    q->hold = calloc((size_t)(q->fade > 0 ? q->fade : 1) * (size_t)channels, sizeof(float));
    if (!q->hold) {
        ret = MQ_ERR_NO_MEMORY;
        goto fail;
    }
    if (loop && c->duration > 0)
        offset = fmod(offset, c->duration - (double)q->fade / rate);
    if (offset > 0 && (ret = rewind_file(c, offset)) < 0)
        goto fail;
    q->pts = offset;
    if ((ret = mq_thread_start(&q->thread, clip_main, c, "mq-clip")) < 0)
        goto fail;
    q->thread_started = true;
    *out = c;
    return MQ_OK;
fail:
    mq_clip_destroy(&c);
    return ret;
}

void mq_clip_stop(mq_clip *c)
{
    if (c && c->priv)
        atomic_store(&c->priv->quit, true);
}

bool mq_clip_stopped(mq_clip *c)
{
    return !c->priv || !c->priv->thread_started || atomic_load(&c->priv->exited);
}

void mq_clip_destroy(mq_clip **pc)
{
    mq_clip *c = pc ? *pc : NULL;
    if (!c)
        return;
    struct mq_clip_priv *q = c->priv;
    if (q) {
        atomic_store(&q->quit, true);
        if (q->thread_started)
            pthread_join(q->thread, NULL);
        swr_free(&q->swr);
        avcodec_free_context(&q->dec);
        q->fmt = NULL;
        mq_file_input_destroy(&q->in);
        av_packet_free(&q->pkt);
        av_frame_free(&q->frame);
        free(q->hold);
        free(q->conv);
        free(q);
    }
    mq_pcm_ring_destroy(&c->ring);
    free(c);
    *pc = NULL;
}
