#include "video/text_cues.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>

#include "core/log.h"
#include "input/lavf_input.h"
#include "mq_err.h"

// MARK: The cue list

void mq_text_cues_init(mq_text_cues *q)
{
    memset(q, 0, sizeof *q);
    q->ok = pthread_mutex_init(&q->lock, NULL) == 0;
}

void mq_text_cues_destroy(mq_text_cues *q)
{
    if (q->ok)
        pthread_mutex_destroy(&q->lock);
    q->ok = false;
}

int mq_text_cues_push(mq_text_cues *q, double start, double end, const char *ass)
{
    if (!isfinite(start) || !isfinite(end) || end <= start)
        return MQ_ERR_INVALID_ARGUMENT;
    if (!q->ok)
        return MQ_ERR_STATE;
    pthread_mutex_lock(&q->lock);
    if (q->n == MQ_TEXT_CUES) { // the cue that ends first gives way
        int first = 0;
        for (int i = 1; i < q->n; i++)
            if (q->c[i].end < q->c[first].end)
                first = i;
        q->c[first] = q->c[--q->n];
    }
    q->c[q->n].start = start;
    q->c[q->n].end = end;
    q->c[q->n].id = ++q->pushed;
    snprintf(q->c[q->n].ass, sizeof q->c[q->n].ass, "%s", ass ? ass : "");
    mq_ass_plain_text(q->c[q->n].ass, q->c[q->n].text, sizeof q->c[q->n].text);
    q->n++;
    q->active = true;
    pthread_mutex_unlock(&q->lock);
    return MQ_OK;
}

void mq_text_cues_clear(mq_text_cues *q, bool active)
{
    if (!q->ok)
        return;
    pthread_mutex_lock(&q->lock);
    q->n = 0;
    q->active = active;
    pthread_mutex_unlock(&q->lock);
}

/// Appends `s` to `buf` (NUL-terminated, `size` bytes) after a '\n' when `buf` is not empty;
/// false (nothing appended) when it does not fit whole.
static bool append_line(char *buf, size_t size, const char *s)
{
    size_t used = strlen(buf), n = strlen(s), sep = used > 0 ? 1 : 0;
    if (n == 0 || used + sep + n + 1 > size)
        return n == 0;
    if (sep)
        buf[used++] = '\n';
    memcpy(buf + used, s, n + 1);
    return true;
}

bool mq_text_cues_screen(mq_text_cues *q, double pts, uint64_t *shown, bool *changed, char *text, size_t text_size,
                         char *ass, size_t ass_size)
{
    *changed = false;
    if (!q->ok)
        return false;
    pthread_mutex_lock(&q->lock);
    bool active = q->active;
    // The cues showing, in the order they start (then pushed): their ids hashed (FNV-1a; never
    // 0 for a cue's set but by a one in 2^64 chance).
    int on[MQ_TEXT_CUES], n = 0;
    for (int i = 0; i < q->n;) {
        if (q->c[i].end < pts - 60) { // long gone (a seek back never needs them: it clears)
            q->c[i] = q->c[--q->n];
            continue;
        }
        if (q->c[i].start <= pts && pts < q->c[i].end) {
            int k = n++;
            while (k > 0 && (q->c[on[k - 1]].start > q->c[i].start ||
                             (q->c[on[k - 1]].start == q->c[i].start && q->c[on[k - 1]].id > q->c[i].id))) {
                on[k] = on[k - 1];
                k--;
            }
            on[k] = i;
        }
        i++;
    }
    uint64_t h = 0; // (none showing: 0, as the screen starts)
    for (int k = 0; k < n; k++)
        h = ((k ? h : 1469598103934665603ULL) ^ q->c[on[k]].id) * 1099511628211ULL;
    if (active && h != *shown) {
        *shown = h;
        *changed = true;
        text[0] = '\0';
        ass[0] = '\0';
        for (int k = 0; k < n; k++) {
            append_line(text, text_size, q->c[on[k]].text);
            append_line(ass, ass_size, q->c[on[k]].ass);
        }
    }
    pthread_mutex_unlock(&q->lock);
    return active;
}

void mq_ass_plain_text(const char *ass, char *text, size_t size)
{
    if (size == 0)
        return;
    size_t o = 0;
    for (const char *line = ass; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        // The Text field: after the eighth comma (it may hold commas itself).
        const char *t = line;
        for (int commas = 0; commas < 8 && t < line + len; t++)
            if (*t == ',')
                commas++;
        if (o > 0 && o + 1 < size && t < line + len)
            text[o++] = '\n';
        for (bool in_block = false; t < line + len && o + 1 < size; t++) {
            if (in_block) {
                in_block = *t != '}';
            } else if (*t == '{') {
                in_block = true;
            } else if (*t == '\\' && t + 1 < line + len && (t[1] == 'N' || t[1] == 'n' || t[1] == 'h')) {
                text[o++] = t[1] == 'h' ? ' ' : '\n';
                t++;
            } else if (*t != '\r') {
                text[o++] = *t;
            }
        }
        line = end ? end + 1 : line + len;
    }
    text[o] = '\0';
}

