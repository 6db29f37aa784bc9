#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/player_internal.h"
#include "core/thread.h"
#include "mq_err.h"

/// The video thread: presents the head picture when the master clock reaches its pts, drops
/// pictures that are late (the next one is also due, or it is over a frame duration behind),
/// and sleeps on the frame queue's condvar (monotonic, timed) until the next one is due.

static void drop_head(mq_player *p, const mq_vframe *head)
{
    mq_vframe v;
    if (!mq_frame_queue_pop(p->vq, head->frame, &v))
        return;
    av_frame_free(&v.frame);
    mq_frame_queue_release(p->vq);
    mq_player_count_dropped(p);
}

static int configure(mq_player *p, const AVFrame *f)
{
    mq_video_out *vo = p->vo;
    mq_video_format fmt = {.width = f->width, .height = f->height, .pix_fmt = f->format}, ok;
    if (vo->fmt.width == fmt.width && vo->fmt.height == fmt.height && vo->fmt.pix_fmt == fmt.pix_fmt)
        return MQ_OK;
    vo->fmt.width = 0;
    int ret = vo->driver->configure(vo, &fmt, &ok);
    if (ret >= 0 && (ok.width != fmt.width || ok.height != fmt.height || ok.pix_fmt != fmt.pix_fmt))
        ret = MQ_ERR_UNSUPPORTED; // no scaler in front of the outputs yet
    if (ret >= 0)
        vo->fmt = fmt;
    return ret;
}

_Static_assert(MQ_VO_CAPTION_MAX == MQ_CC_TEXT, "the screen holds what the queue carries");
_Static_assert(MQ_VO_CAPTION_EVENTS == MQ_CC_ASS, "the screen's events as the queue carries them");

/// The captions on screen with picture `v` (`vo->caption`): the changes made with it, or with
/// pictures not shown before it (the last one is the screen); empty after a reset. Returns
/// whether the screen changed.
static bool take_caption(mq_player *p, const mq_vframe *v)
{
    char *screen = p->vo->caption;
    bool changed = false;
    if (mq_cc_queue_take_flush(&p->cc) && screen[0]) {
        screen[0] = '\0';
        p->vo->caption_events[0] = '\0';
        p->vo->caption_gen++;
        changed = true;
    }
    char text[MQ_CC_TEXT];
    double at;
    if (!v->still && mq_cc_queue_due_screen(&p->cc, v->pts, text, sizeof text, p->vo->caption_events, &at)) {
        snprintf(screen, MQ_VO_CAPTION_MAX, "%s", text);
        p->vo->caption_gen++;
        changed = true;
    }
    return changed;
}

/// Counts a due picture (a join's still is not one) and reports the first picture on screen,
/// the first due picture under a new label (what a playlist item shows first), and the captions
/// changed with it.
static void after_present(mq_player *p, const mq_vframe *v, double now)
{
    atomic_store(&p->width, v->frame->width);
    atomic_store(&p->height, v->frame->height);
    bool first = v->still || atomic_fetch_add(&p->frames_presented, 1) == 0;
    if (first && atomic_load(&p->first_frame_mono) == 0) { // (after a still: it was the first)
        atomic_store(&p->first_frame_mono, now);
        mq_event_queue_push(p->events, MQ_EVENT_FIRST_FRAME, -1, 0, v->pts, "first frame %dx%d at %.3f",
                            v->frame->width, v->frame->height, v->pts);
    }
    // Once counted (a join's still is not due: it waits for the first picture that is).
    if (p->video.label_pending && !v->still) {
        p->video.label_pending = false;
        mq_event_queue_push(p->events, MQ_EVENT_LABEL_SHOWN, -1, 0, v->pts, "%s", p->vo->label);
    }
    if (p->video.caption_pending) {
        p->video.caption_pending = false;
        mq_event_queue_push(p->events, MQ_EVENT_CAPTION, -1, 0, v->pts, "%s", p->vo->caption);
    }
}

/// When the picture presented at `now` becomes visible: the next vblank on a display.
static double visible_at(mq_player *p, double now)
{
    if (p->vo->driver->next_vblank) {
        double at = p->vo->driver->next_vblank(p->vo, now);
        if (at > now && at - now < 0.1)
            return at;
    }
    return now;
}

