#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/player_internal.h"
#include "core/thread.h"
#include "mq_err.h"

/// The audio thread: the master clock. It plays the tempo stage's ring (`out`, see tempo_thread.c).
/// Every period it works out when the next sample written
/// will be heard (device delay, or a virtual device for outputs that do not pace), asks the
/// schedule which presentation time is due then, and writes the PCM ring's samples so they
/// are heard on time (to the sample): late samples are skipped, early ones wait behind silence, and once
/// locked the stream is written continuously: an error under 20 ms is not cut (no click) but
/// published (`audio_lag`, with the timeline moves it was judged on), and after a re-anchor of
/// the timeline by a few ms the tempo stage plays the sound slightly faster or slower until it is
/// back on the schedule.
///
/// It NEVER allocates, locks, logs or calls back: it reads the SPSC ring and atomics, writes
/// the output, and reports through atomics that the monitor thread turns into events.

#define MQ_LOCKED_TOLERANCE 0.020 // seconds of drift tolerated once writing continuously
#define MQ_START_QUEUED 0.060     // seconds of sound queued before a stream's audio begins

int mq_audio_sync_init(mq_player *p)
{
    mq_audio_sync *s = &p->as;
    size_t n = (size_t)p->period_frames * (size_t)p->channels;
    s->mix = calloc(n, sizeof *s->mix);
    s->out = calloc(n, sizeof *s->out);
    bool ok = s->mix && s->out;
    for (int i = 1; i < MQ_MIXER_MAX_INPUTS; i++)
        ok = ok && (s->clip[i] = calloc(n, sizeof(float))) != NULL;
    s->paced = p->ao->paced;
    if (!ok)
        return MQ_ERR_NO_MEMORY;
    return mq_mixer_create(MQ_MIXER_MAX_INPUTS, p->channels, p->sample_rate, p->period_frames, &p->mixer);
}

void mq_audio_sync_uninit(mq_player *p)
{
    free(p->as.mix);
    free(p->as.out);
    p->as.mix = NULL;
    p->as.out = NULL;
    for (int i = 0; i < MQ_MIXER_MAX_INPUTS; i++) {
        free(p->as.clip[i]);
        p->as.clip[i] = NULL;
    }
    mq_mixer_destroy(&p->mixer);
}

static void silence(mq_player *p, int from, int to)
{
    if (to > from)
        memset(p->as.mix + (size_t)from * (size_t)p->channels, 0,
               (size_t)(to - from) * (size_t)p->channels * sizeof(float));
}

/// Frames a cut between two streams is smoothed over (5 ms).
static int32_t declick_frames(const mq_player *p)
{
    return p->sample_rate / 200;
}

/// The stream audio heard stops being continuous at output index `i` of this period (a new
/// generation, a jump of the schedule, an underrun): the last frame heard fades out over 5 ms
/// from there (into silence or what follows), and the next stream audio fades in. No click.
static void cut_at(mq_player *p, mq_audio_sync *s, int i)
{
    if (i > 0)
        for (int c = 0; c < p->channels && c < 8; c++)
            s->tail[c] = s->mix[(size_t)(i - 1) * (size_t)p->channels + (size_t)c];
    s->decay_from = i;
    s->decay_left = declick_frames(p);
    s->fadein_left = declick_frames(p);
}

static void check_generation(mq_player *p, mq_audio_sync *s)
{
    uint32_t gen = atomic_load_explicit(&p->out->gen, memory_order_acquire);
    if (gen == s->gen)
        return;
    s->gen = gen;   // the track was reset: a new stream starts
    if (s->started) // one was heard (its last frame is the last period's: `tail`)
        cut_at(p, s, 0);
    s->locked = s->started = s->underrun = false;
    mq_clock_invalidate_audio(&p->clock);
}

/// The new stream's first frames after a cut (`k` from output index `i`), ramped up from 0.
static void fade_in(mq_player *p, mq_audio_sync *s, int i, int k)
{
    const int ch = p->channels;
    const float d = (float)declick_frames(p);
    for (int j = i; j < i + k && s->fadein_left > 0; j++, s->fadein_left--) {
        float g = 1.0f - (float)s->fadein_left / d;
        for (int c = 0; c < ch; c++)
            s->mix[(size_t)j * (size_t)ch + (size_t)c] *= g;
    }
}

/// After a cut (`cut_at`), the last frame heard is blended out from the cut on (into silence,
/// or into what follows); then the period's last frame is kept.
static void declick(mq_player *p, mq_audio_sync *s)
{
    const int n = p->period_frames, ch = p->channels;
    const float d = (float)declick_frames(p);
    for (int i = s->decay_from; i < n && s->decay_left > 0; i++, s->decay_left--) {
        float w = (float)s->decay_left / d; // 1 → 0
        for (int c = 0; c < ch; c++) {
            float *m = &s->mix[(size_t)i * (size_t)ch + (size_t)c];
            *m = s->tail[c] * w + *m * (1.0f - w);
        }
    }
    s->decay_from = 0; // (a fade-out longer than the period goes on from the next one's start)
    for (int c = 0; c < ch && c < 8; c++)
        s->tail[c] = s->mix[(size_t)(n - 1) * (size_t)ch + (size_t)c];
}

