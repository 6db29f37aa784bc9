#ifndef MQ_DRM_SETUP_H
#define MQ_DRM_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <libavutil/frame.h>
#include <xf86drmMode.h>

/// DRM/KMS bring-up as a chain of small steps (like kmscube, smaller pieces):
/// open_card → pick connector → pick CRTC → pick mode → dumb buffers → set_crtc, then page
/// flips completed by drmHandleEvent. The CRTC found at start is restored by mq_drm_close.
///
/// Pictures in 4:2:0 YCbCr (yuv420p, nv12) can go to an overlay plane as they are, without
/// conversion: the video plane (found when the driver takes atomic commits and has an overlay
/// plane on our CRTC that lists YUV420 or NV12), with dumb buffers in that layout and the
/// display engine scaling where it can. The primary plane then shows black around it.
///
/// Threading: created on the controlling thread (player create), then used by the video thread
/// only; closed after the video thread stopped. No locks.

#define MQ_DRM_BUFFERS 3

/// One XRGB8888 dumb buffer, mapped.
typedef struct mq_drm_fb {
    uint32_t handle, fb_id, pitch;
    uint64_t size;
    uint8_t *map; // NULL when not allocated
} mq_drm_fb;

/// A picture for the video plane: either one dumb buffer holding a whole 4:2:0 picture (planes
/// at offsets, filled by a copy), or a decoder's dma-buf picture imported as it is (`prime`
/// holds the decoder's frame until the plane no longer shows it).
typedef struct mq_drm_yuv_fb {
    mq_drm_fb fb;    // handle, fb_id, pitch (of the luma plane), size, map (dumb buffers)
    uint32_t fourcc; // DRM_FORMAT_YUV420, DRM_FORMAT_NV12, or an imported layer's format
    int width, height;
    uint32_t offsets[3], pitches[3];
    AVFrame *prime; // imported: the AV_PIX_FMT_DRM_PRIME frame, NULL for a dumb buffer
    uint32_t prime_handles[4];
    int n_prime_handles; // GEM handles of the imported dma-bufs (closed on release)
    bool shown;          // has been on the plane (an imported one is released once replaced)
} mq_drm_yuv_fb;

enum {
    MQ_PLANE_FB_ID,
    MQ_PLANE_CRTC_ID,
    MQ_PLANE_SRC_X,
    MQ_PLANE_SRC_Y,
    MQ_PLANE_SRC_W,
    MQ_PLANE_SRC_H,
    MQ_PLANE_CRTC_X,
    MQ_PLANE_CRTC_Y,
    MQ_PLANE_CRTC_W,
    MQ_PLANE_CRTC_H,
    MQ_PLANE_COLOR_ENCODING,
    MQ_PLANE_COLOR_RANGE,
    MQ_PLANE_PROPS
};

/// An overlay plane that takes pictures in YCbCr. id 0: none.
typedef struct mq_drm_plane {
    uint32_t id, primary_id;       // the overlay, and the CRTC's primary plane
    uint32_t prop[MQ_PLANE_PROPS]; // property ids (0: the plane has none)
    uint32_t primary_fb_prop;      // the primary plane's FB_ID
    bool yuv420, nv12;             // layouts it takes
    uint32_t formats[64];          // every format it lists (for imported pictures)
    int n_formats;
    uint64_t enc_601, enc_709, enc_2020; // COLOR_ENCODING values (UINT64_MAX: not offered)
    uint64_t range_limited, range_full;  // COLOR_RANGE values (UINT64_MAX: not offered)
} mq_drm_plane;

/// Where and how a picture goes on the video plane.
typedef struct mq_drm_placement {
    int src_x, src_y, src_w, src_h; // the part of the picture shown (pixels)
    int dst_x, dst_y, dst_w, dst_h; // where on the screen
    int colorspace, range;          // AVColorSpace, AVColorRange of the picture
} mq_drm_placement;

typedef struct mq_drm {
    // set at open, kept across re-setup
    int fd;             // -1 when closed
    char card[64];      // device path
    char want_conn[32]; // configured connector name ("" = first connected)
    int want_w, want_h; // configured mode size (0 = the connector's preferred mode)
    // the current output (re-chosen by mq_drm_setup after a hotplug)
    uint32_t conn_id, crtc_id;
    char conn_name[32];
    drmModeModeInfo mode;
    int width, height;
    bool connected; // status at the last setup / check
    mq_drm_fb fb[MQ_DRM_BUFFERS];
    int front;          // buffer on screen, -1 before set_crtc
    int pending;        // buffer queued by a flip not yet completed, -1 none
    double last_vblank; // monotonic seconds of the last completed flip, 0 unknown
    mq_drm_plane plane; // the video plane, id 0 when there is none
    mq_drm_yuv_fb vfb[MQ_DRM_BUFFERS];
    int vfront;          // video buffer on the plane, -1 when the plane is off
    int vpending;        // video buffer queued with the pending commit, -1 none, -2: plane off
    bool flipping;       // a flip or commit with an event is pending
    drmModeCrtc *saved;  // CRTC state before we took it (restored at close)
    uint32_t saved_conn; // the connector it was restored with
} mq_drm;

