#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mq_err.h"
#include "player_internal.h"
#include "thread.h"

/// The audio thread: the master clock. It plays the tempo stage's ring (`out`, see tempo_thread.c). Every period it works out when the next sample written
/// will be heard (device delay, or a virtual device for outputs that do not pace), asks the
/// schedule which presentation time is due then, and writes the PCM ring's samples so they
/// are heard on time (to the sample): late samples are skipped, early ones wait behind silence, and once
/// locked the stream is written continuously (errors under 20 ms are not corrected: no clicks).
///
/// It NEVER allocates, locks, logs or calls back: it reads the SPSC ring and atomics, writes
/// the output, and reports through atomics that the monitor thread turns into events.

#define MQ_LOCKED_TOLERANCE 0.020 // seconds of drift tolerated once writing continuously

int mq_audio_sync_init(mq_player *p)
{
    mq_audio_sync *s = &p->as;
    size_t n = (size_t)p->period_frames * (size_t)p->channels;
    s->mix = calloc(n, sizeof *s->mix);
    s->out = calloc(n, sizeof *s->out);
    s->paced = p->ao->paced;
    return s->mix && s->out ? MQ_OK : MQ_ERR_NO_MEMORY;
}

void mq_audio_sync_uninit(mq_player *p)
{
    free(p->as.mix);
    free(p->as.out);
    p->as.mix = NULL;
    p->as.out = NULL;
}

static void silence(mq_player *p, int from, int to)
{
    if (to > from)
        memset(p->as.mix + (size_t)from * (size_t)p->channels, 0,
               (size_t)(to - from) * (size_t)p->channels * sizeof(float));
}

static void check_generation(mq_player *p, mq_audio_sync *s)
{
    uint32_t gen = atomic_load_explicit(&p->out->gen, memory_order_acquire);
    if (gen == s->gen)
        return;
    s->gen = gen; // the track was reset: a new stream starts
    s->locked = s->started = s->underrun = false;
    mq_clock_invalidate_audio(&p->clock);
}

/// The ring is empty at output index `i` (heard at `t`, where `media` was due).
static void ring_empty(mq_player *p, mq_audio_sync *s, double t, double media, int i)
{
    if (atomic_load_explicit(&p->out->eof, memory_order_acquire)) {
        if (atomic_load_explicit(&p->drained_gen, memory_order_relaxed) != (int64_t)s->gen) {
            atomic_store(&p->drained_mono, t);
            atomic_store(&p->drained_gen, (int64_t)s->gen);
        }
        s->started = s->locked = false;
        mq_clock_invalidate_audio(&p->clock);
        return;
    }
    if (!s->started)
        return; // leading silence: stream audio has not begun
    mq_clock_invalidate_audio(&p->clock);
    s->locked = false;
    atomic_fetch_add_explicit(&p->audio_silence_frames, p->period_frames - i, memory_order_relaxed);
    if (!s->underrun) {
        s->underrun = true;
        atomic_store(&p->underrun_media, media);
        atomic_fetch_add(&p->underruns, 1);
    }
}

/// Copies up to `max` frames of block `b` to output index `i`; returns frames copied.
static int copy_block(mq_player *p, const mq_pcm_block *b, int i, int max)
{
    int avail = b->frames - p->out->read_off;
    int k = avail < max ? avail : max;
    memcpy(p->as.mix + (size_t)i * (size_t)p->channels,
           b->data + (size_t)p->out->read_off * (size_t)p->channels,
           (size_t)k * (size_t)p->channels * sizeof(float));
    mq_pcm_ring_consume(p->out, k);
    atomic_fetch_add_explicit(&p->audio_frames_played, k, memory_order_relaxed);
    return k;
}

