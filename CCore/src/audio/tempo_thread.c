#include <math.h>
#include <string.h>

#include "core/log.h"
#include "core/player_internal.h"
#include "core/thread.h"
#include "mq_err.h"

/// The tempo stage, between the decoded PCM ring (`pcm`, media time) and the ring the audio
/// thread plays (`out`, output time). At playback rate 1 it passes blocks through untouched
/// (bit-exact). At any other rate of the timeline it time-stretches them with libavfilter's
/// `atempo` (pitch kept) and stamps each output block with the presentation time of its first
/// frame and the rate, so the audio clock stays true while the rate steers latency.
///
/// `out` is kept short (MQ_OUT_BLOCKS × MQ_OUT_BLOCK_FRAMES, ~170 ms at 48 kHz) so a new rate
/// is heard within that. This thread may allocate (libavfilter); the audio thread still never does.

#define MQ_RATE_EPSILON 1e-6 // closer to 1 than this is rate 1: pass through
#define MQ_FEED_FRAMES 1024  // input frames per atempo call
#define MQ_LATE_MARGIN 0.05  // input this far behind what is due now is dropped here
#define MQ_TEMPO_IDLE 0.01   // wait for input

static bool quitting(mq_player *p)
{
    return atomic_load_explicit(&p->quit, memory_order_relaxed);
}

/// Waits for room in `out` (full: seconds of sound ahead of the audio thread, which frees a
/// block each block's duration; it never signals).
static void wait_room(mq_player *p)
{
    mq_sleep_until(mq_clock_now() + (double)p->out->block_frames / p->sample_rate);
}

/// Waits for a free block of `out`; NULL when quitting or the input was flushed meanwhile.
static mq_pcm_block *out_block(mq_player *p, mq_tempo *t)
{
    for (;;) {
        mq_pcm_block *b = mq_pcm_ring_acquire(p->out);
        if (b || quitting(p) || atomic_load_explicit(&p->pcm->gen, memory_order_acquire) != t->gen)
            return b;
        wait_room(p);
    }
}

/// Moves what atempo has ready into `out` (all of it when `all`, e.g. after a flush).
static void collect(mq_player *p, mq_tempo *t, bool all)
{
    for (;;) {
        if (!all && mq_pcm_ring_acquire(p->out) == NULL)
            return; // full: the rest waits in the filter
        mq_pcm_block *b = out_block(p, t);
        if (!b)
            return;
        int n = mq_stretch_receive(&t->st, b->data, p->out->block_frames);
        if (n <= 0)
            return;
        b->pts = t->media;
        b->rate = t->st.tempo;
        b->frames = n;
        t->media += n * t->st.tempo / p->sample_rate;
        mq_pcm_ring_commit(p->out, t->media);
    }
}

/// Ends a stretch run: everything atempo holds comes out, then blocks pass through again.
static void stop_stretching(mq_player *p, mq_tempo *t)
{
    if (!t->st.graph)
        return;
    mq_stretch_feed(&t->st, NULL, 0);
    collect(p, t, true);
    mq_stretch_close(&t->st);
}

static void reset(mq_player *p, mq_tempo *t, uint32_t gen)
{
    mq_stretch_close(&t->st);
    t->gen = gen;
    t->eof_passed = false;
    mq_pcm_ring_flush(p->out); // the audio thread sees a new stream
}

/// Passes up to one out block of `b` through unchanged.
static void pass(mq_player *p, mq_tempo *t, mq_pcm_block *b)
{
    mq_pcm_block *o = out_block(p, t);
    if (!o)
        return;
    int off = p->pcm->read_off, avail = b->frames - off;
    int n = avail < p->out->block_frames ? avail : p->out->block_frames;
    memcpy(o->data, b->data + (size_t)off * (size_t)p->channels, (size_t)n * (size_t)p->channels * sizeof(float));
    o->pts = b->pts + off * b->rate / p->sample_rate;
    o->rate = b->rate;
    o->frames = n;
    mq_pcm_ring_consume(p->pcm, n);
    mq_pcm_ring_commit(p->out, o->pts + n * o->rate / p->sample_rate);
}