/// Whether a stream's audio may begin at `want` (the presentation time then due):
/// ``MQ_START_QUEUED`` of it queued from `want` on, or all there will be (its end). Begun on its
/// first block, a start under load had 8 ms of silence after its first 21 ms (the second block
/// decoded late: a hole in the tone); begun on a few, the late block is one of them, and the
/// sound starts whole at the sample then due. Only what is due from `want` counts: the frames
/// before it are skipped (in step with the pictures), and counted, a start that had waited for
/// them under load played 16 ms and ran dry. Reads the consumer's own view: no lock, no wait.
static bool ready_to_begin(mq_player *p, double want)
{
    mq_pcm_ring *r = p->out;
    if (atomic_load_explicit(&r->eof, memory_order_acquire))
        return true;
    uint32_t gen = atomic_load_explicit(&r->gen, memory_order_acquire);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    const double sr = p->sample_rate;
    double ahead = 0; // seconds of output due from `want` on
    for (uint32_t t = tail; t != head && ahead < MQ_START_QUEUED; t++) {
        const mq_pcm_block *b = &r->blocks[t & (r->nblocks - 1)];
        if (b->gen != gen || !(b->rate > 0))
            continue;
        double from = b->pts + (t == tail ? r->read_off : 0) * b->rate / sr, to = b->pts + b->frames * b->rate / sr;
        if (to > want)
            ahead += (to - (from > want ? from : want)) / b->rate;
    }
    return ahead >= MQ_START_QUEUED;
}

/// Before a stream's audio begins: drops its blocks wholly before `want` (late already: they
/// would be skipped), so the ring has room for those due (full of late blocks, it never began).
static void drop_late_blocks(mq_player *p, double want)
{
    mq_pcm_block *b;
    while ((b = mq_pcm_ring_peek(p->out)) && b->rate > 0 && b->pts + b->frames * b->rate / p->sample_rate <= want) {
        int k = b->frames - p->out->read_off;
        mq_pcm_ring_consume(p->out, k);
        atomic_fetch_add_explicit(&p->audio_frames_dropped, k, memory_order_relaxed);
    }
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
    if (s->locked)
        cut_at(p, s, i); // the sound stops here
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
    memcpy(p->as.mix + (size_t)i * (size_t)p->channels, b->data + (size_t)p->out->read_off * (size_t)p->channels,
           (size_t)k * (size_t)p->channels * sizeof(float));
    mq_pcm_ring_consume(p->out, k);
    atomic_fetch_add_explicit(&p->audio_frames_played, k, memory_order_relaxed);
    return k;
}

static void fill_stream(mq_player *p, mq_audio_sync *s, double t_hear, double *t0, double *dt);

/// Fills one period of s->mix whose first frame is heard at monotonic `t_hear`. Gives the
/// presentation time due at its first frame (NAN without a schedule) and the step per frame.
static void fill_period(mq_player *p, mq_audio_sync *s, double t_hear, double *t0, double *dt)
{
    fill_stream(p, s, t_hear, t0, dt);
    declick(p, s);
}