// MARK: WebVTT

/// The bytes a decode reads (a read-only memory AVIOContext's opaque).
typedef struct memory_input {
    const uint8_t *data;
    size_t size, at;
} memory_input;

static int memory_read(void *opaque, uint8_t *buf, int n)
{
    memory_input *m = opaque;
    size_t left = m->size - m->at;
    if (left == 0)
        return AVERROR_EOF;
    size_t k = (size_t)n < left ? (size_t)n : left;
    memcpy(buf, m->data + m->at, k);
    m->at += k;
    return (int)k;
}

static int64_t memory_seek(void *opaque, int64_t offset, int whence)
{
    memory_input *m = opaque;
    if (whence == AVSEEK_SIZE)
        return (int64_t)m->size;
    int64_t to = (whence & ~AVSEEK_FORCE) == SEEK_CUR   ? (int64_t)m->at + offset
                 : (whence & ~AVSEEK_FORCE) == SEEK_END ? (int64_t)m->size + offset
                                                        : offset;
    if (to < 0 || to > (int64_t)m->size)
        return AVERROR(EINVAL);
    m->at = (size_t)to;
    return to;
}

/// A WebVTT timestamp ("hh:mm:ss.ttt" or "mm:ss.ttt") at `s`: seconds, or NAN.
static double vtt_time(const char *s, const char **after)
{
    long part[3];
    int parts = 0;
    const char *p = s;
    while (parts < 3) {
        if (*p < '0' || *p > '9')
            return NAN;
        long v = 0;
        int digits = 0;
        while (*p >= '0' && *p <= '9' && digits < 10)
            v = v * 10 + (*p++ - '0'), digits++;
        part[parts++] = v;
        if (*p != ':')
            break;
        p++;
    }
    if (parts < 2 || *p != '.' || p[1] < '0' || p[1] > '9' || p[2] < '0' || p[2] > '9' || p[3] < '0' || p[3] > '9')
        return NAN;
    double ms = (p[1] - '0') * 100 + (p[2] - '0') * 10 + (p[3] - '0');
    *after = p + 4;
    long h = parts == 3 ? part[0] : 0, m = part[parts - 2], sec = part[parts - 1];
    if (m > 59 || sec > 59)
        return NAN;
    return (double)h * 3600 + (double)m * 60 + (double)sec + ms / 1000;
}

/// The X-TIMESTAMP-MAP of the header (the lines before the first blank one): MPEGTS / 90000 −
/// LOCAL, NAN when absent or malformed ("X-TIMESTAMP-MAP=MPEGTS:<n>,LOCAL:<time>", either order).
static double timestamp_map(const uint8_t *data, size_t size)
{
    const char *key = "X-TIMESTAMP-MAP=";
    size_t klen = strlen(key), at = 0;
    while (at < size) {
        size_t end = at;
        while (end < size && data[end] != '\n')
            end++;
        size_t len = end - at;
        if (len > 0 && data[at + len - 1] == '\r')
            len--;
        if (len == 0 && at > 0)
            return NAN; // the header ended
        if (len > klen && len < 128 && !memcmp(data + at, key, klen)) {
            char line[128];
            memcpy(line, data + at + klen, len - klen);
            line[len - klen] = '\0';
            double local = NAN;
            long long mpegts = -1;
            for (char *f = line; f && *f;) {
                char *comma = strchr(f, ',');
                if (comma)
                    *comma = '\0';
                if (!strncmp(f, "LOCAL:", 6)) {
                    const char *after = "";
                    local = vtt_time(f + 6, &after);
                    if (*after)
                        local = NAN;
                } else if (!strncmp(f, "MPEGTS:", 7)) {
                    char *stop;
                    mpegts = strtoll(f + 7, &stop, 10);
                    if (stop == f + 7 || *stop || mpegts < 0 || mpegts >= (1LL << 33))
                        mpegts = -1;
                }
                f = comma ? comma + 1 : NULL;
            }
            return mpegts >= 0 && isfinite(local) ? (double)mpegts / 90000.0 - local : NAN;
        }
        at = end + 1;
    }
    return NAN;
}

