#ifndef MQ_PLAYER_INTERNAL_H
#define MQ_PLAYER_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "audio_out.h"
#include "clip.h"
#include "clock.h"
#include "event_queue.h"
#include "frame_queue.h"
#include "mixer.h"
#include "mq_player.h"
#include "pcm_ring.h"
#include "segment_io.h"
#include "stretch.h"
#include "video_out.h"

#define MQ_MAX_TRACKS 8
#define MQ_PCM_BLOCKS 64u
#define MQ_PCM_BLOCK_FRAMES 2048
#define MQ_OUT_BLOCKS 8u          // the tempo stage's output ring: short, so a new rate is heard soon
#define MQ_OUT_BLOCK_FRAMES 1024

typedef struct mq_player mq_player;

/// One input: a byte queue and the decode thread that demuxes and decodes it.
typedef struct mq_track {
    // immutable after create
    mq_player *player;
    int32_t id;
    mq_track_kind kind;
    _Atomic double pts_offset; // controlling thread (add, set_track_offset); decode thread reads
    mq_byte_queue *input;
    pthread_t thread;
    bool thread_started;
    // written by the decode thread, read anywhere
    _Atomic bool input_done; // everything of the ended input was decoded and handed on
} mq_track;

/// A mixer input that plays clips (inputs 1…MQ_MIXER_MAX_INPUTS−1; input 0 is the stream).
/// The controlling thread installs a clip by storing `want`; the audio thread picks it up at its
/// next period. A replaced clip is destroyed once `audio_periods` shows that a whole period
/// ended after the swap (no lock on the audio thread: an epoch, not a mutex).
typedef struct mq_slot {
    _Atomic(mq_clip *) want;     // controlling thread
    _Atomic uint32_t ended;      // audio thread: clips that played to their end
    _Atomic int ended_error;     // audio thread: the last ended clip's decode error (mq_err), 0 none
    // audio thread only
    mq_clip *cur;                // the clip being played
    bool started;                // cur has reached its start time
    bool ended_seen;
    // monitor thread only
    uint32_t ended_reported;
} mq_slot;

/// State of the audio (master clock) loop. Audio thread only.
typedef struct mq_audio_sync {
    float *mix;          // period × channels, preallocated: the stream (mixer input 0)
    float *clip[MQ_MIXER_MAX_INPUTS]; // period × channels each, preallocated: clip inputs 1…
    int16_t *out;        // period × channels, preallocated
    bool locked;         // writing stream audio continuously
    bool started;        // stream audio began (silence after it is an underrun)
    bool underrun;       // in an underrun episode
    bool paced;          // the device paces us; else the virtual device below does
    double virt_t0;      // virtual device: monotonic time of frame 0
    int64_t virt_frames; // virtual device: frames written since virt_t0
    uint32_t gen;        // ring generation last seen
    uint32_t xruns_seen;
} mq_audio_sync;

/// State of the tempo stage (tempo_thread.c). Tempo thread only.
typedef struct mq_tempo {
    mq_stretch st;   // open while stretching
    double media;    // presentation time of the next stretched frame
    uint32_t gen;    // `pcm` generation being passed on
    bool eof_passed; // `out` was marked ended for this generation
    bool failed;     // the stretch could not be built: rate 1 from then on
} mq_tempo;

struct mq_player {
    // immutable after create
    int32_t sample_rate, channels, period_frames, buffer_frames;
    char *decoders; // mq_player_config.decoders (copy), NULL: the default decoders
    int decode_threads; // mq_player_config.decode_threads
    double demux_rollover; // mq_player_config.demux_rollover (s, > 0)
    mq_audio_out *ao;
    mq_video_out *vo;
    mq_event_queue *events;
    mq_pcm_ring *pcm; // decoded stream audio: decode thread → tempo thread
    mq_pcm_ring *out; // audio to play, stamped: tempo thread → audio thread
    mq_mixer *mixer;  // gains: controlling thread; mixing: audio thread
    mq_slot slots[MQ_MIXER_MAX_INPUTS]; // [0] unused (the stream)
    mq_frame_queue *vq;
    int sync_ok;

    // protected by lock (monitor sleeps on cond)
    pthread_mutex_t lock;
    pthread_cond_t cond;
    mq_track *tracks[MQ_MAX_TRACKS];
    int ntracks;
    bool started, audio_running, video_running, monitor_running, tempo_running;
    pthread_t audio_thread, video_thread, monitor_thread, tempo_thread;

    // atomics: written by the thread named, read anywhere
    _Atomic bool quit;                 // controlling thread (destroy)
    _Atomic int state;                 // monitor, controlling thread
    _Atomic double wall_offset;        // controlling thread
    mq_clock clock;                    // timeline: controlling thread; audio: audio thread
    _Atomic int64_t frames_decoded;    // decode threads
    _Atomic int64_t frames_presented;  // video thread
    _Atomic int64_t frames_dropped;    // video and decode threads
    _Atomic int64_t audio_frames_played, audio_frames_dropped, audio_silence_frames; // audio (+decode)
    _Atomic double audio_delay;        // audio thread, seconds
    _Atomic double first_frame_mono;   // video thread
    _Atomic double av_offset;          // video thread: audio heard as the last picture became visible minus its pts, NAN none
    _Atomic double av_offset_peak;     // video thread: the largest |av_offset| of the last whole second, signed
    _Atomic int32_t width, height;     // video thread
    _Atomic uint32_t underruns;        // audio thread: count of underrun episodes
    _Atomic double underrun_media;     // audio thread: where the last one began
    _Atomic uint32_t xruns;            // audio thread: device xruns recovered
    _Atomic int audio_error;           // audio thread: last device error (mq_err), 0 none
    _Atomic int64_t drained_gen;       // audio thread: ring generation fully heard, -1 none
    _Atomic double drained_mono;       // audio thread: when its last sample is heard
    _Atomic uint64_t audio_periods;    // audio thread: periods mixed (the clip-swap epoch)

    // audio thread only
    mq_audio_sync as;

    // tempo thread only
    mq_tempo tempo;

    // overlay requested by mq_player_set_overlay: written under lock, overlay_gen bumped after
    mq_vo_overlay overlay_req;
    _Atomic uint32_t overlay_gen;

    // video thread only
    uint32_t overlay_seen;       // overlay_gen last copied
    mq_vo_overlay overlay_want;  // copy of overlay_req
    double last_present_mono;    // when the last picture was presented, 0 before one
    double av_window_start;      // the second av_window_peak covers began (monotonic), 0 none
    double av_window_peak;       // the largest |A/V offset| in it so far, signed; NAN none

    // monitor thread only
    uint32_t seen_underruns, seen_xruns;
    int seen_audio_error;
    bool ended_sent;
};

/// decode.c: the body of a track's decode thread.
void *mq_decode_thread_main(void *track);
/// audio_thread.c
int mq_audio_sync_init(mq_player *p);
void mq_audio_sync_uninit(mq_player *p);
void *mq_audio_thread_main(void *player);
/// tempo_thread.c
void *mq_tempo_thread_main(void *player);
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
