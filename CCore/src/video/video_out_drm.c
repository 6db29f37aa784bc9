#include <math.h>
#include <stdio.h>
#include <string.h>

#include <libavutil/hwcontext.h>
#include <libavutil/pixdesc.h>

#include "core/log.h"
#include "mq_err.h"
#include "mq_player.h"
#include "video/caption_render.h"
#include "video/drm_setup.h"
#include "video/video_out.h"
#include "video/video_render.h"

/// `drm[:<card>[,<connector>[,<WxH>]]]`: a screen driven through DRM/KMS dumb buffers.
/// A 4:2:0 picture (yuv420p, nv12) goes as it is to the video plane when the card has one
/// (drm_setup.h) and the driver accepts its placement (an atomic test commit: some cannot
/// scale), with black around it on the primary plane: copied, not converted. Otherwise — other
/// formats, rotation, an overlay (band, slate) on screen, or a placement refused — every picture
/// is converted and fitted with libswscale into XRGB8888 (fit rectangle cached per size change),
/// rotated in software (0/90/180/270), and shown by a page flip. Before the
/// first picture the poster (or black) is shown; the last picture is held under overlays and
/// redrawn after the display comes back. The connector is checked 4 times a second
/// (drmModeGetConnectorCurrent: no probe) for unplug / replug / a new preferred mode.

#define CHECK_PERIOD 0.25

typedef struct drm_priv {
    // video thread only (the controlling thread during open)
    mq_drm drm;
    mq_scaler video, still; // still: the poster
    AVFrame *poster;        // decoded poster, NULL if none
    AVFrame *held;          // reference to the last picture shown, NULL before one
    double next_check;      // monotonic time of the next connector check
    // the last placement the video plane refused (software until the picture, fit or screen changes)
    struct {
        int w, h, fmt, fit, scr_w, scr_h;
    } refused;
    bool on_plane_logged;
    mq_caption_render *captions; // made with the first caption drawn; NULL before (or without the font)
    unsigned caption_seen;       // the vo->caption_gen it holds
    bool captions_failed;        // its font could not be loaded (said once)
} drm_priv;

static mq_canvas canvas_of(const mq_drm *d, int i)
{
    return (mq_canvas){d->fb[i].map, (int)d->fb[i].pitch, d->width, d->height};
}

/// The held picture, fitted: a decoder's picture in its own memory (a dma-buf the video plane
/// could not take) is read back first (av_hwframe_transfer_data).
static int draw_held(mq_video_out *vo, const mq_canvas *c)
{
    drm_priv *p = vo->priv;
    AVFrame *tmp;
    const AVFrame *f = mq_vo_in_memory(p->held, &tmp);
    int ret = f ? mq_scaler_draw(&p->video, f, vo->opts.fit, vo->opts.rotation, c) : MQ_ERR_UNSUPPORTED;
    av_frame_free(&tmp);
    return ret;
}

/// Whether captions are to be drawn over the held picture now.
static bool captions_wanted(const mq_video_out *vo)
{
    const drm_priv *p = vo->priv;
    return vo->draw_captions && vo->caption_events[0] && p->held && !p->captions_failed &&
           vo->overlay.kind == MQ_OVERLAY_NONE && vo->opts.rotation == 0;
}

/// The caption screen drawn over the picture's place on `c` (libass: video/caption_render.h).
static void draw_captions(mq_video_out *vo, const mq_canvas *c)
{
    drm_priv *p = vo->priv;
    if (!p->captions) {
        int ret = mq_caption_render_create(NULL, &p->captions);
        if (ret < 0) {
            p->captions_failed = true;
            mq_log(MQ_LOG_WARN, "drm: captions not drawn: %s (%s)", mq_err_string(ret), MQ_CAPTION_FONT);
            return;
        }
        p->caption_seen = vo->caption_gen - 1;
    }
    if (p->caption_seen != vo->caption_gen) {
        mq_caption_render_set(p->captions, vo->caption_events);
        p->caption_seen = vo->caption_gen;
    }
    mq_caption_render_draw(p->captions, c, p->video.screen);
}

