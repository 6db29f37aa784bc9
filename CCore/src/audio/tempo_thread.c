#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/channel_layout.h>
#include <libswresample/swresample.h>

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
///
/// The trim: the audio thread writes on, without a cut, a sound up to 20 ms off the schedule; it
/// reports how far (`audio_lag`), and after a re-anchor of the timeline by a few ms, at rate 1,
/// this stage resamples by 0.1–0.2 % (libswresample's compensation: exact in time, a few cents in
/// pitch) until the sound is back on the schedule. The pictures follow the sound, so they come
/// back with it: boxes on one schedule show and sound the same instant to within a fraction of a
/// millisecond, not within the 20 ms a cut waits for.

#define MQ_FEED_FRAMES 1024   // input frames per atempo call
#define MQ_LATE_MARGIN 0.05   // input this far behind what is due now is dropped here
#define MQ_TEMPO_IDLE 0.01    // wait for input
#define MQ_TRIM_ENGAGE 2.5e-4 // seconds off the schedule the sound is trimmed from…
#define MQ_TRIM_RELEASE 1e-4  // …until within this (or past it)
#define MQ_TRIM_HISTORY 64    // frames kept of what was handed on: a trim's resampler starts on them
#define MQ_TRIM_CONFIRM 3     // readings in a row that end a trim (one is the audio thread's wake-up jitter)
#define MQ_LOAD_POLL 0.005    // how often a libavfilter still loading is looked at

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

/// How much sooner than the schedule the media queued in `out` will have been heard once it is
/// (seconds): what was stretched at another rate than the timeline's now (a rate just changed, a
/// trim). The audio thread's lag is of the oldest block; this is what the rest will add to it.
static double queued_gain(mq_player *p, double rate)
{
    mq_pcm_ring *r = p->out;
    uint32_t gen = atomic_load_explicit(&r->gen, memory_order_relaxed); // (all three are this thread's, but tail)
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    double gain = 0;
    for (uint32_t i = atomic_load_explicit(&r->tail, memory_order_acquire); i != head; i++) {
        const mq_pcm_block *b = &r->blocks[i & (r->nblocks - 1)]; // (a block freed meanwhile is intact: ours to reuse)
        if (b->gen == gen)
            gain += (b->rate - rate) * b->frames / p->sample_rate;
    }
    return gain;
}

/// The trim (0 none), at the timeline's rate 1 (a rate run keeps the sound where it is; the trim
/// follows it), after a move of the timeline (a re-anchor; not for a device's drift or its
/// delay's jitter, which the audio thread cuts at 20 ms: a sound left alone is bit-exact): from
/// the sound MQ_TRIM_ENGAGE off the schedule until it is within MQ_TRIM_RELEASE or past it, 0.2 %
/// while 1 ms or more, then 0.1 % (mpv's display resampling changes the sound's speed by up to
/// 0.125 %: 0.2 % is 3.5 cents): 4 ms in about 2.5 s. The lag is judged as it will be once what
/// `out` holds (~170 ms) has been heard, so the trim stops on time.
static double trim(mq_player *p, mq_tempo *t)
{
    uint32_t readings = atomic_load_explicit(&p->audio_readings, memory_order_acquire);
    uint32_t moves = atomic_load_explicit(&p->audio_moves, memory_order_acquire); // (then the lag judged on them)
    double lag = atomic_load_explicit(&p->audio_lag, memory_order_relaxed) - queued_gain(p, 1.0), size = fabs(lag);
    if (t->trim == 0) {
        if (moves == t->moves_done || isnan(lag))
            return 0;
        if (size < MQ_TRIM_ENGAGE) {
            t->moves_done = moves; // (close enough)
            return 0;
        }
        t->moves_trimming = moves;
        t->release_votes = 0;
    } else if (isnan(lag)) {
        return t->trim; // (no reading, e.g. a period of silence: carried on, judged at the next)
    } else if (size < MQ_TRIM_RELEASE || lag * t->trim <= 0) {
        // Ended on a few readings in a row: one read late by the audio thread's wake-up (a loaded
        // box) would otherwise end the trim for good halfway (a CI run: 2 ms of 4 left). A reading
        // counts once, however many blocks are trimmed before the next.
        if (readings != t->reading_voted) {
            t->reading_voted = readings;
            t->release_votes++;
        }
        if (t->release_votes < MQ_TRIM_CONFIRM)
            return t->trim;
        t->moves_done = t->moves_trimming; // (a move during the trim: trimmed again from there)
        return t->trim = 0;
    } else {
        t->release_votes = 0;
    }
    double step = size >= 1e-3 ? 0.002 : 0.001;
    return t->trim = lag > 0 ? step : -step; // behind: faster
}

