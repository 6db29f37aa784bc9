#ifndef MQ_DRM_INTERNAL_H
#define MQ_DRM_INTERNAL_H

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "core/log.h"
#include "mq_err.h"
#include "video/drm_setup.h"

/// What the DRM files share: drm_modeset.c (card, connector, CRTC, mode, flips, hotplug),
/// drm_buffers.c (dumb buffers, mapping, framebuffers) and drm_plane.c (the video plane and its
/// formats). Other files include drm_setup.h.

#define CHECK_DRM(expr, what)                                                                                          \
    do {                                                                                                               \
        if ((expr) < 0) {                                                                                              \
            mq_log(MQ_LOG_ERROR, "drm: %s failed: %s", what, strerror(errno));                                         \
            return MQ_ERR_VIDEO_DEVICE;                                                                                \
        }                                                                                                              \
    } while (0)

/// drm_buffers.c
void mq_drm_fb_destroy(int fd, mq_drm_fb *fb);
int mq_drm_fb_create(int fd, int w, int h, mq_drm_fb *fb);
void mq_drm_yuv_fb_destroy(int fd, mq_drm_yuv_fb *v);
/// drm_plane.c
void mq_drm_find_video_plane(mq_drm *d);
/// drmModeAtomicCommit; a non-blocking commit refused as busy (EBUSY: a flip given up on by
/// mq_drm_wait_flip still held by the kernel) is made again once that flip's late event is
/// taken (mq_drm_drain_late_flip, ≤ 1 s). Returns its result, errno as the last try left it.
int mq_drm_atomic_commit(mq_drm *d, drmModeAtomicReq *req, uint32_t flags);
uint32_t mq_drm_fourcc_of(int pix_fmt);

#endif