/// Draws what should be on screen now into buffer `i`: the held picture (else the poster,
/// else black) unless a slate hides it, then the captions or the overlay.
static int compose(mq_video_out *vo, int i)
{
    drm_priv *p = vo->priv;
    mq_canvas c = canvas_of(&p->drm, i);
    int ret = MQ_OK;
    if (vo->overlay.kind == MQ_OVERLAY_SLATE)
        mq_overlay_draw_slate(&c, vo->overlay.message);
    else if (vo->overlay.kind == MQ_OVERLAY_BLANK)
        mq_canvas_fill(&c, (mq_rect){0, 0, c.width, c.height}, 0);
    else if (p->held) {
        ret = draw_held(vo, &c);
        if (ret >= 0 && captions_wanted(vo))
            draw_captions(vo, &c);
    } else if (p->poster)
        ret = mq_scaler_draw(&p->still, p->poster, MQ_FIT_CONTAIN, vo->opts.rotation, &c);
    else
        mq_canvas_fill(&c, (mq_rect){0, 0, c.width, c.height}, 0);
    if (ret >= 0 && vo->overlay.kind == MQ_OVERLAY_BUFFERING)
        mq_overlay_draw_buffering(&c, vo->overlay.message);
    return ret;
}

/* ---- the video plane ---- */

static bool refused(const drm_priv *p, const AVFrame *f, int fit)
{
    return p->refused.w == f->width && p->refused.h == f->height && p->refused.fmt == f->format &&
           p->refused.fit == fit && p->refused.scr_w == p->drm.width && p->refused.scr_h == p->drm.height;
}

/// Whether the held picture should go to the video plane (tried; a refusal is remembered). Not
/// before the CRTC is set up (after open or a replug, the software path's first picture does it).
static bool plane_wanted(const mq_video_out *vo)
{
    const drm_priv *p = vo->priv;
    const AVFrame *f = p->held;
    return f && p->drm.front >= 0 && vo->overlay.kind == MQ_OVERLAY_NONE && vo->opts.rotation == 0 &&
           !captions_wanted(vo) && mq_drm_plane_takes(&p->drm, f) && !refused(p, f, vo->opts.fit);
}

/// Shows the held picture on the video plane: MQ_ERR_UNSUPPORTED when the driver refuses it.
static int show_on_plane(mq_video_out *vo)
{
    drm_priv *p = vo->priv;
    mq_drm *d = &p->drm;
    const AVFrame *f = p->held;
    bool prime = f->format == AV_PIX_FMT_DRM_PRIME; // a decoder's dma-buf: imported, not copied
    int vi = prime ? mq_drm_video_import(d, f) : mq_drm_video_back(d, f->format, f->width, f->height);
    if (vi < 0)
        return MQ_ERR_UNSUPPORTED;
    if (!prime)
        mq_drm_video_copy(d, vi, f);
    mq_rect src, dst;
    mq_fit_compute(vo->opts.fit, f->width, f->height, d->width, d->height, &src, &dst);
    mq_drm_placement at = {src.x, src.y, src.w, src.h,         dst.x,
                           dst.y, dst.w, dst.h, f->colorspace, mq_full_range(f) ? AVCOL_RANGE_JPEG : AVCOL_RANGE_MPEG};
    int primary = -1, ret = MQ_OK;
    if (d->vfront < 0) { // entering: black on the primary plane around the picture, asked first
        primary = mq_drm_back(d);
        mq_canvas c = canvas_of(d, primary);
        mq_canvas_fill(&c, (mq_rect){0, 0, c.width, c.height}, 0);
        ret = mq_drm_show_video(d, vi, &at, primary, true);
    }
    if (ret >= 0)
        ret = mq_drm_show_video(d, vi, &at, primary, false);
    if (ret >= 0 && !p->on_plane_logged) {
        p->on_plane_logged = true;
        mq_log(MQ_LOG_INFO, "drm: %dx%d %s pictures on video plane %u at %dx%d+%d+%d (%s)", f->width, f->height,
               av_get_pix_fmt_name(f->format), d->plane.id, dst.w, dst.h, dst.x, dst.y,
               prime ? "imported, no copy" : "copied, no conversion");
    }
    if (ret == MQ_ERR_UNSUPPORTED) {
        p->refused.w = f->width, p->refused.h = f->height, p->refused.fmt = f->format;
        p->refused.fit = vo->opts.fit, p->refused.scr_w = d->width, p->refused.scr_h = d->height;
        mq_log(MQ_LOG_INFO, "drm: video plane %u refused %dx%d %s at %dx%d+%d+%d: converting in software", d->plane.id,
               f->width, f->height, av_get_pix_fmt_name(f->format), dst.w, dst.h, dst.x, dst.y);
        p->on_plane_logged = false;
    }
    return ret;
}

