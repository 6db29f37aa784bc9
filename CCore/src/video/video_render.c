#include "video/video_render.h"

#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/mem.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include "core/log.h"
#include "input/lavf_input.h"
#include "mq_err.h"
#include "mq_player.h"

/* ---- fit ---- */

static mq_rect centred(int w, int h, int dst_w, int dst_h)
{
    w = w < 1 ? 1 : w;
    h = h < 1 ? 1 : h;
    return (mq_rect){(dst_w - w) / 2, (dst_h - h) / 2, w, h};
}

void mq_fit_compute(int fit, int src_w, int src_h, int dst_w, int dst_h, mq_rect *src, mq_rect *dst)
{
    *src = (mq_rect){0, 0, src_w, src_h};
    int64_t sw = src_w, sh = src_h, dw = dst_w, dh = dst_h;
    bool wider = sw * dh > dw * sh; // the picture is wider than the screen
    switch (fit) {
    case MQ_FIT_FILL:
        *dst = (mq_rect){0, 0, dst_w, dst_h};
        return;
    case MQ_FIT_COVER: {
        int cw = wider ? (int)(sh * dw / dh) : src_w, ch = wider ? src_h : (int)(sw * dh / dw);
        *src = (mq_rect){((src_w - cw) / 2) & ~1, ((src_h - ch) / 2) & ~1, cw, ch};
        *dst = (mq_rect){0, 0, dst_w, dst_h};
        return;
    }
    case MQ_FIT_SCALEDOWN:
        if (src_w <= dst_w && src_h <= dst_h) {
            *dst = centred(src_w, src_h, dst_w, dst_h);
            return;
        }
        break;
    default:
        break;
    }
    // contain: the whole picture, aspect kept
    *dst = wider ? centred(dst_w, (int)((sh * dw + sw / 2) / sw), dst_w, dst_h)
                 : centred((int)((sw * dh + sh / 2) / sh), dst_h, dst_w, dst_h);
}

/* ---- rotation ---- */

static mq_rect to_screen(mq_rect r, int rotation, int scr_w, int scr_h)
{
    switch (rotation) {
    case 90: // picture space is scr_h × scr_w
        return (mq_rect){scr_w - r.y - r.h, r.x, r.h, r.w};
    case 180:
        return (mq_rect){scr_w - r.x - r.w, scr_h - r.y - r.h, r.w, r.h};
    case 270:
        return (mq_rect){r.y, scr_h - r.x - r.w, r.h, r.w};
    default:
        return r;
    }
}

/// Copies the w×h XRGB picture `src` rotated into `c` at `r` (r is w×h or h×w).
static void blit_rotated(const uint32_t *src, int w, int h, int rotation, const mq_canvas *c, mq_rect r)
{
    for (int j = 0; j < r.h; j++) {
        uint32_t *d = (uint32_t *)(c->data + (size_t)(r.y + j) * c->stride) + r.x;
        if (rotation == 180) {
            const uint32_t *s = src + (size_t)(h - 1 - j) * w + (w - 1);
            for (int i = 0; i < r.w; i++)
                d[i] = s[-i];
        } else if (rotation == 90) { // d[j][i] = src[h-1-i][j]
            for (int i = 0; i < r.w; i++)
                d[i] = src[(size_t)(h - 1 - i) * w + j];
        } else { // 270: d[j][i] = src[i][w-1-j]
            for (int i = 0; i < r.w; i++)
                d[i] = src[(size_t)i * w + (w - 1 - j)];
        }
    }
}

/* ---- scaler ---- */

void mq_scaler_uninit(mq_scaler *s)
{
    sws_freeContext(s->sws);
    av_freep(&s->tmp);
    *s = (mq_scaler){0};
}

bool mq_full_range(const AVFrame *f)
{
    return f->color_range == AVCOL_RANGE_JPEG || f->format == AV_PIX_FMT_YUVJ420P || f->format == AV_PIX_FMT_YUVJ422P ||
           f->format == AV_PIX_FMT_YUVJ444P;
}

static bool scaler_matches(const mq_scaler *s, const AVFrame *f, int fit, int rotation, const mq_canvas *c)
{
    return s->sws && s->src_w == f->width && s->src_h == f->height && s->src_fmt == f->format &&
           s->src_cs == (int)f->colorspace && s->src_range == (int)f->color_range && s->dst_w == c->width &&
           s->dst_h == c->height && s->fit == fit && s->rotation == rotation;
}