/// Keeps the last MQ_TRIM_HISTORY frames handed on (`n` at `data`, ending at presentation time
/// `end`): a trim's resampler is started on them (not on silence: no click at its start).
static void remember(mq_player *p, mq_tempo *t, const float *data, int n, double end)
{
    const size_t ch = (size_t)p->channels, h = MQ_TRIM_HISTORY;
    if (!t->hist && !(t->hist = calloc(h * ch, sizeof(float)))) {
        t->hist_end = NAN;
        return;
    }
    size_t k = (size_t)n < h ? (size_t)n : h;
    memmove(t->hist, t->hist + k * ch, (h - k) * ch * sizeof(float));
    memcpy(t->hist + (h - k) * ch, data + ((size_t)n - k) * ch, k * ch * sizeof(float));
    t->hist_end = end;
}

/// Ends a trim: the frames its resampler still holds (its delay) are handed on as they are, from
/// the history (the join is within a frame's phase); `abrupt` (a flush, a jump) drops them.
static void trim_end(mq_player *p, mq_tempo *t, bool abrupt)
{
    if (!t->trim_swr)
        return;
    int64_t held = (int64_t)ceil((double)swr_get_delay(t->trim_swr, 1000LL * p->sample_rate) / 1000.0 - 1e-6);
    swr_free(&t->trim_swr);
    if (abrupt || !t->hist || !isfinite(t->hist_end) || held <= 0 || held > MQ_TRIM_HISTORY)
        return;
    mq_pcm_block *o = out_block(p, t);
    if (!o)
        return;
    const size_t ch = (size_t)p->channels;
    memcpy(o->data, t->hist + (size_t)(MQ_TRIM_HISTORY - held) * ch, (size_t)held * ch * sizeof(float));
    o->pts = t->hist_end - (double)held / p->sample_rate;
    o->rate = 1;
    o->frames = (int32_t)held;
    mq_pcm_ring_commit(p->out, t->hist_end);
}

/// Starts a trim's resampler at `start` (the next input frame's presentation time): primed with
/// the history when it ends there, its output for the history dropped.
static bool trim_open(mq_player *p, mq_tempo *t, double start)
{
    AVChannelLayout layout;
    av_channel_layout_default(&layout, p->channels);
    int sr = p->sample_rate;
    if (swr_alloc_set_opts2(&t->trim_swr, &layout, AV_SAMPLE_FMT_FLT, sr, &layout, AV_SAMPLE_FMT_FLT, sr, 0, NULL) <
            0 ||
        swr_init(t->trim_swr) < 0 || swr_set_compensation(t->trim_swr, 0, sr) < 0) {
        swr_free(&t->trim_swr);
        return false;
    }
    if (t->hist && fabs(t->hist_end - start) < 0.5 / sr) {
        const uint8_t *in[1] = {(const uint8_t *)t->hist};
        int got = swr_convert(t->trim_swr, NULL, 0, in, MQ_TRIM_HISTORY); // (held: nowhere to write)
        if (got < 0 || swr_drop_output(t->trim_swr, MQ_TRIM_HISTORY) < 0) {
            swr_free(&t->trim_swr);
            return false;
        }
    }
    t->trim_media = start;
    return true;
}

static void reset(mq_player *p, mq_tempo *t, uint32_t gen)
{
    mq_stretch_close(&t->st);
    t->gen = gen;
    t->eof_passed = false;
    t->trim = 0;
    trim_end(p, t, true);
    t->hist_end = NAN;
    mq_pcm_ring_flush(p->out); // the audio thread sees a new stream
}

static void pass(mq_player *p, mq_tempo *t, mq_pcm_block *b);

