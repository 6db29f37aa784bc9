#include "video/drm_setup.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <drm_fourcc.h>
#include <libavutil/hwcontext_drm.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixfmt.h>
#include <xf86drm.h>

#include "core/clock.h"
#include "core/log.h"
#include "mq_err.h"
#include "mq_player.h"

#define CHECK_DRM(expr, what)                                                                                          \
    do {                                                                                                               \
        if ((expr) < 0) {                                                                                              \
            mq_log(MQ_LOG_ERROR, "drm: %s failed: %s", what, strerror(errno));                                         \
            return MQ_ERR_VIDEO_DEVICE;                                                                                \
        }                                                                                                              \
    } while (0)

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

/* ---- dumb buffers ---- */

static void fb_destroy(int fd, mq_drm_fb *fb)
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

static int fb_create(int fd, int w, int h, mq_drm_fb *fb)
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
static void yuv_fb_destroy(int fd, mq_drm_yuv_fb *v)
{
    if (v->prime || v->n_prime_handles) {
        if (v->fb.fb_id)
            drmModeRmFB(fd, v->fb.fb_id);
        for (int i = 0; i < v->n_prime_handles; i++)
            drmCloseBufferHandle(fd, v->prime_handles[i]);
        av_frame_free(&v->prime);
    } else {
        fb_destroy(fd, &v->fb);
    }
    *v = (mq_drm_yuv_fb){0};
}

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
static void find_video_plane(mq_drm *d)
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
        fb_destroy(d->fd, &d->fb[i]);
        yuv_fb_destroy(d->fd, &d->vfb[i]); // (removing a scanned-out buffer switches its plane off)
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
        ret = fb_create(d->fd, d->width, d->height, &d->fb[i]);
    if (ret >= 0) {
        mq_log(MQ_LOG_INFO, "drm: %s %s %dx%d@%u crtc %u", d->card, d->conn_name, d->width, d->height, d->mode.vrefresh,
               d->crtc_id);
        find_video_plane(d);
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
            yuv_fb_destroy(d->fd, &d->vfb[i]);
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
        ret = drmModeAtomicCommit(d->fd, req, DRM_MODE_ATOMIC_NONBLOCK | DRM_MODE_PAGE_FLIP_EVENT, d);
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
    if (d->front >= 0 && drmModePageFlip(d->fd, d->crtc_id, d->fb[i].fb_id, DRM_MODE_PAGE_FLIP_EVENT, d) == 0) {
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

static uint32_t fourcc_of(int pix_fmt)
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
    uint32_t fourcc = fourcc_of(f->format);
    return f->width % 2 == 0 && f->height % 2 == 0 &&
           ((fourcc == DRM_FORMAT_YUV420 && d->plane.yuv420) || (fourcc == DRM_FORMAT_NV12 && d->plane.nv12));
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
    yuv_fb_destroy(d->fd, v);
    const AVDRMLayerDescriptor *l = &desc->layers[0];
    uint32_t obj[AV_DRM_MAX_PLANES] = {0}, handles[4] = {0}, pitches[4] = {0}, offsets[4] = {0};
    uint64_t mods[4] = {0};
    bool with_mods = false;
    for (int o = 0; o < desc->nb_objects && o < AV_DRM_MAX_PLANES; o++) {
        if (drmPrimeFDToHandle(d->fd, desc->objects[o].fd, &obj[o]) < 0) {
            mq_log(MQ_LOG_WARN, "drm: importing a picture's dma-buf failed: %s", strerror(errno));
            yuv_fb_destroy(d->fd, v);
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
        yuv_fb_destroy(d->fd, v);
        return -1;
    }
    if (!(v->prime = av_frame_clone(f))) {
        yuv_fb_destroy(d->fd, v);
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
    uint32_t fourcc = fourcc_of(pix_fmt);
    if (i < 0 || !fourcc)
        return -1;
    mq_drm_yuv_fb *v = &d->vfb[i];
    if (v->fb.map && v->fourcc == fourcc && v->width == w && v->height == h)
        return i;
    yuv_fb_destroy(d->fd, v);
    if (yuv_fb_create(d->fd, fourcc, w, h, v) < 0) {
        yuv_fb_destroy(d->fd, v);
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
        ret = drmModeAtomicCommit(d->fd, req, flags, d);
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