static int scaler_setup(mq_scaler *s, const AVFrame *f, int fit, int rotation, const mq_canvas *c)
{
    mq_scaler_uninit(s);
    bool turned = rotation == 90 || rotation == 270;
    int pw = turned ? c->height : c->width, ph = turned ? c->width : c->height;
    mq_fit_compute(fit, f->width, f->height, pw, ph, &s->src, &s->pic);
    s->screen = to_screen(s->pic, rotation, c->width, c->height);
    s->sws = sws_getContext(s->src.w, s->src.h, f->format, s->pic.w, s->pic.h, AV_PIX_FMT_BGR0, SWS_BICUBIC, NULL, NULL,
                            NULL);
    if (!s->sws)
        return MQ_ERR_UNSUPPORTED;
    // The picture's own matrix and range (BT.709 for HD streams that say so; untagged: BT.601,
    // swscale's default), as the video plane's COLOR_ENCODING / COLOR_RANGE are set.
    const AVPixFmtDescriptor *desc = av_pix_fmt_desc_get(f->format);
    if (desc && !(desc->flags & AV_PIX_FMT_FLAG_RGB)) {
        int cs = f->colorspace == AVCOL_SPC_BT709                                                ? SWS_CS_ITU709
                 : f->colorspace == AVCOL_SPC_BT2020_NCL || f->colorspace == AVCOL_SPC_BT2020_CL ? SWS_CS_BT2020
                                                                                                 : SWS_CS_DEFAULT;
        sws_setColorspaceDetails(s->sws, sws_getCoefficients(cs), mq_full_range(f), sws_getCoefficients(SWS_CS_DEFAULT),
                                 1, 0, 1 << 16, 1 << 16);
    }
    if (rotation) {
        s->tmp_size = s->pic.w * s->pic.h * 4;
        if (!(s->tmp = av_malloc((size_t)s->tmp_size)))
            return MQ_ERR_NO_MEMORY;
    }
    s->src_w = f->width, s->src_h = f->height, s->src_fmt = f->format;
    s->src_cs = f->colorspace, s->src_range = f->color_range;
    s->dst_w = c->width, s->dst_h = c->height, s->fit = fit, s->rotation = rotation;
    mq_log(MQ_LOG_INFO, "fit %dx%d -> %dx%d+%d+%d on %dx%d (rotation %d)", f->width, f->height, s->screen.w,
           s->screen.h, s->screen.x, s->screen.y, c->width, c->height, rotation);
    return MQ_OK;
}

/// Bytes between horizontally adjacent samples of plane `i`.
static int plane_step(const AVPixFmtDescriptor *d, int i)
{
    int step = 1;
    for (int c = 0; c < d->nb_components; c++)
        if (d->comp[c].plane == i && d->comp[c].step > step)
            step = d->comp[c].step;
    return step;
}

/// Source plane pointers moved to the crop's top-left corner.
static void crop_planes(const AVFrame *f, mq_rect src, const uint8_t *planes[4])
{
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(f->format);
    for (int i = 0; i < 4; i++) {
        planes[i] = f->data[i];
        if (!f->data[i] || !d || (src.x == 0 && src.y == 0))
            continue;
        bool chroma = (i == 1 || i == 2) && !(d->flags & AV_PIX_FMT_FLAG_RGB);
        int x = chroma ? src.x >> d->log2_chroma_w : src.x, y = chroma ? src.y >> d->log2_chroma_h : src.y;
        planes[i] += (ptrdiff_t)y * f->linesize[i] + (ptrdiff_t)x * plane_step(d, i);
    }
}

static void clear_around(const mq_canvas *c, mq_rect r)
{
    mq_canvas_fill(c, (mq_rect){0, 0, c->width, r.y}, 0);
    mq_canvas_fill(c, (mq_rect){0, r.y + r.h, c->width, c->height - r.y - r.h}, 0);
    mq_canvas_fill(c, (mq_rect){0, r.y, r.x, r.h}, 0);
    mq_canvas_fill(c, (mq_rect){r.x + r.w, r.y, c->width - r.x - r.w, r.h}, 0);
}