/// Copies the ASS lines of `sub` into `ass` (whole lines only); false when one did not fit.
static bool copy_events(const AVSubtitle *sub, char *ass, size_t size)
{
    ass[0] = '\0';
    bool whole = true;
    for (unsigned i = 0; i < sub->num_rects; i++) {
        const char *e = sub->rects[i]->ass;
        if (!e)
            continue;
        char line[MQ_TEXT_CUE_ASS];
        snprintf(line, sizeof line, "%s", e);
        line[strcspn(line, "\r\n")] = '\0';
        whole = append_line(ass, size, line) && whole && strlen(e) < sizeof line;
    }
    return whole;
}

int mq_webvtt_decode(const uint8_t *data, size_t size, mq_text_cue *cues, int max, int *count, double *map_offset)
{
    if (!count || !map_offset || (!data && size) || (max > 0 && !cues) || max < 0)
        return MQ_ERR_INVALID_ARGUMENT;
    *count = 0;
    *map_offset = NAN;
    if (size > MQ_WEBVTT_MAX)
        return MQ_ERR_INVALID_ARGUMENT;
    // The signature FFmpeg's demuxer, forced, does not check: an optional BOM, then "WEBVTT"
    // and a space, a tab or a line end (an HTML error page is not a text track).
    size_t bom = size >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3) ? 3 : 0;
    uint8_t next = size > bom + 6 ? data[bom + 6] : '\n';
    if (size < bom + 6 || memcmp(data + bom, "WEBVTT", 6) ||
        (next != ' ' && next != '\t' && next != '\r' && next != '\n'))
        return MQ_ERR_DEMUX;
    memory_input m = {data, size, 0};
    const AVInputFormat *vtt = av_find_input_format("webvtt");
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_WEBVTT);
    if (!vtt || !codec)
        return MQ_ERR_UNSUPPORTED;
    uint8_t *buf = av_malloc(4096);
    AVIOContext *pb = buf ? avio_alloc_context(buf, 4096, 0, &m, memory_read, NULL, memory_seek) : NULL;
    AVFormatContext *fmt = pb ? avformat_alloc_context() : NULL;
    AVCodecContext *ctx = fmt ? avcodec_alloc_context3(codec) : NULL;
    AVPacket *pkt = ctx ? av_packet_alloc() : NULL;
    int ret = pkt ? MQ_OK : MQ_ERR_NO_MEMORY;
    if (!pb)
        av_free(buf);
    char why[160] = "";
    if (ret == MQ_OK) {
        fmt->pb = pb;
        if (mq_lavf_open_input(&fmt, vtt, "webvtt", NULL, "text track", why, sizeof why) < 0) {
            mq_log(MQ_LOG_DEBUG, "webvtt: %s", why);
            ret = MQ_ERR_DEMUX;
        }
    }
    if (ret == MQ_OK && (fmt->nb_streams != 1 || fmt->streams[0]->codecpar->codec_id != AV_CODEC_ID_WEBVTT))
        ret = MQ_ERR_DEMUX;
    if (ret == MQ_OK) {
        ctx->pkt_timebase = fmt->streams[0]->time_base;
        if (avcodec_open2(ctx, codec, NULL) < 0)
            ret = MQ_ERR_DECODE;
    }
    int dropped = 0, cut = 0;
    while (ret == MQ_OK && av_read_frame(fmt, pkt) >= 0) {
        AVSubtitle sub;
        int got = 0;
        AVRational tb = fmt->streams[0]->time_base;
        if (pkt->pts != AV_NOPTS_VALUE && pkt->duration > 0 && avcodec_decode_subtitle2(ctx, &sub, &got, pkt) >= 0 &&
            got) {
            if (*count < max) {
                mq_text_cue *c = &cues[*count];
                c->start = (double)pkt->pts * av_q2d(tb);
                c->end = (double)(pkt->pts + pkt->duration) * av_q2d(tb);
                if (!copy_events(&sub, c->ass, sizeof c->ass))
                    cut++;
                mq_ass_plain_text(c->ass, c->text, sizeof c->text);
                (*count)++;
            } else {
                dropped++;
            }
            avsubtitle_free(&sub);
        }
        av_packet_unref(pkt);
    }
    if (ret == MQ_OK)
        *map_offset = timestamp_map(data, size);
    if (dropped || cut)
        mq_log(MQ_LOG_WARN, "webvtt: %d cues dropped (more than %d), %d cut short", dropped, max, cut);
    av_packet_free(&pkt);
    avcodec_free_context(&ctx);
    avformat_close_input(&fmt);
    if (pb)
        av_freep(&pb->buffer);
    avio_context_free(&pb);
    return ret;
}
