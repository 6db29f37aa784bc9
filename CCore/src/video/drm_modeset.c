#include "video/drm_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <xf86drm.h>

#include "core/clock.h"
#include "core/log.h"
#include "mq_err.h"
#include "mq_player.h"
#include "video/drm_internal.h"

/// DRM/KMS bring-up (drm_setup.h): the card, the connector, CRTC and mode chosen, set up and
/// torn down again, page flips, and the connector's status after a hotplug. The buffers are in
/// drm_buffers.c, the video plane in drm_plane.c.

/* ---- card ---- */

static int open_path(const char *path)
{
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -1;
    uint64_t dumb = 0;
    if (drmGetCap(fd, DRM_CAP_DUMB_BUFFER, &dumb) < 0 || !dumb) {
        close(fd);
        return -1;
    }
    return fd;
}

static bool has_connected(int fd)
{
    drmModeRes *res = drmModeGetResources(fd);
    bool found = false;
    for (int i = 0; res && i < res->count_connectors && !found; i++) {
        drmModeConnector *c = drmModeGetConnector(fd, res->connectors[i]);
        found = c && c->connection == DRM_MODE_CONNECTED && c->count_modes > 0;
        drmModeFreeConnector(c);
    }
    drmModeFreeResources(res);
    return found;
}

static int open_card(mq_drm *d, const char *card)
{
    if (card && *card) {
        if (card[0] == '/')
            snprintf(d->card, sizeof d->card, "%s", card);
        else
            snprintf(d->card, sizeof d->card, "/dev/dri/%s%s", strncmp(card, "card", 4) ? "card" : "", card);
        d->fd = open_path(d->card);
        return d->fd;
    }
    for (int pass = 0; pass < 2 && d->fd < 0; pass++) {
        for (int n = 0; n < 8 && d->fd < 0; n++) { // the first card that drives a screen
            snprintf(d->card, sizeof d->card, "/dev/dri/card%d", n);
            d->fd = open_path(d->card);
            if (d->fd >= 0 && pass == 0 && !has_connected(d->fd)) {
                close(d->fd);
                d->fd = -1;
            }
        }
    }
    return d->fd; // pass 1: no screen yet, take the first card and wait for a hotplug
}

/* ---- connector, CRTC, mode ---- */

static void connector_name(const drmModeConnector *c, char *buf, size_t size)
{
    const char *type = drmModeGetConnectorTypeName(c->connector_type);
    snprintf(buf, size, "%s-%u", type ? type : "Unknown", c->connector_type_id);
}

static bool connector_wanted(const mq_drm *d, const drmModeConnector *c)
{
    char name[32];
    connector_name(c, name, sizeof name);
    if (d->want_conn[0])
        return strcmp(name, d->want_conn) == 0 || (uint32_t)atol(d->want_conn) == c->connector_id;
    return c->connection == DRM_MODE_CONNECTED && c->count_modes > 0;
}

static drmModeConnector *pick_connector(mq_drm *d, const drmModeRes *res)
{
    for (int i = 0; i < res->count_connectors; i++) {
        drmModeConnector *c = drmModeGetConnector(d->fd, res->connectors[i]);
        if (c && connector_wanted(d, c)) {
            connector_name(c, d->conn_name, sizeof d->conn_name);
            return c;
        }
        drmModeFreeConnector(c);
    }
    return NULL;
}

static uint32_t crtc_of_encoder(int fd, const drmModeRes *res, uint32_t enc_id, bool current)
{
    drmModeEncoder *e = drmModeGetEncoder(fd, enc_id);
    uint32_t crtc = 0;
    if (e && current)
        crtc = e->crtc_id;
    for (int i = 0; e && !crtc && i < res->count_crtcs; i++)
        if (e->possible_crtcs & (1u << i))
            crtc = res->crtcs[i];
    drmModeFreeEncoder(e);
    return crtc;
}

static int pick_crtc(mq_drm *d, const drmModeRes *res, const drmModeConnector *c)
{
    d->crtc_id = c->encoder_id ? crtc_of_encoder(d->fd, res, c->encoder_id, true) : 0;
    for (int i = 0; !d->crtc_id && i < c->count_encoders; i++)
        d->crtc_id = crtc_of_encoder(d->fd, res, c->encoders[i], false);
    return d->crtc_id ? MQ_OK : MQ_ERR_VIDEO_DEVICE;
}

