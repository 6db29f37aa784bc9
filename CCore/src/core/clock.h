#ifndef MQ_CLOCK_H
#define MQ_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/// Three doubles published by ONE writer and read by any thread without a lock (seqlock).
/// Readers never block the writer; the audio thread may be either side.
typedef struct mq_seq3 {
    _Atomic uint32_t seq;
    _Atomic double a, b, c;
} mq_seq3;

void mq_seq3_init(mq_seq3 *s, double a, double b, double c);
void mq_seq3_store(mq_seq3 *s, double a, double b, double c);
void mq_seq3_load(const mq_seq3 *s, double *a, double *b, double *c);

/// The player's clocks, all in presentation time (seconds).
typedef struct mq_clock {
    mq_seq3 timeline; // written by the controlling thread: (mono_anchor, media_anchor, rate); NAN anchor = unset
    mq_seq3 audio; // written by the audio thread only: (mono, media heard then, jumps + 1 when it was read; 0 invalid)
    _Atomic uint32_t jumps; // controlling thread: timelines that jumped (mq_clock_set_timeline)
    _Atomic uint32_t moves; // controlling thread: timelines that moved the time due by MQ_CLOCK_MOVE or more
} mq_clock;

void mq_clock_init(mq_clock *c);

/// Controlling thread: a new schedule. One that jumps (the time due now moves by more than
/// MQ_CLOCK_JUMP, or the first) makes the audio clock stale at once: the master clock is the
/// schedule until the audio thread hears the new timeline's media (a new item, a seek; without
/// it a picture due then would be judged on the old stream's sound for up to a period).
void mq_clock_set_timeline(mq_clock *c, double mono_anchor, double media_anchor, double rate);

/// Seconds the time due may move for a new schedule to be a jump.
#define MQ_CLOCK_JUMP 0.05
/// Seconds it moves for a new schedule to be a move (a re-anchor the sound is trimmed onto: a
/// rate change at the time due now is none).
#define MQ_CLOCK_MOVE 1e-4

/// The moves counted now (read by the audio thread before a period's media is judged).
uint32_t mq_clock_moves(const mq_clock *c);

/// Audio thread: the jumps counted now (read before a period's media is judged; given back
/// to `mq_clock_publish_audio`).
uint32_t mq_clock_jumps(const mq_clock *c);

/// The presentation time the schedule wants at monotonic `mono`; false before a timeline is set.
bool mq_clock_schedule(const mq_clock *c, double mono, double *media);

/// The current playback rate (1 when no timeline is set).
double mq_clock_rate(const mq_clock *c);

/// The master clock at `mono`: the audio clock once stream audio plays, else the schedule.
bool mq_clock_master(const mq_clock *c, double mono, double *media);

/// The audio clock alone at `mono`: false while no stream audio plays.
bool mq_clock_audio(const mq_clock *c, double mono, double *media);

/// Audio thread: media time `media` is heard at monotonic `mono`, judged on the schedule of
/// `jumps` (`mq_clock_jumps` when the period began).
void mq_clock_publish_audio(mq_clock *c, double mono, double media, uint32_t jumps);

/// Audio thread: no stream audio is playing (the master falls back to the schedule).
void mq_clock_invalidate_audio(mq_clock *c);

#endif
