#include "video/captions.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/dict.h>

#include "core/log.h"
#include "mq_err.h"

struct mq_cc_decoder {
    AVCodecContext *ctx;
    AVPacket *pkt;
    char events[MQ_CC_ASS]; // the last screen's ASS events
};

int mq_cc_decoder_create(mq_cc_decoder **out)
{
    *out = NULL;
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_EIA_608);
    if (!codec)
        return MQ_ERR_UNSUPPORTED;
    mq_cc_decoder *d = calloc(1, sizeof *d);
    if (!d)
        return MQ_ERR_NO_MEMORY;
    d->ctx = avcodec_alloc_context3(codec);
    d->pkt = av_packet_alloc();
    if (!d->ctx || !d->pkt) {
        mq_cc_decoder_destroy(&d);
        return MQ_ERR_NO_MEMORY;
    }
    d->ctx->pkt_timebase = (AVRational){1, 1000000};
    // Each change as it is decoded (not when the next one ends it), none held back to batch them.
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "real_time", "1", 0);
    av_dict_set(&opts, "real_time_latency_msec", "0", 0);
    int ret = avcodec_open2(d->ctx, codec, &opts);
    av_dict_free(&opts);
    if (ret < 0) {
        mq_log(MQ_LOG_WARN, "captions: cc_dec could not be opened: %s", av_err2str(ret));
        mq_cc_decoder_destroy(&d);
        return MQ_ERR_UNSUPPORTED;
    }
    *out = d;
    return MQ_OK;
}

void mq_cc_decoder_destroy(mq_cc_decoder **d)
{
    if (!*d)
        return;
    avcodec_free_context(&(*d)->ctx);
    av_packet_free(&(*d)->pkt);
    free(*d);
    *d = NULL;
}

void mq_cc_decoder_flush(mq_cc_decoder *d)
{
    if (d)
        avcodec_flush_buffers(d->ctx);
}

/// The text of an ASS event line as cc_dec writes it ("ReadOrder,Layer,Style,Name,MarginL,
/// MarginR,MarginV,Effect,Text"): its Text, without override blocks ({...}), "\N" a new line,
/// "\h" a space. Appended to `out` (NUL-terminated, truncated at `size`).
static void ass_text(const char *ass, char *out, size_t size)
{
    const char *s = ass;
    for (int commas = 0; *s && commas < 8; s++)
        commas += *s == ',';
    size_t n = strlen(out);
    while (*s && n + 1 < size) {
        if (*s == '{') { // an override block: skipped whole (unterminated: the rest)
            const char *end = strchr(s, '}');
            s = end ? end + 1 : s + strlen(s);
        } else if (s[0] == '\\' && (s[1] == 'N' || s[1] == 'n')) {
            out[n++] = '\n';
            s += 2;
        } else if (s[0] == '\\' && s[1] == 'h') {
            out[n++] = ' ';
            s += 2;
        } else if (*s == '\r' || *s == '\n') {
            s++;
        } else {
            out[n++] = *s++;
        }
    }
    out[n] = '\0';
    while (n > 0 && out[n - 1] == '\n') // (a trailing row break says nothing)
        out[--n] = '\0';
}

int mq_cc_decoder_feed(mq_cc_decoder *d, const AVFrame *f, double pts, char *text, size_t size)
{
    const AVFrameSideData *sd = av_frame_get_side_data(f, AV_FRAME_DATA_A53_CC);
    if (!sd || sd->size < 3 || !isfinite(pts))
        return 0;
    av_packet_unref(d->pkt);
    if (av_new_packet(d->pkt, (int)(sd->size - sd->size % 3)) < 0)
        return MQ_ERR_NO_MEMORY;
    memcpy(d->pkt->data, sd->data, (size_t)d->pkt->size); // whole cc_data triplets
    d->pkt->pts = d->pkt->dts = llrint(pts * 1e6);
    AVSubtitle sub;
    int got = 0;
    int ret = avcodec_decode_subtitle2(d->ctx, &sub, &got, d->pkt);
    if (ret < 0 || !got)
        return 0; // (damaged pairs are cc_dec's to skip: the screen stays)
    text[0] = '\0';
    d->events[0] = '\0';
    size_t used = 0;
    bool whole = true;
    for (unsigned i = 0; i < sub.num_rects; i++)
        if (sub.rects[i]->ass) {
            if (text[0] && strlen(text) + 1 < size)
                strcat(text, "\n");
            ass_text(sub.rects[i]->ass, text, size);
            // The event whole or none of the screen (a cut event would draw what was not sent).
            int n = snprintf(d->events + used, sizeof d->events - used, "%s%s", used ? "\n" : "", sub.rects[i]->ass);
            whole = whole && n >= 0 && (size_t)n < sizeof d->events - used;
            used = whole ? used + (size_t)n : used;
        }
    if (!whole)
        d->events[0] = '\0';
    avsubtitle_free(&sub);
    return 1;
}