static int pick_mode(mq_drm *d, const drmModeConnector *c)
{
    int best = -1;
    for (int i = 0; i < c->count_modes; i++) {
        const drmModeModeInfo *m = &c->modes[i];
        if (d->want_w ? (m->hdisplay == d->want_w && m->vdisplay == d->want_h)
                      : (m->type & DRM_MODE_TYPE_PREFERRED) != 0) {
            best = i;
            break;
        }
    }
    if (best < 0 && (d->want_w || c->count_modes == 0))
        return MQ_ERR_VIDEO_DEVICE;
    d->mode = c->modes[best < 0 ? 0 : best];
    d->width = d->mode.hdisplay;
    d->height = d->mode.vdisplay;
    return MQ_OK;
}

/* ---- setup chain ---- */

static int setup_output(mq_drm *d)
{
    drmModeRes *res = drmModeGetResources(d->fd);
    drmModeConnector *c = res ? pick_connector(d, res) : NULL;
    int ret = MQ_ERR_VIDEO_DEVICE;
    if (!c)
        mq_log(MQ_LOG_ERROR, "drm: no connector %s on %s", d->want_conn[0] ? d->want_conn : "connected", d->card);
    else if (c->connection != DRM_MODE_CONNECTED || c->count_modes == 0) {
        mq_log(MQ_LOG_WARN, "drm: %s is not connected; waiting for it", d->conn_name);
        ret = MQ_OK;
    } else if ((ret = pick_crtc(d, res, c)) < 0 || (ret = pick_mode(d, c)) < 0)
        mq_log(MQ_LOG_ERROR, "drm: no CRTC or mode for %s", d->conn_name);
    if (c)
        d->conn_id = c->connector_id;
    d->connected = ret >= 0 && c && c->connection == DRM_MODE_CONNECTED && c->count_modes > 0;
    drmModeFreeConnector(c);
    drmModeFreeResources(res);
    return ret;
}

void mq_drm_teardown(mq_drm *d)
{
    if (d->flipping)
        mq_drm_wait_flip(d, 0.1);
    for (int i = 0; i < MQ_DRM_BUFFERS; i++) {
        mq_drm_fb_destroy(d->fd, &d->fb[i]);
        mq_drm_yuv_fb_destroy(d->fd, &d->vfb[i]); // (removing a scanned-out buffer switches its plane off)
    }
    d->front = d->pending = d->vfront = d->vpending = -1;
    d->flipping = false;
}

int mq_drm_setup(mq_drm *d)
{
    mq_drm_teardown(d);
    int ret = setup_output(d);
    if (ret < 0 || !d->connected)
        return ret;
    if (!d->saved) { // the console's CRTC, restored at close
        d->saved = drmModeGetCrtc(d->fd, d->crtc_id);
        d->saved_conn = d->conn_id;
    }
    for (int i = 0; i < MQ_DRM_BUFFERS && ret >= 0; i++)
        ret = mq_drm_fb_create(d->fd, d->width, d->height, &d->fb[i]);
    if (ret >= 0) {
        mq_log(MQ_LOG_INFO, "drm: %s %s %dx%d@%u crtc %u", d->card, d->conn_name, d->width, d->height, d->mode.vrefresh,
               d->crtc_id);
        mq_drm_find_video_plane(d);
    }
    return ret;
}

static int parse_mode(mq_drm *d, const char *mode)
{
    if (!mode || !*mode)
        return MQ_OK;
    if (sscanf(mode, "%dx%d", &d->want_w, &d->want_h) != 2 || d->want_w <= 0 || d->want_h <= 0)
        return MQ_ERR_INVALID_ARGUMENT;
    return MQ_OK;
}

int mq_drm_open(mq_drm *d, const char *card, const char *connector, const char *mode)
{
    *d = (mq_drm){.fd = -1, .front = -1, .pending = -1, .vfront = -1, .vpending = -1};
    snprintf(d->want_conn, sizeof d->want_conn, "%s", connector ? connector : "");
    int ret = parse_mode(d, mode);
    if (ret < 0)
        return ret;
    if (open_card(d, card) < 0) {
        mq_log(MQ_LOG_ERROR, "drm: no usable card %s", card ? card : "(none has a connected display)");
        return MQ_ERR_VIDEO_DEVICE;
    }
    return mq_drm_setup(d);
}

