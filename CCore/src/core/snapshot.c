#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/frame.h>
#include <libavutil/hwcontext.h>
#include <libswscale/swscale.h>

#include "core/player_internal.h"
#include "mq_err.h"

/// Screenshots: the picture the video thread presented last (kept by reference while
/// keep_snap is set, see video_thread.c), converted to RGB and encoded as a PNG on the caller's
/// thread with libswscale and libavcodec's PNG encoder.

int mq_player_keep_last_picture(mq_player *p, bool keep)
{
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    atomic_store(&p->keep_snap, keep);
    if (!keep) {
        pthread_mutex_lock(&p->snap_lock);
        av_frame_unref(p->snap);
        pthread_mutex_unlock(&p->snap_lock);
    }
    return MQ_OK;
}

void mq_free(void *ptr)
{
    free(ptr);
}

/// `src` (any software pixel format) as an RGB24 picture of `w`×`h`, in the picture's own
/// colour matrix and range.
static int to_rgb(const AVFrame *src, int w, int h, AVFrame *rgb)
{
    rgb->format = AV_PIX_FMT_RGB24;
    rgb->width = w;
    rgb->height = h;
    if (av_frame_get_buffer(rgb, 0) < 0)
        return MQ_ERR_NO_MEMORY;
    struct SwsContext *sws = sws_getContext(src->width, src->height, src->format, w, h, AV_PIX_FMT_RGB24,
                                            SWS_BICUBIC | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL, NULL);
    if (!sws)
        return MQ_ERR_UNSUPPORTED;
    int space = src->colorspace == AVCOL_SPC_UNSPECIFIED ? (src->height >= 720 ? SWS_CS_ITU709 : SWS_CS_ITU601)
                                                         : src->colorspace;
    const int *coefficients = sws_getCoefficients(space);
    int full = src->color_range == AVCOL_RANGE_JPEG;
    sws_setColorspaceDetails(sws, coefficients, full, sws_getCoefficients(SWS_CS_DEFAULT), 1, 0, 1 << 16, 1 << 16);
    int ret =
        sws_scale(sws, (const uint8_t *const *)src->data, src->linesize, 0, src->height, rgb->data, rgb->linesize);
    sws_freeContext(sws);
    return ret == h ? MQ_OK : MQ_ERR_UNSUPPORTED;
}

static int encode_png(const AVFrame *rgb, uint8_t **png, size_t *size)
{
    const AVCodec *codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
    if (!codec)
        return MQ_ERR_UNSUPPORTED;
    AVCodecContext *ctx = avcodec_alloc_context3(codec);
    AVPacket *pkt = av_packet_alloc();
    int ret = MQ_ERR_NO_MEMORY;
    if (!ctx || !pkt)
        goto done;
    ctx->width = rgb->width;
    ctx->height = rgb->height;
    ctx->pix_fmt = AV_PIX_FMT_RGB24;
    ctx->time_base = (AVRational){1, 25};
    ret = MQ_ERR_UNSUPPORTED;
    if (avcodec_open2(ctx, codec, NULL) < 0 || avcodec_send_frame(ctx, rgb) < 0 || avcodec_receive_packet(ctx, pkt) < 0)
        goto done;
    ret = MQ_ERR_NO_MEMORY;
    if (!(*png = malloc((size_t)pkt->size)))
        goto done;
    memcpy(*png, pkt->data, (size_t)pkt->size);
    *size = (size_t)pkt->size;
    ret = MQ_OK;
done:
    av_packet_free(&pkt);
    avcodec_free_context(&ctx);
    return ret;
}

int mq_player_snapshot_png(mq_player *p, int32_t max_width, uint8_t **png, size_t *size, double *media_pts,
                           int32_t *width, int32_t *height)
{
    if (!p || !png || !size || !media_pts || !width || !height || max_width < 0)
        return MQ_ERR_INVALID_ARGUMENT;
    *png = NULL;
    *size = 0;
    if (!atomic_load(&p->keep_snap))
        return MQ_ERR_STATE;
    AVFrame *f = av_frame_alloc(), *sw = av_frame_alloc(), *rgb = av_frame_alloc();
    int ret = MQ_ERR_NO_MEMORY;
    if (!f || !sw || !rgb)
        goto done;
    pthread_mutex_lock(&p->snap_lock);
    int ref = p->snap->buf[0] ? av_frame_ref(f, p->snap) : AVERROR(ENOENT);
    *media_pts = p->snap_pts;
    pthread_mutex_unlock(&p->snap_lock);
    if (ref == AVERROR(ENOENT)) {
        ret = MQ_ERR_NOT_FOUND;
        goto done;
    }
    if (ref < 0)
        goto done;
    const AVFrame *src = f;
    if (f->hw_frames_ctx) { // a decoder's surface: read back to memory first
        ret = MQ_ERR_UNSUPPORTED;
        if (av_hwframe_transfer_data(sw, f, 0) < 0)
            goto done;
        src = sw;
    }
    int w = src->width, h = src->height;
    if (max_width > 0 && max_width < w) {
        h = (int)((int64_t)h * max_width / w) & ~1;
        w = max_width & ~1;
    }
    ret = MQ_ERR_INVALID_ARGUMENT;
    if (w < 2 || h < 2)
        goto done;
    if ((ret = to_rgb(src, w, h, rgb)) < 0 || (ret = encode_png(rgb, png, size)) < 0)
        goto done;
    *width = w;
    *height = h;
done:
    av_frame_free(&f);
    av_frame_free(&sw);
    av_frame_free(&rgb);
    return ret;
}
