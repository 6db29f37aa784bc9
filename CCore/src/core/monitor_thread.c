#include <math.h>

#include "core/player_internal.h"
#include "core/thread.h"
#include "mq_err.h"

/// The monitor thread: every 20 ms it turns what the audio thread and the clip slots report
/// through atomics (underruns, xruns, device errors, clips ended) into events, and decides
/// BUFFERING / PLAYING / ENDED. It holds the player's lock while it works (the track list) and
/// sleeps on its condvar between rounds; its own bookkeeping is `p->monitor`.

static void monitor_audio(mq_player *p, mq_monitor *m)
{
    uint32_t underruns = atomic_load(&p->underruns), xruns = atomic_load(&p->xruns);
    if (underruns != m->seen_underruns) {
        m->seen_underruns = underruns;
        double at = atomic_load(&p->underrun_media);
        mq_event_queue_push(p->events, MQ_EVENT_UNDERRUN, -1, 0, at, "audio ran dry at %.3f", at);
    }
    if (xruns != m->seen_xruns) {
        m->seen_xruns = xruns;
        mq_event_queue_push(p->events, MQ_EVENT_UNDERRUN, -1, 0, NAN, "audio device underrun (xrun) recovered");
    }
    int err = atomic_load(&p->audio_error);
    if (err != 0 && err != m->seen_audio_error) {
        m->seen_audio_error = err;
        atomic_store(&p->state, MQ_STATE_ERROR);
        mq_event_queue_push(p->events, MQ_EVENT_ERROR, -1, err, NAN, "audio output failed: %s", mq_err_string(err));
    }
}

static void monitor_clips(mq_player *p, mq_monitor *m)
{
    for (int i = 1; i < MQ_MIXER_MAX_INPUTS; i++) {
        mq_slot *sl = &p->slots[i];
        uint32_t ended = atomic_load(&sl->ended);
        if (ended == m->clips_ended[i])
            continue;
        m->clips_ended[i] = ended;
        int err = atomic_load(&sl->ended_error);
        mq_event_queue_push(p->events, MQ_EVENT_CLIP_ENDED, i, err, NAN,
                            err ? "clip on input %d ended: %s" : "clip on input %d ended", i, mq_err_string(err));
    }
}

static bool track_presented(mq_player *p, mq_track *t, double now)
{
    if (!atomic_load(&t->input_done))
        return false;
    if (t->kind == MQ_TRACK_VIDEO) {
        double last;
        return mq_frame_queue_pending(p->vq, &last) == 0;
    }
    return atomic_load(&p->drained_gen) == (int64_t)atomic_load(&p->out->gen) && now >= atomic_load(&p->drained_mono);
}

/// Called with the lock held (the track list).
static void monitor_state(mq_player *p, mq_monitor *m)
{
    double now = mq_clock_now();
    bool done = false, others = true; // (staged tracks: the next item's, decoded ahead)
    for (int i = 0; i < p->ntracks; i++) {
        if (atomic_load(&p->tracks[i]->staged))
            continue;
        done = others = others && track_presented(p, p->tracks[i], now);
    }
    if (done && !m->ended_sent) {
        m->ended_sent = true;
        if (atomic_load(&p->state) != MQ_STATE_ERROR)
            atomic_store(&p->state, MQ_STATE_ENDED);
        mq_event_queue_push(p->events, MQ_EVENT_ENDED, -1, 0, NAN, "every track ended");
        return;
    }
    if (done || atomic_load(&p->state) == MQ_STATE_ERROR)
        return;
    m->ended_sent = false;
    bool playing = atomic_load(&p->frames_presented) > 0 || atomic_load(&p->audio_frames_played) > 0;
    atomic_store(&p->state, playing ? MQ_STATE_PLAYING : MQ_STATE_BUFFERING);
}

void *mq_monitor_thread_main(void *arg)
{
    mq_player *p = arg;
    mq_monitor *m = &p->monitor;
    pthread_mutex_lock(&p->lock);
    while (!atomic_load(&p->quit)) {
        mq_cond_wait_until(&p->cond, &p->lock, mq_clock_now() + 0.02);
        monitor_audio(p, m);
        monitor_clips(p, m);
        monitor_state(p, m);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}
