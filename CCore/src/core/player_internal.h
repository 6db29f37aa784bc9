#ifndef MQ_PLAYER_INTERNAL_H
#define MQ_PLAYER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "audio/audio_out.h"
#include "audio/pcm_ring.h"
#include "audio/stretch.h"
#include "core/clock.h"
#include "core/event_queue.h"
#include "input/segment_io.h"
#include "mixing/clip.h"
#include "mixing/mixer.h"
#include "mq_player.h"
#include "video/captions.h"
#include "video/frame_queue.h"
#include "video/video_out.h"

#define MQ_MAX_TRACKS 8
#define MQ_PCM_BLOCKS 64u
#define MQ_PCM_BLOCK_FRAMES 2048
#define MQ_OUT_BLOCKS 8u // the tempo stage's output ring: short, so a new rate is heard soon
#define MQ_OUT_BLOCK_FRAMES 1024
// Default video queue (video_queue_frames 0): up to 6 pictures, as many as fit in 4.5 MiB, at
// least 3 (720p: 3 of 1.4 MB; 1080p: 3 of 3.1 MB; SD: 6).
#define MQ_VIDEO_QUEUE_FRAMES 6
#define MQ_VIDEO_QUEUE_BYTES ((size_t)9 << 19)

typedef struct mq_player mq_player;

/// One input: a byte queue and the decode thread that demuxes and decodes it.
typedef struct mq_track {
    // immutable after create
    mq_player *player;
    int32_t id;
    mq_track_kind kind;
    mq_byte_queue *input;
    pthread_t thread;
    bool thread_started;
    // atomics: written by the thread named, read anywhere
    _Atomic double pts_offset;  // controlling thread (add_track, set_track_offset); the decode thread
                                // reads it, and stores the one a discontinuity carries
    _Atomic bool input_done;    // decode thread (everything of the ended input was decoded and
                                // handed on); the controlling thread clears it on reset_track
    _Atomic bool probed;        // controlling thread (set_track_container): a whole file (a still)
    _Atomic bool staged;        // controlling thread (add_staged_track; activate_tracks clears it):
                                // decoded ahead, the first picture or sound held until activated
    _Atomic double stage_start; // controlling thread: while staged, what ends before it is discarded
    _Atomic double held_pts;    // decode thread: the presentation time of the first picture or sound
                                // a staged track holds (NAN before; the controlling thread reads it)
} mq_track;

/// A mixer input that plays clips (inputs 1…MQ_MIXER_MAX_INPUTS−1; input 0 is the stream).
/// The controlling thread installs a clip by swapping `want`; the audio thread loads it once
/// per period. The replaced clip is retired, then freed once `audio_periods` shows the period
/// that may have loaded it is over (player.c, reap_clips): an epoch, no lock on the audio thread.
/// The clip's own `started`/`ended_seen` are the audio thread's per-clip state.
typedef struct mq_slot {
    _Atomic(mq_clip *) want; // controlling thread swaps (seq_cst); audio thread loads (seq_cst)
    _Atomic uint32_t ended;  // audio thread: clips that played to their end; monitor reads
    _Atomic int ended_error; // audio thread: the last ended clip's decode error (mq_err), 0 none
} mq_slot;

/// Audio thread (audio_thread.c) only while it runs: the master-clock loop's state and its
/// preallocated buffers (allocated by create, freed by destroy when the thread is stopped).
typedef struct mq_audio_sync {
    float *mix;                       // period × channels, preallocated: the stream (mixer input 0)
    float *clip[MQ_MIXER_MAX_INPUTS]; // period × channels each, preallocated: clip inputs 1…
    int16_t *out;                     // period × channels, preallocated
    bool locked;                      // writing stream audio continuously
    bool started;                     // stream audio began (silence after it is an underrun)
    bool underrun;                    // in an underrun episode
    bool paced;                       // the device paces us; else the virtual device below does
    double virt_t0;                   // virtual device: monotonic time of frame 0
    int64_t virt_frames;              // virtual device: frames written since virt_t0
    uint32_t gen;                     // `out` ring generation last seen
    uint32_t xruns_seen;              // ao->xruns last counted
    float tail[8];                    // the last stream frame mixed (channels ≤ 8); at a cut, the frame the
                                      // fade-out holds (a new generation, a jump, an underrun)
    int32_t decay_from;               // output index of this period the fade-out starts at
    int32_t decay_left;               // frames of that fade-out still to blend in, 0 none
    int32_t fadein_left;              // frames of the next stream audio's fade-in still to apply, 0 none
} mq_audio_sync;