static int redraw(mq_video_out *vo)
{
    drm_priv *p = vo->priv;
    if (!p->drm.connected)
        return MQ_OK;
    if (plane_wanted(vo)) {
        int ret = show_on_plane(vo);
        if (ret != MQ_ERR_UNSUPPORTED)
            return ret;
    }
    int i = mq_drm_back(&p->drm);
    int ret = compose(vo, i);
    return ret < 0 ? ret : mq_drm_show(&p->drm, i);
}

static int parse_spec(const char *arg, char *card, char *conn, char *mode, size_t size)
{
    card[0] = conn[0] = mode[0] = '\0';
    if (!arg)
        return MQ_OK;
    char buf[256];
    if (snprintf(buf, sizeof buf, "%s", arg) >= (int)sizeof buf)
        return MQ_ERR_INVALID_ARGUMENT;
    // strsep keeps empty fields: `drm:,HDMI-A-1` is "any card, connector HDMI-A-1".
    char *fields[3] = {card, conn, mode}, *rest = buf;
    for (int n = 0; n < 3 && rest; n++) {
        char *f = strsep(&rest, ",");
        snprintf(fields[n], size, "%s", f);
    }
    return rest ? MQ_ERR_INVALID_ARGUMENT : MQ_OK;
}

static int drm_open(mq_video_out *vo, const char *arg)
{
    drm_priv *p = vo->priv;
    p->drm.fd = -1; // close is safe from here on
    int rot = vo->opts.rotation;
    if (vo->opts.fit < MQ_FIT_CONTAIN || vo->opts.fit > MQ_FIT_SCALEDOWN ||
        (rot != 0 && rot != 90 && rot != 180 && rot != 270))
        return MQ_ERR_INVALID_ARGUMENT;
    char card[64], conn[64], mode[64];
    int ret = parse_spec(arg, card, conn, mode, sizeof card);
    if (ret >= 0)
        ret = mq_drm_open(&p->drm, card[0] ? card : NULL, conn[0] ? conn : NULL, mode[0] ? mode : NULL);
    if (ret >= 0 && vo->opts.poster && *vo->opts.poster)
        ret = mq_image_load(vo->opts.poster, &p->poster);
    if (ret >= 0)
        ret = redraw(vo); // poster or black: never the console
    p->next_check = mq_clock_now() + CHECK_PERIOD;
    return ret;
}

static int drm_configure(mq_video_out *vo, const mq_video_format *fmt, mq_video_format *accepted)
{
    (void)vo;
    *accepted = *fmt; // any format: swscale converts
    return MQ_OK;
}