/// The A/V offset of a picture presented at `now`, visible `at`, with presentation time `pts`: how far it
/// lags (+) or leads (−) the stream audio heard as it becomes visible. Kept last and as the
/// largest of each whole second (a status poll every few seconds still sees the worst).
static void measure_av(mq_player *p, double pts, double now, double at)
{
    double heard;
    if (!mq_clock_audio(&p->clock, at, &heard)) {
        atomic_store(&p->av_offset, NAN);
        atomic_store(&p->av_offset_peak, NAN);
        p->video.av_window_start = 0;
        return;
    }
    double offset = heard - pts;
    atomic_store(&p->av_offset, offset);
    if (p->video.av_window_start == 0 || now - p->video.av_window_start >= 1.0) {
        if (p->video.av_window_start != 0)
            atomic_store(&p->av_offset_peak, p->video.av_window_peak);
        p->video.av_window_start = now;
        p->video.av_window_peak = offset;
    } else if (fabs(offset) > fabs(p->video.av_window_peak))
        p->video.av_window_peak = offset;
}

static void present_head(mq_player *p, const mq_vframe *head)
{
    mq_vframe v;
    if (!mq_frame_queue_pop(p->vq, head->frame, &v))
        return; // flushed meanwhile
    int ret = configure(p, v.frame);
    double now = mq_clock_now(), at = visible_at(p, now), clock;                   // before the flip is queued
    double rate = mq_clock_rate(&p->clock), offset = atomic_load(&p->wall_offset); // one offset for both
    // When it was due: as late as the master clock is past its pts when it becomes visible.
    p->vo->due =
        !v.still && rate > 0 && mq_clock_master(&p->clock, at, &clock) ? at - (clock - v.pts) / rate + offset : NAN;
    p->vo->wall_offset = offset;
    if (take_caption(p, &v))
        p->video.caption_pending = true; // (reported once a picture with it is presented)
    if (ret >= 0)
        ret = p->vo->driver->present(p->vo, &v, now + offset);
    if (ret >= 0) {
        after_present(p, &v, now);
        if (!v.still) // (a still's lateness is no A/V offset)
            measure_av(p, v.pts, now, at);
        p->video.last_present_mono = now;
        if (atomic_load(&p->keep_snap)) { // the picture is kept, not freed: no copy
            pthread_mutex_lock(&p->snap_lock);
            av_frame_unref(p->snap);
            av_frame_move_ref(p->snap, v.frame);
            p->snap_pts = v.media_pts;
            pthread_mutex_unlock(&p->snap_lock);
        }
    } else
        mq_event_queue_push(p->events, MQ_EVENT_ERROR, -1, MQ_ERR_VIDEO_DEVICE, v.pts, "video output failed: %s",
                            mq_err_string(ret));
    av_frame_free(&v.frame);
    mq_frame_queue_release(p->vq);
}

/// Takes the due picture off the queue without showing it (display off; a still overtaken).
static void consume_head(mq_player *p, const mq_vframe *head)
{
    mq_vframe v;
    if (!mq_frame_queue_pop(p->vq, head->frame, &v))
        return;
    av_frame_free(&v.frame);
    mq_frame_queue_release(p->vq);
}

/// Whether a video track reading a whole file (a still image, a playlist's file) has decoded
/// all of it: its last picture is the end, not a stall. (A stream's video that ends before its
/// sound still shows the band.)
static bool video_input_over(mq_player *p)
{
    bool over = false;
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < p->ntracks && !over; i++) {
        const mq_track *t = p->tracks[i];
        over = t->kind == MQ_TRACK_VIDEO && atomic_load(&t->probed) && atomic_load(&t->input_done);
    }
    pthread_mutex_unlock(&p->lock);
    return over;
}

/// The overlay the display should show: the one requested, else the buffering band when
/// pictures stopped coming for a second while playing (the last picture stays under it),
/// unless a whole file's video is over.
static mq_vo_overlay wanted_overlay(mq_player *p, double now)
{
    uint32_t gen = atomic_load(&p->overlay_gen);
    if (gen != p->video.overlay_seen) {
        pthread_mutex_lock(&p->lock);
        p->video.overlay_want = p->overlay_req;
        pthread_mutex_unlock(&p->lock);
        p->video.overlay_seen = gen;
    }
    mq_vo_overlay want = p->video.overlay_want;
    int state = atomic_load(&p->state);
    if (want.kind == MQ_OVERLAY_NONE && p->video.last_present_mono > 0 && now - p->video.last_present_mono > 1.0 &&
        (state == MQ_STATE_PLAYING || state == MQ_STATE_BUFFERING) && !video_input_over(p))
        want.kind = MQ_OVERLAY_BUFFERING;
    return want;
}

