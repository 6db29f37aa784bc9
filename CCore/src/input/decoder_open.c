#include "input/decoder_open.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <stdint.h>

#include <libavutil/error.h>
#include <libavutil/hwcontext.h>

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

/// `<codec>_<device>` naming no decoder but a hardware device type libavutil knows (`h264_vaapi`,
/// `hevc_vdpau`, `h264_cuda`): the codec's own decoder with that device's hwaccel.
static enum AVHWDeviceType hw_suffix(const char *name, enum AVCodecID id)
{
    const char *cname = avcodec_get_name(id);
    size_t n = strlen(cname);
    if (strncmp(name, cname, n) != 0 || name[n] != '_')
        return AV_HWDEVICE_TYPE_NONE;
    return av_hwdevice_find_type_by_name(name + n + 1);
}

/// The hwaccel's surface format when libavcodec offers it, else its software format (the last).
static enum AVPixelFormat hw_get_format(AVCodecContext *c, const enum AVPixelFormat *fmts)
{
    enum AVPixelFormat want = (enum AVPixelFormat)(intptr_t)c->opaque, last = AV_PIX_FMT_NONE;
    for (; *fmts != AV_PIX_FMT_NONE; fmts++) {
        if (*fmts == want)
            return want;
        last = *fmts;
    }
    return last;
}

/// Attaches a new `hw` device (its default node) and the get_format that picks its surfaces.
static int attach_hw(AVCodecContext *c, const AVCodec *codec, enum AVHWDeviceType hw)
{
    enum AVPixelFormat surface = AV_PIX_FMT_NONE;
    for (int i = 0; surface == AV_PIX_FMT_NONE; i++) {
        const AVCodecHWConfig *cfg = avcodec_get_hw_config(codec, i);
        if (!cfg)
            return AVERROR(ENOSYS); // this decoder has no such hwaccel
        if ((cfg->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX) && cfg->device_type == hw)
            surface = cfg->pix_fmt;
    }
    int ret = av_hwdevice_ctx_create(&c->hw_device_ctx, hw, NULL, NULL, 0);
    if (ret < 0)
        return ret;
    c->opaque = (void *)(intptr_t)surface;
    c->get_format = hw_get_format;
    return 0;
}

static int try_open(const AVCodec *codec, enum AVHWDeviceType hw, const AVCodecParameters *par, AVRational tb,
                    int threads, AVCodecContext **out)
{
    AVCodecContext *c = avcodec_alloc_context3(codec);
    if (!c)
        return AVERROR(ENOMEM);
    int ret = avcodec_parameters_to_context(c, par);
    if (ret >= 0 && hw != AV_HWDEVICE_TYPE_NONE)
        ret = attach_hw(c, codec, hw);
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

int mq_decoder_open(const char *prefs, const AVCodecParameters *par, AVRational tb, int threads, AVCodecContext **out,
                    char *failed, size_t failed_size)
{
    *out = NULL;
    failed[0] = '\0';
    char name[64];
    for (const char *s = prefs ? prefs : ""; *s;) {
        s = next_name(s, name, sizeof name);
        const AVCodec *codec;
        if (!name[0] || !applies(name, par->codec_id, &codec))
            continue;
        enum AVHWDeviceType hw = codec ? AV_HWDEVICE_TYPE_NONE : hw_suffix(name, par->codec_id);
        if (hw != AV_HWDEVICE_TYPE_NONE)
            codec = avcodec_find_decoder(par->codec_id);
        if (!codec) {
            note(failed, failed_size, "%s: not in this libavcodec", name);
            continue;
        }
        int ret = try_open(codec, hw, par, tb, threads, out);
        if (ret == 0)
            return MQ_OK;
        note(failed, failed_size, "%s: %s", name, av_err2str(ret));
    }
    const AVCodec *codec = avcodec_find_decoder(par->codec_id);
    if (!codec)
        return MQ_ERR_UNSUPPORTED;
    return try_open(codec, AV_HWDEVICE_TYPE_NONE, par, tb, threads, out) == 0 ? MQ_OK : MQ_ERR_DECODE;
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
