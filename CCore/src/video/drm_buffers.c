#include "video/drm_setup.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <drm_fourcc.h>
#include <libavutil/hwcontext_drm.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixfmt.h>
#include <xf86drm.h>

#include "core/log.h"
#include "mq_err.h"
#include "video/drm_internal.h"

/// DRM buffers (drm_setup.h): dumb buffers, mapped, with their framebuffers (XRGB8888 for the
/// primary plane, whole 4:2:0 pictures for the video plane), and decoders' dma-buf pictures
/// imported as framebuffers.

/* ---- dumb buffers ---- */

void mq_drm_fb_destroy(int fd, mq_drm_fb *fb)
{
    if (fb->map)
        munmap(fb->map, fb->size);
    if (fb->fb_id)
        drmModeRmFB(fd, fb->fb_id);
    if (fb->handle) {
        struct drm_mode_destroy_dumb dd = {.handle = fb->handle};
        drmIoctl(fd, DRM_IOCTL_MODE_DESTROY_DUMB, &dd);
    }
    *fb = (mq_drm_fb){0};
}

int mq_drm_fb_create(int fd, int w, int h, mq_drm_fb *fb)
{
    struct drm_mode_create_dumb cd = {.width = (uint32_t)w, .height = (uint32_t)h, .bpp = 32};
    CHECK_DRM(drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &cd), "CREATE_DUMB");
    fb->handle = cd.handle;
    fb->pitch = cd.pitch;
    fb->size = cd.size;
    uint32_t handles[4] = {cd.handle}, pitches[4] = {cd.pitch}, offsets[4] = {0};
    CHECK_DRM(
        drmModeAddFB2(fd, (uint32_t)w, (uint32_t)h, DRM_FORMAT_XRGB8888, handles, pitches, offsets, &fb->fb_id, 0),
        "AddFB2");
    struct drm_mode_map_dumb md = {.handle = cd.handle};
    CHECK_DRM(drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &md), "MAP_DUMB");
    void *map = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)md.offset);
    CHECK_DRM(map == MAP_FAILED ? -1 : 0, "mmap");
    fb->map = map;
    memset(fb->map, 0, fb->size);
    return MQ_OK;
}

/// A dumb buffer for a whole 4:2:0 picture: 8 bits per sample, 1.5 rows of luma pitch per row.
static int yuv_fb_create(int fd, uint32_t fourcc, int w, int h, mq_drm_yuv_fb *v)
{
    struct drm_mode_create_dumb cd = {.width = (uint32_t)w, .height = (uint32_t)(h + h / 2), .bpp = 8};
    CHECK_DRM(drmIoctl(fd, DRM_IOCTL_MODE_CREATE_DUMB, &cd), "CREATE_DUMB (video plane)");
    mq_drm_fb *fb = &v->fb;
    fb->handle = cd.handle;
    fb->pitch = cd.pitch;
    fb->size = cd.size;
    uint32_t p = cd.pitch, luma = p * (uint32_t)h;
    uint32_t handles[4] = {cd.handle, cd.handle}, pitches[4] = {p}, offsets[4] = {0, luma};
    if (fourcc == DRM_FORMAT_NV12) { // Y, then CbCr interleaved at the same pitch
        pitches[1] = p;
    } else { // Y, then Cb and Cr at half the pitch
        handles[2] = cd.handle;
        pitches[1] = pitches[2] = p / 2;
        offsets[2] = luma + p / 2 * (uint32_t)(h / 2);
    }
    memcpy(v->offsets, offsets, sizeof v->offsets);
    memcpy(v->pitches, pitches, sizeof v->pitches);
    CHECK_DRM(drmModeAddFB2(fd, (uint32_t)w, (uint32_t)h, fourcc, handles, pitches, offsets, &fb->fb_id, 0),
              "AddFB2 (video plane)");
    struct drm_mode_map_dumb md = {.handle = cd.handle};
    CHECK_DRM(drmIoctl(fd, DRM_IOCTL_MODE_MAP_DUMB, &md), "MAP_DUMB (video plane)");
    void *map = mmap(NULL, cd.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)md.offset);
    CHECK_DRM(map == MAP_FAILED ? -1 : 0, "mmap (video plane)");
    fb->map = map;
    v->fourcc = fourcc;
    v->width = w;
    v->height = h;
    return MQ_OK;
}

/// Frees a video slot: its dumb buffer, or its imported framebuffer, handles and frame.
void mq_drm_yuv_fb_destroy(int fd, mq_drm_yuv_fb *v)
{
    if (v->prime || v->n_prime_handles) {
        if (v->fb.fb_id)
            drmModeRmFB(fd, v->fb.fb_id);
        for (int i = 0; i < v->n_prime_handles; i++)
            drmCloseBufferHandle(fd, v->prime_handles[i]);
        av_frame_free(&v->prime);
    } else {
        mq_drm_fb_destroy(fd, &v->fb);
    }
    *v = (mq_drm_yuv_fb){0};
}