static void fill_stream(mq_player *p, mq_audio_sync *s, double t_hear, double *t0, double *dt)
{
    const int n = p->period_frames;
    const double sr = p->sample_rate;
    uint32_t jumps = mq_clock_jumps(&p->clock), moves = mq_clock_moves(&p->clock); // before the schedule is read
    double want, rate = mq_clock_rate(&p->clock);
    bool scheduled = mq_clock_schedule(&p->clock, t_hear, &want);
    *t0 = scheduled ? want : NAN;
    *dt = rate / sr;
    bool published = false;
    check_generation(p, s);
    if (scheduled && !s->started) {
        drop_late_blocks(p, want); // (peeking drops a flushed stream's blocks too: room for the new one's)
        if (!ready_to_begin(p, want)) {
            silence(p, 0, n); // (leading silence: what is queued is heard once enough is)
            atomic_store_explicit(&p->audio_lag, NAN, memory_order_relaxed);
            return;
        }
    }
    for (int i = 0; i < n;) {
        mq_pcm_block *b = scheduled ? mq_pcm_ring_peek(p->out) : NULL;
        if (!b) {
            if (scheduled)
                ring_empty(p, s, t_hear + i / sr, want + i * rate / sr, i);
            silence(p, i, n);
            if (!published)
                atomic_store_explicit(&p->audio_lag, NAN, memory_order_relaxed);
            return;
        }
        double next = b->pts + p->out->read_off * b->rate / sr; // media time of the next ring frame
        double err = next - (want + i * rate / sr);             // > 0: early, < 0: late
        // Unlocked we align to the sample (skip or wait exactly); locked we write on.
        double tol = s->locked ? MQ_LOCKED_TOLERANCE : 0.5 / sr;
        if (err < -tol) { // late: skip it
            if (s->locked)
                cut_at(p, s, i); // (a jump of the schedule: the sound jumps)
            int k = (int)lrint(-err * sr / b->rate), avail = b->frames - p->out->read_off;
            k = k > 0 ? k : 1;
            k = k < avail ? k : avail;
            mq_pcm_ring_consume(p->out, k);
            atomic_fetch_add_explicit(&p->audio_frames_dropped, k, memory_order_relaxed);
            s->locked = false;
            continue;
        }
        if (err > tol) { // early: silence until it is due
            if (s->locked)
                cut_at(p, s, i); // (a jump of the schedule back: silence)
            if (!published)      // nothing heard yet this period: the schedule is the clock (a jump back)
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
            mq_clock_publish_audio(&p->clock, t_hear + i / sr, next, jumps);
            atomic_store_explicit(&p->audio_lag, -err, memory_order_relaxed);
            atomic_store_explicit(&p->audio_moves, moves, memory_order_release); // (after the lag it was judged on)
            atomic_fetch_add_explicit(&p->audio_readings, 1, memory_order_release);
            published = true;
        }
        int k = copy_block(p, b, i, n - i);
        if (s->fadein_left > 0)
            fade_in(p, s, i, k);
        i += k;
        s->locked = s->started = true;
        s->underrun = false;
    }
    if (!published) // (a period of silence before what is due)
        atomic_store_explicit(&p->audio_lag, NAN, memory_order_relaxed);
}

/// Fills clip input `i` for the period starting at presentation time `t0` (step `dt`); NULL when
/// it is silent (no clip, or not yet due). The clip loaded here is read only until mix_period
/// counts the period (the controlling thread frees a replaced clip after that: player.c).
static const float *fill_clip(mq_player *p, mq_audio_sync *s, int i, double t0, double dt)
{
    mq_slot *sl = &p->slots[i];
    mq_clip *c = atomic_load(&sl->want); // seq_cst, as the swap and audio_periods (reap_clips)
    if (!c)
        return NULL;
    const int n = p->period_frames, ch = p->channels;
    float *buf = s->clip[i];
    int k = 0;
    if (!c->started) {
        if (!isnan(c->start_at)) {
            if (isnan(t0))
                return NULL;
            double due = ceil((c->start_at - t0) / dt - 1e-6); // the first frame at or after start_at
            if (due >= n)
                return NULL;
            k = due > 0 ? (int)due : 0;
        }
        c->started = true;
        memset(buf, 0, (size_t)k * (size_t)ch * sizeof(float));
    }
    while (k < n) {
        mq_pcm_block *b = mq_pcm_ring_peek(c->ring);
        if (!b) {
            if (atomic_load_explicit(&c->ring->eof, memory_order_acquire) && !c->ended_seen) {
                c->ended_seen = true;
                atomic_store(&sl->ended_error, atomic_load(&c->error));
                atomic_fetch_add(&sl->ended, 1);
            }
            memset(buf + (size_t)k * (size_t)ch, 0, (size_t)(n - k) * (size_t)ch * sizeof(float));
            break;
        }
        int avail = b->frames - c->ring->read_off, m = avail < n - k ? avail : n - k;
        memcpy(buf + (size_t)k * (size_t)ch, b->data + (size_t)c->ring->read_off * (size_t)ch,
               (size_t)m * (size_t)ch * sizeof(float));
        mq_pcm_ring_consume(c->ring, m);
        k += m;
    }
    return buf;
}

/// Mixes the stream (s->mix) with the clip inputs into s->out.
static void mix_period(mq_player *p, mq_audio_sync *s, double t0, double dt)
{
    const float *in[MQ_MIXER_MAX_INPUTS] = {s->mix};
    for (int i = 1; i < MQ_MIXER_MAX_INPUTS; i++)
        in[i] = fill_clip(p, s, i, t0, dt);
    mq_mixer_process(p->mixer, in, p->period_frames, t0, dt, s->out, MQ_SAMPLE_S16);
    atomic_fetch_add(&p->audio_periods, 1); // seq_cst, after the last read of a clip this period
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
    mq_thread_prefer_realtime(20); // the clock every picture is judged by: first of the three
    mq_audio_sync *s = &p->as;
    s->virt_t0 = mq_clock_now();
    s->gen = atomic_load(&p->out->gen);
    bool device_ok = true;
    while (!atomic_load_explicit(&p->quit, memory_order_relaxed)) {
        double now, delay;
        if (!wait_room(p, s, &now, &delay))
            continue;
        atomic_store_explicit(&p->audio_delay, delay / p->sample_rate, memory_order_relaxed);
        double t0, dt;
        fill_period(p, s, now + delay / p->sample_rate, &t0, &dt);
        mix_period(p, s, t0, dt);
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