static void restore_crtc(mq_drm *d)
{
    drmModeCrtc *s = d->saved;
    if (!s)
        return;
    if (s->mode_valid && s->buffer_id)
        drmModeSetCrtc(d->fd, s->crtc_id, s->buffer_id, s->x, s->y, &d->saved_conn, 1, &s->mode);
    drmModeFreeCrtc(s);
    d->saved = NULL;
}

void mq_drm_close(mq_drm *d)
{
    if (d->fd < 0)
        return;
    if (d->flipping)
        mq_drm_wait_flip(d, 0.1);
    if (d->plane.id && d->vfront >= 0) // the console must not stay under a picture
        drmModeSetPlane(d->fd, d->plane.id, d->crtc_id, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
    restore_crtc(d);
    mq_drm_teardown(d);
    close(d->fd);
    d->fd = -1;
}

/* ---- presentation ---- */

int mq_drm_back(const mq_drm *d)
{
    for (int i = 0; i < MQ_DRM_BUFFERS; i++)
        if (i != d->front && i != d->pending)
            return i;
    return 0; // unreachable with three buffers
}

/// What the pending commit put on screen is on screen now. Imported pictures no longer shown
/// go back to their decoder at once (its pool of buffers is small).
static void flip_landed(mq_drm *d)
{
    if (d->pending >= 0)
        d->front = d->pending;
    if (d->vpending != -1)
        d->vfront = d->vpending >= 0 ? d->vpending : -1;
    d->pending = d->vpending = -1;
    d->flipping = false;
    if (d->vfront >= 0)
        d->vfb[d->vfront].shown = true;
    for (int i = 0; i < MQ_DRM_BUFFERS; i++) // (one imported, not yet committed, is kept)
        if (i != d->vfront && d->vfb[i].prime && d->vfb[i].shown)
            mq_drm_yuv_fb_destroy(d->fd, &d->vfb[i]);
}

static void on_flip(int fd, unsigned seq, unsigned sec, unsigned usec, void *data)
{
    (void)fd;
    (void)seq;
    mq_drm *d = data;
    flip_landed(d);
    double t = sec + usec * 1e-6, now = mq_clock_now();
    d->last_vblank = t > now - 1 && t <= now + 0.001 ? t : now; // drivers without vblank: now
}

int mq_drm_drain_late_flip(mq_drm *d, double timeout_s)
{
    // Only after a wait gave up on a flip (flip_landed already ran for it): its event, when it
    // comes, finds nothing pending and changes nothing on our side.
    drmEventContext ev = {.version = 2, .page_flip_handler = on_flip};
    struct pollfd pfd = {.fd = d->fd, .events = POLLIN};
    int n = poll(&pfd, 1, (int)ceil(timeout_s * 1000));
    if (n > 0 && (pfd.revents & POLLIN)) {
        drmHandleEvent(d->fd, &ev);
        return MQ_OK;
    }
    return MQ_ERR_VIDEO_DEVICE;
}

int mq_drm_atomic_commit(mq_drm *d, drmModeAtomicReq *req, uint32_t flags)
{
    int ret = drmModeAtomicCommit(d->fd, req, flags, d);
    if (ret < 0 && errno == EBUSY && !(flags & DRM_MODE_ATOMIC_TEST_ONLY) && mq_drm_drain_late_flip(d, 1.0) == MQ_OK)
        ret = drmModeAtomicCommit(d->fd, req, flags, d); // the flip given up on has landed since
    return ret;
}

int mq_drm_wait_flip(mq_drm *d, double timeout_s)
{
    double deadline = mq_clock_now() + timeout_s;
    drmEventContext ev = {.version = 2, .page_flip_handler = on_flip};
    while (d->flipping) {
        int ms = (int)ceil((deadline - mq_clock_now()) * 1000);
        struct pollfd pfd = {.fd = d->fd, .events = POLLIN};
        int n = poll(&pfd, 1, ms > 0 ? ms : 0);
        if (n > 0 && (pfd.revents & POLLIN)) {
            drmHandleEvent(d->fd, &ev);
            continue;
        }
        if (timeout_s <= 0)
            return MQ_OK; // only collecting: still pending
        if (n < 0 && errno == EINTR)
            continue;
        mq_log(MQ_LOG_WARN, "drm: page flip did not complete");
        flip_landed(d); // assume it landed; never wedge the video thread
        return MQ_ERR_VIDEO_DEVICE;
    }
    return MQ_OK;
}

/// Primary buffer `i` on screen and the video plane off, in one atomic commit.
static int plane_off_with(mq_drm *d, int i)
{
    drmModeAtomicReq *req = drmModeAtomicAlloc();
    const mq_drm_plane *pl = &d->plane;
    int ret = req ? 0 : -1;
    if (ret >= 0)
        ret = drmModeAtomicAddProperty(req, pl->primary_id, pl->primary_fb_prop, d->fb[i].fb_id);
    if (ret >= 0)
        ret = drmModeAtomicAddProperty(req, pl->id, pl->prop[MQ_PLANE_FB_ID], 0);
    if (ret >= 0)
        ret = drmModeAtomicAddProperty(req, pl->id, pl->prop[MQ_PLANE_CRTC_ID], 0);
    if (ret >= 0)
        ret = mq_drm_atomic_commit(d, req, DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT);
    drmModeAtomicFree(req);
    if (ret < 0)
        return ret;
    d->pending = i;
    d->vpending = -2;
    d->flipping = true;
    return 0;
}

int mq_drm_show(mq_drm *d, int i)
{
    if (d->flipping)
        mq_drm_wait_flip(d, 0.1);
    if (d->vfront >= 0 && plane_off_with(d, i) == 0)
        return MQ_OK;
    if (d->vfront >= 0) { // the commit was refused: off the legacy way, then the flip
        mq_log(MQ_LOG_WARN, "drm: switching the video plane off in one commit failed: %s", strerror(errno));
        drmModeSetPlane(d->fd, d->plane.id, d->crtc_id, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
        d->vfront = -1;
    }
    int flipped = d->front >= 0 ? drmModePageFlip(d->fd, d->crtc_id, d->fb[i].fb_id, DRM_MODE_PAGE_FLIP_EVENT, d) : -1;
    if (flipped < 0 && d->front >= 0 && errno == EBUSY && mq_drm_drain_late_flip(d, 1.0) == MQ_OK)
        flipped = drmModePageFlip(d->fd, d->crtc_id, d->fb[i].fb_id, DRM_MODE_PAGE_FLIP_EVENT, d);
    if (flipped == 0) {
        d->pending = i;
        d->flipping = true;
        return MQ_OK;
    }
    // First picture after a setup, or a driver without page flips: a mode set.
    CHECK_DRM(drmModeSetCrtc(d->fd, d->crtc_id, d->fb[i].fb_id, 0, 0, &d->conn_id, 1, &d->mode), "SetCrtc");
    d->front = i;
    d->last_vblank = mq_clock_now();
    return MQ_OK;
}

double mq_drm_period(const mq_drm *d)
{
    return d->mode.vrefresh > 0 ? 1.0 / d->mode.vrefresh : 1.0 / 60;
}

static bool preferred_changed(const mq_drm *d, const drmModeConnector *c)
{
    if (d->want_w)
        return false;
    for (int i = 0; i < c->count_modes; i++)
        if (c->modes[i].type & DRM_MODE_TYPE_PREFERRED)
            return c->modes[i].hdisplay != d->width || c->modes[i].vdisplay != d->height;
    return false;
}

int mq_drm_check(mq_drm *d, bool *connected)
{
    if (!d->conn_id) { // the wanted connector did not exist: look again
        *connected = false;
        return has_connected(d->fd) ? 1 : 0;
    }
    drmModeConnector *c = d->conn_id ? drmModeGetConnectorCurrent(d->fd, d->conn_id) : NULL;
    bool now = c && c->connection == DRM_MODE_CONNECTED && c->count_modes > 0;
    bool changed = now != d->connected || (now && preferred_changed(d, c));
    drmModeFreeConnector(c);
    *connected = now;
    d->connected = now;
    return changed ? 1 : 0;
}