/// Fills one period of s->mix whose first frame is heard at monotonic `t_hear`.
static void fill_period(mq_player *p, mq_audio_sync *s, double t_hear)
{
    const int n = p->period_frames;
    const double sr = p->sample_rate;
    double want, rate = mq_clock_rate(&p->clock);
    bool scheduled = mq_clock_schedule(&p->clock, t_hear, &want);
    bool published = false;
    check_generation(p, s);
    for (int i = 0; i < n;) {
        mq_pcm_block *b = scheduled ? mq_pcm_ring_peek(p->out) : NULL;
        if (!b) {
            if (scheduled)
                ring_empty(p, s, t_hear + i / sr, want + i * rate / sr, i);
            silence(p, i, n);
            return;
        }
        double next = b->pts + p->out->read_off * b->rate / sr; // media time of the next ring frame
        double err = next - (want + i * rate / sr);    // > 0: early, < 0: late
        // Unlocked we align to the sample (skip or wait exactly); locked we write on.
        double tol = s->locked ? MQ_LOCKED_TOLERANCE : 0.5 / sr;
        if (err < -tol) { // late: skip it
            int k = (int)lrint(-err * sr / b->rate), avail = b->frames - p->out->read_off;
            k = k > 0 ? k : 1;
            k = k < avail ? k : avail;
            mq_pcm_ring_consume(p->out, k);
            atomic_fetch_add_explicit(&p->audio_frames_dropped, k, memory_order_relaxed);
            s->locked = false;
            continue;
        }
        if (err > tol) { // early: silence until it is due
            if (!published) // nothing heard yet this period: the schedule is the clock (a jump back)
                mq_clock_invalidate_audio(&p->clock);
            int k = (int)lrint(err * sr);
            k = k < n - i ? (k > 0 ? k : 1) : n - i;
            silence(p, i, i + k);
            if (s->started)
                atomic_fetch_add_explicit(&p->audio_silence_frames, k, memory_order_relaxed);
            s->locked = false;
            i += k;
            continue;
        }
        if (!published) {
            mq_clock_publish_audio(&p->clock, t_hear + i / sr, next);
            published = true;
        }
        i += copy_block(p, b, i, n - i);
        s->locked = s->started = true;
        s->underrun = false;
    }
}

static void to_s16(mq_player *p)
{
    size_t n = (size_t)p->period_frames * (size_t)p->channels;
    for (size_t j = 0; j < n; j++) {
        float v = p->as.mix[j] * 32768.0f;
        v = v > 32767.0f ? 32767.0f : (v < -32768.0f ? -32768.0f : v);
        p->as.out[j] = (int16_t)lrintf(v);
    }
}

/// Virtual device for outputs that do not pace: frames written minus frames "played" since
/// virt_t0 at the output rate. Sleeps while more than a buffer is queued.
static bool virtual_room(mq_player *p, mq_audio_sync *s, double *now, double *delay)
{
    *now = mq_clock_now();
    double d = (double)s->virt_frames - (*now - s->virt_t0) * p->sample_rate;
    if (d < 0) { // we were late (preempted): the virtual device ran dry, restart it
        s->virt_t0 = *now;
        s->virt_frames = 0;
        d = 0;
    }
    double limit = p->buffer_frames - p->period_frames;
    if (d > limit) {
        mq_sleep_until(*now + (d - limit) / p->sample_rate);
        return false;
    }
    *delay = d;
    return true;
}

/// Waits until a period can be written; gives the time and the frames queued ahead of it.
static bool wait_room(mq_player *p, mq_audio_sync *s, double *now, double *delay)
{
    mq_audio_out *ao = p->ao;
    if (!s->paced)
        return virtual_room(p, s, now, delay);
    int ret = ao->driver->wait(ao, p->period_frames, 50);
    int64_t frames = 0;
    if (ret >= 0)
        ret = ao->driver->delay(ao, &frames);
    *now = mq_clock_now();
    if (ret < 0 || !ao->paced) { // failed, or found not to pace: keep time ourselves
        if (ret < 0)
            atomic_store(&p->audio_error, ret);
        s->paced = false;
        s->virt_t0 = *now;
        s->virt_frames = frames;
        return false;
    }
    *delay = (double)frames;
    return true;
}

void *mq_audio_thread_main(void *arg)
{
    mq_player *p = arg;
    mq_audio_sync *s = &p->as;
    s->virt_t0 = mq_clock_now();
    s->gen = atomic_load(&p->out->gen);
    bool device_ok = true;
    while (!atomic_load_explicit(&p->quit, memory_order_relaxed)) {
        double now, delay;
        if (!wait_room(p, s, &now, &delay))
            continue;
        atomic_store_explicit(&p->audio_delay, delay / p->sample_rate, memory_order_relaxed);
        fill_period(p, s, now + delay / p->sample_rate);
        to_s16(p);
        if (device_ok && p->ao->driver->write(p->ao, s->out, p->period_frames) < 0) {
            device_ok = false; // keep the clock running on the virtual device
            atomic_store(&p->audio_error, MQ_ERR_AUDIO_DEVICE);
            s->paced = false;
            s->virt_t0 = now;
            s->virt_frames = (int64_t)delay;
        }
        s->virt_frames += p->period_frames;
        if (p->ao->xruns != s->xruns_seen) {
            s->xruns_seen = p->ao->xruns;
            s->locked = false;
            atomic_fetch_add(&p->xruns, 1);
        }
    }
    return NULL;
}