/// Opens `card` ("0", "card1", "/dev/dri/card1"; NULL: the first card with a connected
/// connector) and sets up the output on `connector` (a name such as "HDMI-A-1", "Virtual-1",
/// a connector id, or NULL for the first connected one) in `mode` ("1280x720", NULL: the
/// preferred mode). The screen is not touched until mq_drm_show.
int mq_drm_open(mq_drm *d, const char *card, const char *connector, const char *mode);

/// (Re)chooses connector, CRTC and mode and (re)allocates the buffers at the mode's size.
int mq_drm_setup(mq_drm *d);

/// Releases the buffers (the fd stays open).
void mq_drm_teardown(mq_drm *d);

/// Restores the saved CRTC, frees everything and closes the card. Safe on a zeroed or
/// partially opened `d` whose fd is -1 or valid.
void mq_drm_close(mq_drm *d);

/// Index of a buffer neither on screen nor queued (for drawing the next picture).
int mq_drm_back(const mq_drm *d);

/// Puts buffer `i` on screen: drmModeSetCrtc the first time (or after a setup), else a page
/// flip with an event, after waiting for the previous flip (up to 100 ms). A video plane that
/// was on is switched off in the same commit.
int mq_drm_show(mq_drm *d, int i);

/// Whether the video plane takes picture `f`: yuv420p / yuvj420p / nv12 in memory (even sizes),
/// or an AV_PIX_FMT_DRM_PRIME picture of one layer in a format the plane lists.
bool mq_drm_plane_takes(const mq_drm *d, const AVFrame *f);

/// Imports AV_PIX_FMT_DRM_PRIME picture `f` into a free video slot, without a copy: each
/// dma-buf to a GEM handle (drmPrimeFDToHandle), a framebuffer with the layer's format, pitches,
/// offsets and modifier (drmModeAddFB2WithModifiers); a reference to `f` is kept while the plane
/// may show it. Returns the slot, or -1 (logged) when the card cannot import it.
int mq_drm_video_import(mq_drm *d, const AVFrame *f);

/// A video buffer neither on the plane nor queued, (re)allocated for `pix_fmt` at `w`×`h`;
/// -1 (error logged) when it cannot be.
int mq_drm_video_back(mq_drm *d, int pix_fmt, int w, int h);

/// Copies picture `f` (the format and size video buffer `vi` was made for) into it, plane by
/// plane: no conversion.
void mq_drm_video_copy(mq_drm *d, int vi, const AVFrame *f);

/// Shows video buffer `vi` on the video plane at `at`, and primary buffer `primary` (≥ 0) in
/// the same atomic commit (entering the plane: black around the picture); `test_only` asks the
/// driver whether it could (no change on screen). MQ_ERR_UNSUPPORTED when the driver refuses
/// the placement (e.g. it cannot scale): draw in software instead.
int mq_drm_show_video(mq_drm *d, int vi, const mq_drm_placement *at, int primary, bool test_only);

/// Whether a flip or commit is still pending.
static inline bool mq_drm_flipping(const mq_drm *d)
{
    return d->flipping;
}

/// Waits (≤ timeout_s) for a pending flip to complete.
int mq_drm_wait_flip(mq_drm *d, double timeout_s);

/// A commit refused as busy (EBUSY) after mq_drm_wait_flip gave up on a flip that the kernel
/// still holds (a starved or slow vblank): waits (≤ timeout_s) for that late event and takes it,
/// so the commit can be made again. MQ_ERR_VIDEO_DEVICE when none came.
int mq_drm_drain_late_flip(mq_drm *d, double timeout_s);

/// The refresh period of the current mode in seconds (1/60 if unknown).
double mq_drm_period(const mq_drm *d);

/// Reads the connector's status without probing the hardware. Returns 1 when the output should
/// be set up again (connector gone, reconnected, or its preferred mode changed), 0 if nothing
/// changed; `*connected` tells the current status.
int mq_drm_check(mq_drm *d, bool *connected);

#endif