int mq_scaler_draw(mq_scaler *s, const AVFrame *f, int fit, int rotation, const mq_canvas *c)
{
    if (!scaler_matches(s, f, fit, rotation, c)) {
        int ret = scaler_setup(s, f, fit, rotation, c);
        if (ret < 0)
            return ret;
    }
    const uint8_t *planes[4];
    crop_planes(f, s->src, planes);
    clear_around(c, s->screen);
    uint8_t *out[4] = {0};
    int stride[4] = {0};
    if (rotation) {
        out[0] = s->tmp;
        stride[0] = s->pic.w * 4;
    } else {
        out[0] = c->data + (size_t)s->screen.y * c->stride + (size_t)s->screen.x * 4;
        stride[0] = c->stride;
    }
    if (sws_scale(s->sws, planes, f->linesize, 0, s->src.h, out, stride) <= 0)
        return MQ_ERR_VIDEO_DEVICE;
    if (rotation)
        blit_rotated((const uint32_t *)s->tmp, s->pic.w, s->pic.h, rotation, c, s->screen);
    return MQ_OK;
}

void mq_canvas_fill(const mq_canvas *c, mq_rect r, uint32_t xrgb)
{
    if (r.x < 0 || r.y < 0 || r.w <= 0 || r.h <= 0 || r.x + r.w > c->width || r.y + r.h > c->height)
        return;
    for (int j = 0; j < r.h; j++) {
        uint32_t *d = (uint32_t *)(c->data + (size_t)(r.y + j) * c->stride) + r.x;
        if (xrgb == 0) {
            memset(d, 0, (size_t)r.w * 4);
            continue;
        }
        for (int i = 0; i < r.w; i++)
            d[i] = xrgb;
    }
}

/* ---- poster ---- */

static int decode_first(AVFormatContext *fmt, AVCodecContext *dec, AVFrame *frame)
{
    AVPacket *pkt = av_packet_alloc();
    int ret = pkt ? av_read_frame(fmt, pkt) : AVERROR(ENOMEM);
    if (ret >= 0)
        ret = avcodec_send_packet(dec, pkt);
    if (ret >= 0)
        avcodec_send_packet(dec, NULL); // flush: image decoders may hold the picture
    if (ret >= 0)
        ret = avcodec_receive_frame(dec, frame);
    av_packet_free(&pkt);
    return ret;
}

int mq_image_load(const char *path, AVFrame **out)
{
    mq_file_input *in = NULL;
    AVCodecContext *dec = NULL;
    AVFrame *frame = av_frame_alloc();
    int err = frame ? mq_file_input_open(path, MQ_FORMATS_IMAGE, "poster", &in) : MQ_ERR_NO_MEMORY;
    if (err < 0) {
        if (err != MQ_ERR_REFUSED) // (a refusal was logged, with what was refused)
            mq_log(MQ_LOG_ERROR, "poster %s: %s", path,
                   err == MQ_ERR_IO      ? "cannot be read"
                   : err == MQ_ERR_DEMUX ? "not an image"
                                         : mq_err_string(err));
        av_frame_free(&frame);
        return err == MQ_ERR_REFUSED ? err : MQ_ERR_IO;
    }
    AVFormatContext *fmt = in->fmt;
    int ret = avformat_find_stream_info(fmt, NULL);
    const AVCodec *codec = NULL;
    int idx = ret >= 0 ? av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &codec, 0) : ret;
    ret = idx;
    if (ret >= 0 && !(dec = avcodec_alloc_context3(codec)))
        ret = AVERROR(ENOMEM);
    if (ret >= 0)
        ret = avcodec_parameters_to_context(dec, fmt->streams[idx]->codecpar);
    if (ret >= 0)
        ret = avcodec_open2(dec, codec, NULL);
    if (ret >= 0)
        ret = decode_first(fmt, dec, frame);
    avcodec_free_context(&dec);
    mq_file_input_destroy(&in);
    if (ret < 0) {
        mq_log(MQ_LOG_ERROR, "poster %s: %s", path, av_err2str(ret));
        av_frame_free(&frame);
        return MQ_ERR_IO;
    }
    *out = frame;
    return MQ_OK;
}
