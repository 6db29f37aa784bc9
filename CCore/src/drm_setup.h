#ifndef MQ_DRM_SETUP_H
#define MQ_DRM_SETUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <xf86drmMode.h>

/// DRM/KMS bring-up as a chain of small steps (like kmscube, smaller pieces):
/// open_card → pick connector → pick CRTC → pick mode → dumb buffers → set_crtc, then page
/// flips completed by drmHandleEvent. The CRTC found at start is restored by mq_drm_close.
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

typedef struct mq_drm {
    // set at open, kept across re-setup
    int fd;               // -1 when closed
    char card[64];        // device path
    char want_conn[32];   // configured connector name ("" = first connected)
    int want_w, want_h;   // configured mode size (0 = the connector's preferred mode)
    // the current output (re-chosen by mq_drm_setup after a hotplug)
    uint32_t conn_id, crtc_id;
    char conn_name[32];
    drmModeModeInfo mode;
    int width, height;
    bool connected;       // status at the last setup / check
    mq_drm_fb fb[MQ_DRM_BUFFERS];
    int front;            // buffer on screen, -1 before set_crtc
    int pending;          // buffer queued by a flip not yet completed, -1 none
    double last_vblank;   // monotonic seconds of the last completed flip, 0 unknown
    drmModeCrtc *saved;   // CRTC state before we took it (restored at close)
    uint32_t saved_conn;  // the connector it was restored with
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
/// flip with an event, after waiting for the previous flip (up to 100 ms).
int mq_drm_show(mq_drm *d, int i);

/// Waits (≤ timeout_s) for a pending flip to complete.
int mq_drm_wait_flip(mq_drm *d, double timeout_s);

/// The refresh period of the current mode in seconds (1/60 if unknown).
double mq_drm_period(const mq_drm *d);

/// Reads the connector's status without probing the hardware. Returns 1 when the output should
/// be set up again (connector gone, reconnected, or its preferred mode changed), 0 if nothing
/// changed; `*connected` tells the current status.
int mq_drm_check(mq_drm *d, bool *connected);

#endif