/// Hands on up to one out block of `b` resampled to play `trim` faster (− slower): its frames
/// stamped with the presentation times they carry (the input's, less what the resampler holds).
static void trim_pass(mq_player *p, mq_tempo *t, mq_pcm_block *b, double trim)
{
    const int sr = p->sample_rate, off = p->pcm->read_off;
    if (!t->trim_swr && !trim_open(p, t, b->pts + off * b->rate / sr)) {
        t->moves_done = t->moves_trimming; // (not tried again at every block: the next move tries)
        t->trim = 0;
        pass(p, t, b);
        return;
    }
    mq_pcm_block *o = out_block(p, t);
    if (!o)
        return;
    int cap = p->out->block_frames, n = b->frames - off, most = (int)(cap / (1 + fabs(trim))) - 32;
    n = n < most ? n : most; // (what comes out fits the block)
    const float *src = b->data + (size_t)off * (size_t)p->channels;
    const uint8_t *in[1] = {(const uint8_t *)src};
    uint8_t *out[1] = {(uint8_t *)o->data};
    int got = swr_set_compensation(t->trim_swr, (int)-lrint(trim / (1 + trim) * sr), sr);
    if (got >= 0)
        got = swr_convert(t->trim_swr, out, cap, in, n);
    if (got < 0) {
        trim_end(p, t, true);
        return; // (passed on from the next call)
    }
    double in_end = b->pts + (off + n) * b->rate / sr;
    remember(p, t, src, n, in_end);
    mq_pcm_ring_consume(p->pcm, n);
    double end = in_end - (double)swr_get_delay(t->trim_swr, 1000LL * sr) / (1000.0 * sr);
    if (got == 0)
        return; // (the block stays ours: acquired again next time)
    o->pts = t->trim_media;
    o->rate = (end - t->trim_media) * sr / got;
    o->frames = got;
    t->trim_media = end;
    mq_pcm_ring_commit(p->out, end);
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
    remember(p, t, o->data, n, o->pts + n * o->rate / p->sample_rate);
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
        if (ret == MQ_ERR_STATE) {
            // libavfilter still loading (on its own thread: a cold load on a loaded box took
            // seconds): nothing is handed on. Input that falls late meanwhile is dropped
            // (`drop_late`), what `out` holds plays out, then the audio thread runs dry and the
            // pictures follow the schedule, exact. (Handed on at rate 1 instead, the sound, and
            // the pictures that follow it, drifted up to the audio lock's 20 ms off a steered
            // schedule before each cut: a live test's latency 25 ms off in a CI run.)
            mq_sleep_until(mq_clock_now() + MQ_LOAD_POLL);
            return;
        }
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
    trim_end(p, t, true);
    t->hist_end = NAN;
    return true;
}

void *mq_tempo_thread_main(void *arg)
{
    mq_player *p = arg;
    // Above the video thread: it feeds the audio thread ~170 ms ahead, but time-stretching is
    // the heaviest work of the three (below the video thread, 19 players side by side had one
    // whose stretched sound all came too late to be played: every frame dropped).
    mq_thread_prefer_realtime(15);
    mq_tempo *t = &p->tempo;
    t->gen = atomic_load(&p->pcm->gen);
    t->hist_end = NAN;
    while (!quitting(p)) {
        uint32_t gen = atomic_load_explicit(&p->pcm->gen, memory_order_acquire);
        if (gen != t->gen)
            reset(p, t, gen);
        double rate = mq_clock_rate(&p->clock);
        bool want_stretch = mq_stretch_wanted(rate) && !t->failed;
        double trimmed = fabs(rate - 1.0) > MQ_RATE_EPSILON ? (t->trim = 0) : trim(p, t);
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
        if (want_stretch) {
            trim_end(p, t, false);
            t->hist_end = NAN; // (a stretch's stamps are its own: a trim after it starts on silence)
            stretch(p, t, b, rate);
        } else if (trimmed != 0)
            trim_pass(p, t, b, trimmed);
        else {
            trim_end(p, t, false);
            pass(p, t, b);
        }
    }
    mq_stretch_close(&t->st);
    swr_free(&t->trim_swr);
    free(t->hist);
    t->hist = NULL;
    return NULL;
}