/// Feeds up to MQ_FEED_FRAMES of `b` to atempo at `rate` and collects what comes out.
static void stretch(mq_player *p, mq_tempo *t, mq_pcm_block *b, double rate)
{
    if (mq_pcm_ring_acquire(p->out) == NULL) {
        wait_room(p);
        return;
    }
    int off = p->pcm->read_off;
    if (!t->st.graph) {
        int ret = mq_stretch_open(&t->st, p->sample_rate, p->channels, rate);
        if (ret < 0) {
            if (!t->failed)
                mq_log(MQ_LOG_ERROR, "tempo: cannot time-stretch (%s): playing at rate 1", mq_err_string(ret));
            t->failed = true;
            pass(p, t, b);
            return;
        }
        t->media = b->pts + off / (double)p->sample_rate; // output frame 0 is this input frame
    } else if (mq_stretch_set_tempo(&t->st, rate) < 0) {
        stop_stretching(p, t);
        return;
    }
    int n = b->frames - off < MQ_FEED_FRAMES ? b->frames - off : MQ_FEED_FRAMES;
    if (mq_stretch_feed(&t->st, b->data + (size_t)off * (size_t)p->channels, n) < 0) {
        stop_stretching(p, t);
        return;
    }
    mq_pcm_ring_consume(p->pcm, n);
    collect(p, t, false);
}

/// Drops what is already late: media before what the schedule wants now (minus a margin) can
/// only be skipped by the audio thread, and skipping it here lets the audio thread start on
/// time after a late start or a jump. Returns true when it dropped frames.
static bool drop_late(mq_player *p, mq_tempo *t, mq_pcm_block *b)
{
    double due;
    if (!mq_clock_schedule(&p->clock, mq_clock_now(), &due))
        return false;
    int off = p->pcm->read_off;
    double next = b->pts + off * b->rate / p->sample_rate;
    double late = due - MQ_LATE_MARGIN - next;
    if (!(late > 0))
        return false;
    int avail = b->frames - off, k = (int)(late * p->sample_rate / b->rate) + 1;
    k = k < avail ? k : avail;
    mq_pcm_ring_consume(p->pcm, k);
    atomic_fetch_add_explicit(&p->audio_frames_dropped, k, memory_order_relaxed);
    mq_stretch_close(&t->st); // a jump: a stretch run restarts where playback resumes
    return true;
}

void *mq_tempo_thread_main(void *arg)
{
    mq_player *p = arg;
    mq_tempo *t = &p->tempo;
    t->gen = atomic_load(&p->pcm->gen);
    while (!quitting(p)) {
        uint32_t gen = atomic_load_explicit(&p->pcm->gen, memory_order_acquire);
        if (gen != t->gen)
            reset(p, t, gen);
        double rate = mq_clock_rate(&p->clock);
        bool want_stretch = fabs(rate - 1.0) > MQ_RATE_EPSILON && rate >= 0.5 && rate <= 2.0 && !t->failed;
        if (!want_stretch)
            stop_stretching(p, t);
        mq_pcm_block *b = mq_pcm_ring_peek(p->pcm);
        if (b && b->gen != t->gen) { // flushed since the check above: the new stream's, after a reset
            reset(p, t, b->gen);
            continue;
        }
        if (!b) {
            if (atomic_load(&p->pcm->eof) && !t->eof_passed) {
                stop_stretching(p, t);
                t->eof_passed = true;
                atomic_store(&p->out->eof, true);
            }
            mq_sleep_until(mq_clock_now() + MQ_TEMPO_IDLE);
            continue;
        }
        if (drop_late(p, t, b))
            continue;
        if (want_stretch)
            stretch(p, t, b, rate);
        else
            pass(p, t, b);
    }
    mq_stretch_close(&t->st);
    return NULL;
}
