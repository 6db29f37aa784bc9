#include "video/drm_setup.h"

#include <errno.h>
#include <string.h>

#include <drm_fourcc.h>
#include <libavutil/hwcontext_drm.h>
#include <libavutil/pixfmt.h>
#include <xf86drm.h>

#include "core/log.h"
#include "mq_err.h"
#include "video/drm_internal.h"

/// The video plane (drm_setup.h): an overlay plane on our CRTC that takes 4:2:0 pictures, the
/// formats it lists, and the atomic commits that show a picture on it.

/* ---- the video plane ---- */

static const char *const plane_prop_names[MQ_PLANE_PROPS] = {
    "FB_ID",  "CRTC_ID", "SRC_X",  "SRC_Y",  "SRC_W",          "SRC_H",
    "CRTC_X", "CRTC_Y",  "CRTC_W", "CRTC_H", "COLOR_ENCODING", "COLOR_RANGE",
};

static uint64_t enum_value(const drmModePropertyRes *pr, const char *name)
{
    for (int i = 0; i < pr->count_enums; i++)
        if (strcmp(pr->enums[i].name, name) == 0)
            return pr->enums[i].value;
    return UINT64_MAX;
}

/// Reads a plane's type (DRM_PLANE_TYPE_*, -1 unknown) and, into `pl`, its property ids.
static int plane_props(int fd, uint32_t id, mq_drm_plane *pl)
{
    drmModeObjectProperties *props = drmModeObjectGetProperties(fd, id, DRM_MODE_OBJECT_PLANE);
    int type = -1;
    for (uint32_t i = 0; props && i < props->count_props; i++) {
        drmModePropertyRes *pr = drmModeGetProperty(fd, props->props[i]);
        if (!pr)
            continue;
        if (strcmp(pr->name, "type") == 0)
            type = (int)props->prop_values[i];
        for (int k = 0; k < MQ_PLANE_PROPS; k++)
            if (strcmp(pr->name, plane_prop_names[k]) == 0)
                pl->prop[k] = pr->prop_id;
        if (strcmp(pr->name, "COLOR_ENCODING") == 0) {
            pl->enc_601 = enum_value(pr, "ITU-R BT.601 YCbCr");
            pl->enc_709 = enum_value(pr, "ITU-R BT.709 YCbCr");
            pl->enc_2020 = enum_value(pr, "ITU-R BT.2020 YCbCr");
        } else if (strcmp(pr->name, "COLOR_RANGE") == 0) {
            pl->range_limited = enum_value(pr, "YCbCr limited range");
            pl->range_full = enum_value(pr, "YCbCr full range");
        }
        drmModeFreeProperty(pr);
    }
    drmModeFreeObjectProperties(props);
    return type;
}

/// Finds an overlay plane on our CRTC that takes YUV420 or NV12, and the CRTC's primary plane;
/// only then asks for atomic commits. None found (or no atomic): d->plane.id stays 0.
void mq_drm_find_video_plane(mq_drm *d)
{
    d->plane = (mq_drm_plane){0};
    drmModeRes *res = drmModeGetResources(d->fd);
    int crtc_index = -1;
    for (int i = 0; res && i < res->count_crtcs; i++)
        if (res->crtcs[i] == d->crtc_id)
            crtc_index = i;
    drmModeFreeResources(res);
    // The plane properties an atomic commit sets (FB_ID, SRC_*, CRTC_*) are shown to atomic
    // clients only: ask for atomic first, and give it back when no plane is found.
    if (crtc_index < 0 || drmSetClientCap(d->fd, DRM_CLIENT_CAP_UNIVERSAL_PLANES, 1) < 0)
        return;
    if (drmSetClientCap(d->fd, DRM_CLIENT_CAP_ATOMIC, 1) < 0) {
        mq_log(MQ_LOG_DEBUG, "drm: no atomic commits: pictures are converted for the primary plane");
        return;
    }
    drmModePlaneRes *planes = drmModeGetPlaneResources(d->fd);
    mq_drm_plane found = {0}, primary = {0};
    for (uint32_t i = 0; planes && i < planes->count_planes; i++) {
        drmModePlane *pl = drmModeGetPlane(d->fd, planes->planes[i]);
        if (pl && (pl->possible_crtcs & (1u << crtc_index))) {
            mq_drm_plane cand = {.enc_601 = UINT64_MAX,
                                 .enc_709 = UINT64_MAX,
                                 .enc_2020 = UINT64_MAX,
                                 .range_limited = UINT64_MAX,
                                 .range_full = UINT64_MAX};
            int type = plane_props(d->fd, pl->plane_id, &cand);
            for (uint32_t f = 0; f < pl->count_formats; f++) {
                cand.yuv420 |= pl->formats[f] == DRM_FORMAT_YUV420;
                cand.nv12 |= pl->formats[f] == DRM_FORMAT_NV12;
                if (cand.n_formats < (int)(sizeof cand.formats / sizeof cand.formats[0]))
                    cand.formats[cand.n_formats++] = pl->formats[f];
            }
            if (type == DRM_PLANE_TYPE_PRIMARY && !primary.id) {
                primary = cand;
                primary.id = pl->plane_id;
            } else if (type == DRM_PLANE_TYPE_OVERLAY && !found.id && (cand.yuv420 || cand.nv12)) {
                found = cand;
                found.id = pl->plane_id;
            }
        }
        drmModeFreePlane(pl);
    }
    drmModeFreePlaneResources(planes);
    bool complete = true;
    for (int k = 0; k <= MQ_PLANE_CRTC_H; k++)
        complete &= found.prop[k] != 0;
    if (!found.id || !primary.id || !primary.prop[MQ_PLANE_FB_ID] || !complete) {
        mq_log(MQ_LOG_DEBUG, "drm: no overlay plane takes YUV420 or NV12 on crtc %u: pictures are converted",
               d->crtc_id);
        drmSetClientCap(d->fd, DRM_CLIENT_CAP_ATOMIC, 0);
        return;
    }
    found.primary_id = primary.id;
    found.primary_fb_prop = primary.prop[MQ_PLANE_FB_ID];
    d->plane = found;
    mq_log(MQ_LOG_INFO, "drm: video plane %u (%s%s%s; colour encoding %s, range %s)", found.id,
           found.yuv420 ? "YUV420" : "", found.yuv420 && found.nv12 ? ", " : "", found.nv12 ? "NV12" : "",
           found.prop[MQ_PLANE_COLOR_ENCODING] ? "settable" : "fixed",
           found.prop[MQ_PLANE_COLOR_RANGE] ? "settable" : "fixed");
}