/// Display upkeep between pictures: overlays, poster, hotplug; the label of what is presented.
static void refresh_output(mq_player *p, double now)
{
    mq_video_out *vo = p->vo;
    uint32_t label_gen = atomic_load(&p->label_gen);
    if (label_gen != p->video.label_seen) {
        pthread_mutex_lock(&p->lock);
        memcpy(vo->label, p->label_req, sizeof vo->label);
        pthread_mutex_unlock(&p->lock);
        p->video.label_seen = label_gen;
        p->video.label_pending = true;
    }
    mq_vo_overlay want = wanted_overlay(p, now); // also for outputs without a display (BLANK)
    int fit = atomic_load(&p->fit_req);
    bool refit = fit != vo->opts.fit; // (the held picture is drawn again in the new fit)
    vo->opts.fit = fit;
    bool captions = atomic_load(&p->captions_req);
    refit = refit || (captions != vo->draw_captions && vo->caption_events[0]); // (drawn or taken off at once)
    vo->draw_captions = captions;
    if (!vo->driver->refresh)
        return;
    bool changed = refit || want.kind != vo->overlay.kind || strcmp(want.message, vo->overlay.message) != 0;
    vo->overlay = want;
    char what[200] = "";
    int ret = vo->driver->refresh(vo, changed, what, sizeof what);
    if (ret > 0)
        mq_event_queue_push(p->events, MQ_EVENT_OUTPUT_CHANGED, -1, 0, NAN, "%s", what);
    else if (ret < 0)
        mq_event_queue_push(p->events, MQ_EVENT_ERROR, -1, ret, NAN, "video output: %s", mq_err_string(ret));
}

/// The master clock at the moment a picture presented now becomes visible (next vblank).
static bool clock_at_display(mq_player *p, double now, double *clock)
{
    return mq_clock_master(&p->clock, visible_at(p, now), clock);
}

static void video_step(mq_player *p)
{
    mq_vframe head, next;
    double now = mq_clock_now(), clock;
    refresh_output(p, now);
    int n = mq_frame_queue_peek(p->vq, &head, &next);
    if (n == 0) {
        mq_frame_queue_wait(p->vq, now + 0.05, true);
        return;
    }
    if (!clock_at_display(p, now, &clock)) {
        mq_frame_queue_wait(p->vq, now + 0.005, false); // no timeline yet
        return;
    }
    // A join's still: shown at once, unless the picture after it is due already (the catch-up
    // was quicker than the video thread) or the display is off.
    if (head.still) {
        if ((n > 1 && next.pts <= clock) || p->video.overlay_want.kind == MQ_OVERLAY_BLANK)
            consume_head(p, &head);
        else
            present_head(p, &head);
        return;
    }
    // Late: dropped when the next one is due too, or when it is over a frame behind, but for the
    // last picture of a whole file (a still: shown late rather than never; a slow display's
    // redraw can take longer than its frame).
    if ((n > 1 && next.pts <= clock) || (clock - head.pts > head.duration && (n > 1 || !video_input_over(p)))) {
        drop_head(p, &head);
        return;
    }
    if (head.pts <= clock) {
        if (p->video.overlay_want.kind == MQ_OVERLAY_BLANK)
            consume_head(p, &head); // the display is off: on the clock, unseen
        else
            present_head(p, &head);
        return;
    }
    double rate = mq_clock_rate(&p->clock);
    double due = rate > 0 ? now + (head.pts - clock) / rate : now + 0.1;
    mq_frame_queue_wait(p->vq, fmin(due, now + 0.05), false);
}

void *mq_video_thread_main(void *arg)
{
    mq_player *p = arg;
    mq_thread_prefer_realtime(10);
    while (!atomic_load(&p->quit))
        video_step(p);
    return NULL;
}
