#ifndef MQ_DECODE_INTERNAL_H
#define MQ_DECODE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <libavcodec/avcodec.h>
#include <libswresample/swresample.h>

#include "core/player_internal.h"
#include "input/demux.h"

/// A track's decode thread, shared by decode.c (the thread: demuxer sessions, the codec, the
/// decode loop) and decode_deliver.c (what comes out handed on: pictures, sound, a staged
/// track's first sound held).

#define MQ_HELD_AUDIO 12 // frames a staged audio track decodes ahead (AAC at 48 kHz: 256 ms)
#define MQ_HELD_VIDEO 3  // pictures a staged video track decodes ahead

typedef struct mq_decoder {
    // decode thread only (lives on its stack)
    mq_track *t;
    mq_player *p;
    mq_demux *dmx;
    AVCodecContext *codec;
    AVPacket *pkt;
    AVFrame *frame;
    SwrContext *swr;
    int swr_rate, swr_format, swr_channels; // input the resampler was set up for
    double next_pts;                        // expected pts of the next picture (no pts)
    double late_until;                      // late pictures ending by here are counted dropped
    bool decode_error_reported;             // once per session
    bool format_reported;                   // TRACK_FORMAT sent for this session
    bool fallback_reported;                 // DECODER_FALLBACK sent (once per track)
    bool rolled;                            // the last session ended at a rollover: keep the codec
    double session_start;                   // media time of the session's first packet (NAN: none yet)
    bool rollover_asked;                    // for this session
    // Auto threads (decode_threads 0): a video decoder opened with one thread measures how much
    // of real time its decoding takes; over MQ_BUSY_WINDOW of media it must stay under
    // decode_busy_limit, else it is reopened with frame threads at the next keyframe (a slow
    // board, a heavy stream), or opened so at the next session, and stays so for the track's life.
    double busy, busy_media; // wall seconds decoding, media seconds decoded (window)
    bool want_threads;       // reopen with frame threads at the next keyframe
    bool threaded;           // auto threads escalated for good
    // A staged audio track's first sound, decoded ahead (mq_player_add_staged_track): handed on
    // at activation, so the ring starts with more than one frame (a busy machine's decode thread
    // may come late for the second: an underrun right after the cut).
    AVFrame *held[MQ_HELD_AUDIO];
    double held_pts[MQ_HELD_AUDIO]; // each one's media time (s), as deliver_audio takes it
    int nheld;
    // A staged video track's first pictures, likewise: the one due at the entry is often the
    // one before the instant (shown at once on the cut), and the next is due a frame later at
    // most, sooner than a busy box decodes it after the cut.
    mq_vframe held_video[MQ_HELD_VIDEO];
    int nheld_video;
    // Closed captions in the pictures (CEA-608 in A/53 user data): made at the first picture
    // that carries them; `cc_none` once this FFmpeg turned out to have no decoder for them.
    mq_cc_decoder *cc;
    bool cc_none;
} mq_decoder;

/// decode.c
void mq_decode_post_error(mq_decoder *d, int code, const char *what);
/// decode_deliver.c
bool mq_decode_late_mark(mq_decoder *d, double *clock);
double mq_decode_picture_seconds(const mq_decoder *d, int64_t duration);
int mq_decode_push_audio(mq_decoder *d, const AVFrame *f, double pts);
void mq_decode_free_held(mq_decoder *d);
int mq_decode_settle_held(mq_decoder *d);
int mq_decode_deliver(mq_decoder *d, AVFrame *f);

#endif