uint32_t mq_drm_fourcc_of(int pix_fmt)
{
    switch (pix_fmt) {
    case AV_PIX_FMT_YUV420P:
    case AV_PIX_FMT_YUVJ420P:
        return DRM_FORMAT_YUV420;
    case AV_PIX_FMT_NV12:
        return DRM_FORMAT_NV12;
    default:
        return 0;
    }
}

static bool plane_lists(const mq_drm_plane *pl, uint32_t fourcc)
{
    for (int i = 0; i < pl->n_formats; i++)
        if (pl->formats[i] == fourcc)
            return true;
    return false;
}

bool mq_drm_plane_takes(const mq_drm *d, const AVFrame *f)
{
    if (!d->plane.id || f->width < 2 || f->height < 2)
        return false;
    if (f->format == AV_PIX_FMT_DRM_PRIME) {
        const AVDRMFrameDescriptor *desc = (const AVDRMFrameDescriptor *)f->data[0];
        return desc && desc->nb_layers == 1 && desc->nb_objects >= 1 && plane_lists(&d->plane, desc->layers[0].format);
    }
    uint32_t fourcc = mq_drm_fourcc_of(f->format);
    return f->width % 2 == 0 && f->height % 2 == 0 &&
           ((fourcc == DRM_FORMAT_YUV420 && d->plane.yuv420) || (fourcc == DRM_FORMAT_NV12 && d->plane.nv12));
}

static uint64_t encoding_of(const mq_drm_plane *pl, int colorspace)
{
    switch (colorspace) {
    case AVCOL_SPC_BT709:
        return pl->enc_709;
    case AVCOL_SPC_BT2020_NCL:
    case AVCOL_SPC_BT2020_CL:
        return pl->enc_2020 != UINT64_MAX ? pl->enc_2020 : pl->enc_709;
    default: // BT.601 (SMPTE 170M, BT.470BG) and untagged pictures, as swscale reads them
        return pl->enc_601;
    }
}

int mq_drm_show_video(mq_drm *d, int vi, const mq_drm_placement *at, int primary, bool test_only)
{
    const mq_drm_plane *pl = &d->plane;
    if (!pl->id || d->front < 0 || vi < 0 || !d->vfb[vi].fb.fb_id)
        return MQ_ERR_UNSUPPORTED; // no plane, or the CRTC not set up yet: the software path does it
    if (!test_only && d->flipping)
        mq_drm_wait_flip(d, 0.1);
    uint64_t v[MQ_PLANE_PROPS] = {
        [MQ_PLANE_FB_ID] = d->vfb[vi].fb.fb_id,
        [MQ_PLANE_CRTC_ID] = d->crtc_id,
        [MQ_PLANE_SRC_X] = (uint64_t)at->src_x << 16,
        [MQ_PLANE_SRC_Y] = (uint64_t)at->src_y << 16,
        [MQ_PLANE_SRC_W] = (uint64_t)at->src_w << 16,
        [MQ_PLANE_SRC_H] = (uint64_t)at->src_h << 16,
        [MQ_PLANE_CRTC_X] = (uint64_t)at->dst_x,
        [MQ_PLANE_CRTC_Y] = (uint64_t)at->dst_y,
        [MQ_PLANE_CRTC_W] = (uint64_t)at->dst_w,
        [MQ_PLANE_CRTC_H] = (uint64_t)at->dst_h,
        [MQ_PLANE_COLOR_ENCODING] = encoding_of(pl, at->colorspace),
        [MQ_PLANE_COLOR_RANGE] = at->range == AVCOL_RANGE_JPEG ? pl->range_full : pl->range_limited,
    };
    drmModeAtomicReq *req = drmModeAtomicAlloc();
    int ret = req ? 0 : -1;
    for (int k = 0; k < MQ_PLANE_PROPS && ret >= 0; k++)
        if (pl->prop[k] && v[k] != UINT64_MAX)
            ret = drmModeAtomicAddProperty(req, pl->id, pl->prop[k], v[k]);
    if (ret >= 0 && primary >= 0)
        ret = drmModeAtomicAddProperty(req, pl->primary_id, pl->primary_fb_prop, d->fb[primary].fb_id);
    uint32_t flags = test_only ? DRM_MODE_ATOMIC_TEST_ONLY : DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT;
    if (ret >= 0)
        ret = mq_drm_atomic_commit(d, req, flags);
    int err = errno;
    drmModeAtomicFree(req);
    if (ret < 0) {
        if (err == EINVAL || err == ERANGE || err == ENOSPC || err == EOPNOTSUPP)
            return MQ_ERR_UNSUPPORTED;
        mq_log(MQ_LOG_ERROR, "drm: video plane commit failed: %s", strerror(err));
        return MQ_ERR_VIDEO_DEVICE;
    }
    if (!test_only) {
        d->vpending = vi;
        d->pending = primary;
        d->flipping = true;
    }
    return MQ_OK;
}
