// libFuzzer target of the C core's segment input, demux and decode path (issue #14): a player
// with the null audio and headless video outputs gets the input as a track's segments through
// the public API (fMP4: an init segment then media segments; or MPEG-TS), the input is ended,
// and the decode thread must come to the end of it. The harness drains the decoded pictures and
// sound as fast as they come (the output threads are not started: no real-time pacing), so a
// decode thread that does not finish within MQ_FUZZ_STALL_S is a stall, reported as a crash.
//
// Input: two option bytes, then the segments, separated by MQ_FUZZ_SEPARATOR.
//   byte 0  bit 0     MPEG-TS (else fMP4: the first segment is the init segment)
//           bits 1-2  tracks: 0 video, 1 audio, 2-3 both (fed the same bytes, as a muxed HLS .ts)
//           bits 3-7  0: each segment pushed whole; n: in chunks of n * 37 bytes
//   byte 1  bit 0     demux_rollover of 0.05 s (a fresh demuxer after every segment or so)
//           bit 1     no segment ends marked (one continuous input)
//           bit 2     the init segment pushed as a plain push (no copy kept for resyncs)
//
// Built by cmake (-DMQ_FUZZ=ON, see cmake/fuzz.cmake) and run by scripts/fuzz.

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libavutil/frame.h>

#include "frame_queue.h"
#include "mq_err.h"
#include "mq_player.h"
#include "pcm_ring.h"
#include "player_internal.h"

#define MQ_FUZZ_SEPARATOR "MQ-SEGMENT"
#define MQ_FUZZ_STALL_S 20.0

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
    bool ts, init_plain, marks, rollover;
    int tracks; // 0 video, 1 audio, 2 both
    size_t chunk; // 0: whole segments
} fuzz_input;

/// The next segment of `in` from `*at` (advanced past it and its separator); false at the end.
static bool next_segment(const fuzz_input *in, size_t *at, const uint8_t **seg, size_t *len)
{
    if (*at > in->size || (*at == in->size && in->size > 0))
        return false;
    const uint8_t *start = in->data + *at;
    size_t left = in->size - *at;
    const uint8_t *sep = memmem(start, left, MQ_FUZZ_SEPARATOR, strlen(MQ_FUZZ_SEPARATOR));
    *seg = start;
    *len = sep ? (size_t)(sep - start) : left;
    *at += *len + (sep ? strlen(MQ_FUZZ_SEPARATOR) : left + 1);
    return true;
}

static void push(mq_player *p, int32_t track, const uint8_t *data, size_t size, size_t chunk)
{
    if (chunk == 0) {
        mq_player_push(p, track, data, size);
        return;
    }
    for (size_t at = 0; at < size; at += chunk)
        mq_player_push(p, track, data + at, size - at < chunk ? size - at : chunk);
}

/// What the output threads would take: every queued picture and block of sound.
static void drain(mq_player *p)
{
    mq_vframe head, next, v;
    while (mq_frame_queue_peek(p->vq, &head, &next) > 0 && mq_frame_queue_pop(p->vq, head.frame, &v)) {
        av_frame_free(&v.frame);
        mq_frame_queue_release(p->vq);
    }
    mq_pcm_block *b;
    while ((b = mq_pcm_ring_peek(p->pcm)) != NULL)
        mq_pcm_ring_consume(p->pcm, b->frames - p->pcm->read_off);
    mq_event ev;
    while (mq_player_poll_event(p, &ev) > 0) {}
}

static bool all_done(mq_player *p)
{
    for (int i = 0; i < p->ntracks; i++)
        if (!atomic_load(&p->tracks[i]->input_done))
            return false;
    return true;
}

static void feed(mq_player *p, const int32_t *tracks, int ntracks, const fuzz_input *in)
{
    const uint8_t *seg;
    size_t len, at = 0;
    for (int n = 0; next_segment(in, &at, &seg, &len); n++) {
        for (int i = 0; i < ntracks; i++) {
            if (n == 0 && !in->ts && !in->init_plain)
                mq_player_push_init(p, tracks[i], seg, len);
            else
                push(p, tracks[i], seg, len, in->chunk);
            if (in->marks)
                mq_player_end_segment(p, tracks[i]);
        }
    }
    for (int i = 0; i < ntracks; i++)
        mq_player_end_track(p, tracks[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    fuzz_input in = {
        .data = data + 2,
        .size = size - 2,
        .ts = data[0] & 1,
        .tracks = (data[0] >> 1) & 3,
        .chunk = (size_t)(data[0] >> 3) * 37,
        .rollover = data[1] & 1,
        .marks = !(data[1] & 2),
        .init_plain = data[1] & 4,
    };
    mq_player_config cfg = {
        .audio_out = "null",
        .video_out = "headless",
        .video_queue_frames = 8,
        .decode_threads = 1,
        .demux_rollover = in.rollover ? 0.05 : 0,
    };
    mq_player *p = NULL;
    if (mq_player_create(&cfg, &p) < 0)
        abort();
    int32_t tracks[2];
    int ntracks = 0;
    if (in.tracks != 1 && mq_player_add_track(p, MQ_TRACK_VIDEO, 0, &tracks[ntracks++]) < 0)
        abort();
    if (in.tracks != 0 && mq_player_add_track(p, MQ_TRACK_AUDIO, 0, &tracks[ntracks++]) < 0)
        abort();
    for (int i = 0; i < ntracks; i++)
        if (in.ts && mq_player_set_track_container(p, tracks[i], MQ_CONTAINER_MPEGTS) < 0)
            abort();
    feed(p, tracks, ntracks, &in);

    double deadline = mq_clock_now() + MQ_FUZZ_STALL_S;
    for (;;) {
        drain(p);
        if (all_done(p))
            break;
        if (mq_clock_now() > deadline) {
            fprintf(stderr, "segment_fuzz: a decode thread did not reach the end of its input in %.0f s\n",
                    MQ_FUZZ_STALL_S);
            abort();
        }
        nanosleep(&(struct timespec){.tv_nsec = 100000}, NULL);
    }
    drain(p);
    mq_player_destroy(&p);
    return 0;
}
