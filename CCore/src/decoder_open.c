#include "decoder_open.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <libavutil/error.h>

#include "mq_err.h"

/// Appends "; <text>" (or "<text>" first) to `buf`, truncating quietly.
static void note(char *buf, size_t n, const char *fmt, ...)
{
    size_t len = strlen(buf);
    if (len + 3 >= n)
        return;
    if (len > 0) {
        memcpy(buf + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + len, n - len, fmt, ap);
    va_end(ap);
}

/// Whether `name` applies to `id`; `*codec` is libavcodec's decoder of that name (or NULL).
static bool applies(const char *name, enum AVCodecID id, const AVCodec **codec)
{
    *codec = avcodec_find_decoder_by_name(name);
    if (*codec)
        return (*codec)->id == id;
    const char *cname = avcodec_get_name(id);
    size_t n = strlen(cname);
    return strncmp(name, cname, n) == 0 && name[n] == '_';
}

static int try_open(const AVCodec *codec, const AVCodecParameters *par, AVRational tb, int threads,
                    AVCodecContext **out)
{
    AVCodecContext *c = avcodec_alloc_context3(codec);
    if (!c)
        return AVERROR(ENOMEM);
    int ret = avcodec_parameters_to_context(c, par);
    if (ret >= 0) {
        c->pkt_timebase = tb;
        c->thread_count = threads;
        ret = avcodec_open2(c, codec, NULL);
    }
    if (ret < 0) {
        avcodec_free_context(&c);
        return ret;
    }
    *out = c;
    return 0;
}

/// Copies the next list item (trimmed) into `name`; returns the rest of the list.
static const char *next_name(const char *s, char *name, size_t n)
{
    size_t len = strcspn(s, ",");
    const char *b = s, *e = s + len;
    while (b < e && *b == ' ')
        b++;
    while (e > b && e[-1] == ' ')
        e--;
    size_t k = (size_t)(e - b) < n ? (size_t)(e - b) : 0; // too long: no such decoder
    memcpy(name, b, k);
    name[k] = '\0';
    return s[len] == ',' ? s + len + 1 : s + len;
}

int mq_decoder_open(const char *prefs, const AVCodecParameters *par, AVRational tb, int threads,
                    AVCodecContext **out, char *failed, size_t failed_size)
{
    *out = NULL;
    failed[0] = '\0';
    char name[64];
    for (const char *s = prefs ? prefs : ""; *s;) {
        s = next_name(s, name, sizeof name);
        const AVCodec *codec;
        if (!name[0] || !applies(name, par->codec_id, &codec))
            continue;
        if (!codec) {
            note(failed, failed_size, "%s: not in this libavcodec", name);
            continue;
        }
        int ret = try_open(codec, par, tb, threads, out);
        if (ret == 0)
            return MQ_OK;
        note(failed, failed_size, "%s: %s", name, av_err2str(ret));
    }
    const AVCodec *codec = avcodec_find_decoder(par->codec_id);
    if (!codec)
        return MQ_ERR_UNSUPPORTED;
    return try_open(codec, par, tb, threads, out) == 0 ? MQ_OK : MQ_ERR_DECODE;
}

int mq_decoder_prefs_check(const char *prefs)
{
    if (!prefs)
        return MQ_OK;
    size_t n = strlen(prefs);
    if (n > 1023 || strspn(prefs, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_, ") != n)
        return MQ_ERR_INVALID_ARGUMENT;
    return MQ_OK;
}