/// Tempo thread (tempo_thread.c) only: the stage between the `pcm` and `out` rings.
typedef struct mq_tempo {
    mq_stretch st;           // open while stretching
    double media;            // presentation time of the next stretched frame
    uint32_t gen;            // `pcm` generation being passed on
    bool eof_passed;         // `out` was marked ended for this generation
    bool failed;             // the stretch could not be built: rate 1 from then on
    double trim;             // the speed-up (+) or slow-down (−) bringing the sound back onto the schedule, 0 none
    uint32_t moves_done;     // the timeline moves whose lag was trimmed away (or was too small to)
    uint32_t moves_trimming; // those of the trim under way
    int release_votes;       // readings in a row that end the trim (on the schedule, or past it)
    uint32_t reading_voted;  // the audio thread's reading (audio_readings) last counted in release_votes
    struct SwrContext *trim_swr; // open while trimming (libswresample's compensation, at the timeline's rate 1)
    double trim_media;           // presentation time of the next trimmed frame
    float *hist;                 // the last MQ_TRIM_HISTORY frames handed on (passed or trimmed), oldest first
    double hist_end;             // presentation time just after them, NAN none
} mq_tempo;

/// Video thread (video_thread.c) only: presentation bookkeeping.
typedef struct mq_video_state {
    uint32_t overlay_seen;      // overlay_gen last copied
    uint32_t label_seen;        // label_gen last copied (into vo->label)
    bool label_pending;         // a label was copied and no picture presented under it yet
    bool caption_pending;       // vo->caption changed and no picture presented with it yet
    mq_vo_overlay overlay_want; // copy of overlay_req, taken under lock
    double last_present_mono;   // when the last picture was presented, 0 before one
    double av_window_start;     // the second av_window_peak covers began (monotonic), 0 none
    double av_window_peak;      // the largest |A/V offset| in it so far, signed; NAN none
} mq_video_state;

/// Monitor thread (monitor_thread.c) only: what it has already turned into events.
typedef struct mq_monitor {
    uint32_t seen_underruns, seen_xruns;
    int seen_audio_error;
    bool ended_sent;
    uint32_t clips_ended[MQ_MIXER_MAX_INPUTS]; // each slot's `ended` last reported
} mq_monitor;

/// Clips swapped out and not yet freed: a retired clip is freed one audio period (10 ms) later,
/// so this many fill only when the audio thread finished no period during as many swaps.
#define MQ_RETIRED_CLIPS 32

/// The controlling thread (the caller of mq_player_*, one at a time) only.
typedef struct mq_control {
    bool started;
    bool audio_running, video_running, monitor_running, tempo_running;
    pthread_t audio_thread, video_thread, monitor_thread, tempo_thread;
    mq_clip *retired[MQ_RETIRED_CLIPS]; // swapped out, not yet freed (player.c, reap_clips)
} mq_control;

struct mq_player {
    // immutable after create (the pointed-to objects have their own contracts)
    int32_t sample_rate, channels, period_frames, buffer_frames;
    char *decoders;           // mq_player_config.decoders (copy), NULL: the default decoders
    int decode_threads;       // mq_player_config.decode_threads
    double decode_busy_limit; // mq_player_config.decode_busy_limit (0.5 by default)
    double demux_rollover;    // mq_player_config.demux_rollover (s, > 0)
    bool hide_join_still;     // mq_player_config.hide_join_still
    mq_audio_out *ao;         // audio thread uses it while it runs
    mq_video_out *vo;         // video thread uses it while it runs
    mq_event_queue *events;   // any thread pushes (locked inside), the controlling thread polls
    mq_pcm_ring *pcm;         // decoded stream audio: decode thread → tempo thread (SPSC)
    mq_pcm_ring *out;         // audio to play, stamped: tempo thread → audio thread (SPSC)
    mq_mixer *mixer;          // gains: controlling thread (its own command ring); mixing: audio thread
    mq_cc_queue cc;           // caption changes: video decode threads → video thread (locked inside)
    mq_frame_queue *vq;       // decoded pictures: video decode thread → video thread (locked inside)
    int sync_ok;              // which of lock/cond/snap_lock create initialised (for destroy)

    mq_slot slots[MQ_MIXER_MAX_INPUTS]; // [0] unused (the stream); see mq_slot