/// A video slot neither on the plane nor queued; -1 when all are (cannot happen with three).
static int video_free_slot(const mq_drm *d)
{
    for (int i = 0; i < MQ_DRM_BUFFERS; i++)
        if (i != d->vfront && i != d->vpending)
            return i;
    return -1;
}

int mq_drm_video_import(mq_drm *d, const AVFrame *f)
{
    const AVDRMFrameDescriptor *desc = (const AVDRMFrameDescriptor *)f->data[0];
    int i = video_free_slot(d);
    if (i < 0 || f->format != AV_PIX_FMT_DRM_PRIME || !desc || desc->nb_layers != 1)
        return -1;
    mq_drm_yuv_fb *v = &d->vfb[i];
    mq_drm_yuv_fb_destroy(d->fd, v);
    const AVDRMLayerDescriptor *l = &desc->layers[0];
    uint32_t obj[AV_DRM_MAX_PLANES] = {0}, handles[4] = {0}, pitches[4] = {0}, offsets[4] = {0};
    uint64_t mods[4] = {0};
    bool with_mods = false;
    for (int o = 0; o < desc->nb_objects && o < AV_DRM_MAX_PLANES; o++) {
        if (drmPrimeFDToHandle(d->fd, desc->objects[o].fd, &obj[o]) < 0) {
            mq_log(MQ_LOG_WARN, "drm: importing a picture's dma-buf failed: %s", strerror(errno));
            mq_drm_yuv_fb_destroy(d->fd, v);
            return -1;
        }
        bool seen = false; // two objects may be one buffer: one handle
        for (int k = 0; k < v->n_prime_handles; k++)
            seen |= v->prime_handles[k] == obj[o];
        if (!seen && v->n_prime_handles < 4)
            v->prime_handles[v->n_prime_handles++] = obj[o];
    }
    for (int k = 0; k < l->nb_planes && k < 4; k++) {
        const AVDRMPlaneDescriptor *pl = &l->planes[k];
        handles[k] = obj[pl->object_index];
        pitches[k] = (uint32_t)pl->pitch;
        offsets[k] = (uint32_t)pl->offset;
        mods[k] = desc->objects[pl->object_index].format_modifier;
        with_mods |= mods[k] != DRM_FORMAT_MOD_INVALID;
    }
    bool linear = true; // a card without modifiers takes linear buffers only without the flag
    for (int k = 0; k < l->nb_planes && k < 4; k++)
        linear &= mods[k] == DRM_FORMAT_MOD_LINEAR || mods[k] == DRM_FORMAT_MOD_INVALID;
    int ret =
        drmModeAddFB2WithModifiers(d->fd, (uint32_t)f->width, (uint32_t)f->height, l->format, handles, pitches, offsets,
                                   with_mods ? mods : NULL, &v->fb.fb_id, with_mods ? DRM_MODE_FB_MODIFIERS : 0);
    if (ret < 0 && with_mods && linear)
        ret = drmModeAddFB2(d->fd, (uint32_t)f->width, (uint32_t)f->height, l->format, handles, pitches, offsets,
                            &v->fb.fb_id, 0);
    if (ret < 0) {
        mq_log(MQ_LOG_WARN, "drm: a framebuffer for an imported %dx%d picture failed: %s", f->width, f->height,
               strerror(errno));
        mq_drm_yuv_fb_destroy(d->fd, v);
        return -1;
    }
    if (!(v->prime = av_frame_clone(f))) {
        mq_drm_yuv_fb_destroy(d->fd, v);
        return -1;
    }
    v->fourcc = l->format;
    v->width = f->width;
    v->height = f->height;
    return i;
}

int mq_drm_video_back(mq_drm *d, int pix_fmt, int w, int h)
{
    int i = video_free_slot(d);
    uint32_t fourcc = mq_drm_fourcc_of(pix_fmt);
    if (i < 0 || !fourcc)
        return -1;
    mq_drm_yuv_fb *v = &d->vfb[i];
    if (v->fb.map && v->fourcc == fourcc && v->width == w && v->height == h)
        return i;
    mq_drm_yuv_fb_destroy(d->fd, v);
    if (yuv_fb_create(d->fd, fourcc, w, h, v) < 0) {
        mq_drm_yuv_fb_destroy(d->fd, v);
        return -1;
    }
    return i;
}

void mq_drm_video_copy(mq_drm *d, int vi, const AVFrame *f)
{
    mq_drm_yuv_fb *v = &d->vfb[vi];
    int planes = v->fourcc == DRM_FORMAT_NV12 ? 2 : 3;
    for (int i = 0; i < planes; i++) {
        int rows = i ? f->height / 2 : f->height;
        int bytes = i == 0 || planes == 2 ? f->width : f->width / 2;
        av_image_copy_plane(v->fb.map + v->offsets[i], (int)v->pitches[i], f->data[i], f->linesize[i], bytes, rows);
    }
}