const char *mq_cc_decoder_events(const mq_cc_decoder *d)
{
    return d ? d->events : "";
}

void mq_cc_queue_init(mq_cc_queue *q)
{
    memset(q, 0, sizeof *q);
    q->ok = pthread_mutex_init(&q->lock, NULL) == 0;
}

void mq_cc_queue_destroy(mq_cc_queue *q)
{
    if (q->ok)
        pthread_mutex_destroy(&q->lock);
    q->ok = false;
}

/// Whether entry `a` of `q` comes after entry `b` (by time, then by order pushed).
static bool later(const mq_cc_queue *q, int a, int b)
{
    return q->e[a].pts > q->e[b].pts || (q->e[a].pts == q->e[b].pts && q->e[a].order > q->e[b].order);
}

void mq_cc_queue_push(mq_cc_queue *q, double pts, const char *text)
{
    mq_cc_queue_push_screen(q, pts, text, "");
}

void mq_cc_queue_push_screen(mq_cc_queue *q, double pts, const char *text, const char *ass)
{
    if (!q->ok)
        return;
    pthread_mutex_lock(&q->lock);
    if (q->n == MQ_CC_QUEUE) { // the earliest change gives way
        int first = 0;
        for (int i = 1; i < q->n; i++)
            if (later(q, first, i))
                first = i;
        q->e[first] = q->e[--q->n];
    }
    q->e[q->n].pts = pts;
    q->e[q->n].order = q->pushed++;
    snprintf(q->e[q->n].text, sizeof q->e[q->n].text, "%s", text);
    snprintf(q->e[q->n].ass, sizeof q->e[q->n].ass, "%s", ass ? ass : "");
    q->n++;
    pthread_mutex_unlock(&q->lock);
}

bool mq_cc_queue_due(mq_cc_queue *q, double pts, char *text, size_t size, double *at)
{
    return mq_cc_queue_due_screen(q, pts, text, size, NULL, at);
}

bool mq_cc_queue_due_screen(mq_cc_queue *q, double pts, char *text, size_t size, char *ass, double *at)
{
    if (!q->ok)
        return false;
    int last = -1;
    pthread_mutex_lock(&q->lock);
    for (int i = 0; i < q->n; i++)
        if (q->e[i].pts <= pts + 1e-6 && (last < 0 || later(q, i, last)))
            last = i;
    if (last >= 0) {
        snprintf(text, size, "%s", q->e[last].text);
        if (ass)
            memcpy(ass, q->e[last].ass, MQ_CC_ASS);
        *at = q->e[last].pts;
        for (int i = 0; i < q->n;) // every change due is taken: the last one is the screen
            if (q->e[i].pts <= pts + 1e-6)
                q->e[i] = q->e[--q->n];
            else
                i++;
    }
    pthread_mutex_unlock(&q->lock);
    return last >= 0;
}

void mq_cc_queue_clear(mq_cc_queue *q)
{
    if (!q->ok)
        return;
    pthread_mutex_lock(&q->lock);
    q->n = 0;
    q->flushed = true;
    pthread_mutex_unlock(&q->lock);
}

bool mq_cc_queue_take_flush(mq_cc_queue *q)
{
    if (!q->ok)
        return false;
    pthread_mutex_lock(&q->lock);
    bool flushed = q->flushed;
    q->flushed = false;
    pthread_mutex_unlock(&q->lock);
    return flushed;
}