    // lock: the monitor holds it while it works and sleeps on cond between rounds
    pthread_mutex_t lock;
    pthread_cond_t cond;             // destroy broadcasts it to wake the monitor
    mq_track *tracks[MQ_MAX_TRACKS]; // added and removed under lock by the controlling thread (their
    int ntracks;                     // only writer, which reads them unlocked); others read under lock
    int32_t next_track_id;           // controlling thread: ids are never reused
    mq_vo_overlay overlay_req;       // written by mq_player_set_overlay, copied by the video thread;
                                     // overlay_gen is bumped after the write
    char label_req[MQ_VO_LABEL_MAX]; // written by mq_player_set_label, copied by the video thread;
                                     // label_gen is bumped after the write
    // snap_lock guards snap and snap_pts: the video thread moves each presented picture in
    // while keep_snap is set (no copy, no allocation), mq_player_snapshot_png takes a reference
    pthread_mutex_t snap_lock;
    struct AVFrame *snap; // allocated at create; empty (no buf) when there is none
    double snap_pts;      // its stream pts_time

    // atomics: written by the thread named, read anywhere
    _Atomic bool quit;                    // controlling thread (destroy)
    _Atomic uint32_t overlay_gen;         // controlling thread (set_overlay)
    _Atomic uint32_t label_gen;           // controlling thread (set_label)
    _Atomic int fit_req;                  // controlling thread (set_fit); the video thread applies it
    atomic_bool captions_req;             // controlling thread (set_captions); the video thread applies it
    _Atomic bool keep_snap;               // controlling thread (keep_last_picture)
    _Atomic int state;                    // monitor, controlling thread (start)
    _Atomic double wall_offset;           // controlling thread
    mq_clock clock;                       // timeline: controlling thread; audio: audio thread (seqlocks)
    _Atomic int64_t frames_decoded;       // video decode thread
    _Atomic int64_t frames_presented;     // video thread (due pictures: not the join's still)
    _Atomic bool still_offered;           // video decode thread: the join's still was queued
    _Atomic int64_t frames_dropped;       // video and video decode threads
    _Atomic int64_t audio_frames_played;  // audio thread
    _Atomic int64_t audio_frames_dropped; // audio and tempo threads (late input skipped)
    _Atomic int64_t audio_silence_frames; // audio thread
    _Atomic double audio_delay;           // audio thread, seconds
    _Atomic double
        audio_lag; // audio thread: the schedule's time minus the sound's at the last period written, NAN none
    _Atomic uint32_t audio_moves;    // audio thread: the timeline moves (mq_clock_moves) that lag was judged on
    _Atomic uint32_t audio_readings; // audio thread: lags published (a new reading when it changes)
    _Atomic double first_frame_mono; // video thread
    _Atomic double av_offset; // video thread: audio heard as the last picture became visible minus its pts, NAN none
    _Atomic double av_offset_peak;  // video thread: the largest |av_offset| of the last whole second, signed
    _Atomic int32_t width, height;  // video thread
    _Atomic uint32_t underruns;     // audio thread: count of underrun episodes
    _Atomic double underrun_media;  // audio thread: where the last one began
    _Atomic uint32_t xruns;         // audio thread: device xruns recovered
    _Atomic int audio_error;        // audio thread: last device error (mq_err), 0 none
    _Atomic int64_t drained_gen;    // audio thread: ring generation fully heard, -1 none
    _Atomic double drained_mono;    // audio thread: when its last sample is heard
    _Atomic uint64_t audio_periods; // audio thread: periods mixed (the clip-swap epoch, seq_cst)

    // each thread's own state: touched by that thread only (see each type)
    mq_control ctl;       // controlling thread
    mq_audio_sync as;     // audio thread
    mq_tempo tempo;       // tempo thread
    mq_video_state video; // video thread
    mq_monitor monitor;   // monitor thread
};

/// player_tracks.c: stops a track's decode thread (aborting its input) and frees the track.
void mq_track_destroy(mq_track **pt);
/// decode.c: the body of a track's decode thread.
void *mq_decode_thread_main(void *track);
/// audio_thread.c
int mq_audio_sync_init(mq_player *p);
void mq_audio_sync_uninit(mq_player *p);
void *mq_audio_thread_main(void *player);
/// tempo_thread.c
void *mq_tempo_thread_main(void *player);
/// monitor_thread.c
void *mq_monitor_thread_main(void *player);
/// video_thread.c
void *mq_video_thread_main(void *player);

/// A late picture not shown: counted as dropped once the first picture was presented (those
/// skipped on the way to the start position never were due).
static inline void mq_player_count_dropped(mq_player *p)
{
    if (atomic_load(&p->frames_presented) > 0)
        atomic_fetch_add(&p->frames_dropped, 1);
}

#endif