/// A hardware surface (a VAAPI decoder's) mapped to dma-bufs for the video plane to import;
/// NULL when there is no plane, it is not one, or the mapping fails (then it is read back).
static AVFrame *as_prime(const drm_priv *p, const AVFrame *f)
{
    if (!p->drm.plane.id || !f->hw_frames_ctx || f->format == AV_PIX_FMT_DRM_PRIME)
        return NULL;
    AVFrame *m = av_frame_alloc();
    if (m)
        m->format = AV_PIX_FMT_DRM_PRIME;
    if (!m || av_hwframe_map(m, f, AV_HWFRAME_MAP_READ) < 0 || av_frame_copy_props(m, f) < 0)
        av_frame_free(&m);
    return m;
}

static int drm_present(mq_video_out *vo, const mq_vframe *f, double wall_time)
{
    (void)wall_time;
    drm_priv *p = vo->priv;
    av_frame_free(&p->held);
    p->held = as_prime(p, f->frame);
    if (!p->held)
        p->held = av_frame_clone(f->frame); // a reference, kept for overlays and replug
    if (!p->held)
        return MQ_ERR_NO_MEMORY;
    if (vo->overlay.kind == MQ_OVERLAY_SLATE && p->drm.front >= 0)
        return MQ_OK;  // the slate stays; the picture is held for when it goes
    return redraw(vo); // not connected: consumed on the clock, nothing shown
}

static int reconnect(mq_video_out *vo, bool connected, char *what, size_t size)
{
    drm_priv *p = vo->priv;
    mq_drm *d = &p->drm;
    if (!connected) {
        mq_drm_teardown(d); // removing the scanned-out buffers switches the CRTC off
        d->connected = false;
        snprintf(what, size, "display %s disconnected", d->conn_name);
        return 1;
    }
    int ret = mq_drm_setup(d);
    if (ret >= 0 && d->connected)
        ret = redraw(vo);
    if (ret < 0)
        return ret;
    snprintf(what, size, "display %s %s %dx%d@%u", d->conn_name, d->connected ? "connected" : "lost", d->width,
             d->height, d->mode.vrefresh);
    return 1;
}

static int drm_refresh(mq_video_out *vo, bool overlay_changed, char *what, size_t size)
{
    drm_priv *p = vo->priv;
    double now = mq_clock_now();
    if (now >= p->next_check) {
        p->next_check = now + CHECK_PERIOD;
        bool connected;
        if (mq_drm_check(&p->drm, &connected) > 0) {
            int ret = reconnect(vo, connected, what, size);
            mq_log(MQ_LOG_INFO, "drm: hotplug: %s", ret > 0 ? what : mq_err_string(ret));
            return ret;
        }
    }
    if (overlay_changed)
        return redraw(vo) < 0 ? MQ_ERR_VIDEO_DEVICE : 0;
    if (mq_drm_flipping(&p->drm))
        mq_drm_wait_flip(&p->drm, 0); // collect a completed flip event
    return 0;
}

static double drm_next_vblank(mq_video_out *vo, double now)
{
    drm_priv *p = vo->priv;
    double last = p->drm.last_vblank, period = mq_drm_period(&p->drm);
    if (last <= 0 || now - last > 1)
        return now;
    double next = last + ceil((now - last) / period) * period;
    return mq_drm_flipping(&p->drm) ? next + period : next; // a queued flip takes the next one
}

static void drm_close(mq_video_out *vo)
{
    drm_priv *p = vo->priv;
    mq_drm_close(&p->drm); // restores the console's CRTC
    mq_scaler_uninit(&p->video);
    mq_scaler_uninit(&p->still);
    av_frame_free(&p->poster);
    av_frame_free(&p->held);
    mq_caption_render_destroy(&p->captions);
}

const mq_video_out_driver mq_video_out_drm = {
    .name = "drm",
    .priv_size = sizeof(drm_priv),
    .open = drm_open,
    .configure = drm_configure,
    .present = drm_present,
    .close = drm_close,
    .refresh = drm_refresh,
    .next_vblank = drm_next_vblank,
};
