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
//           bit 3     the byte queue alone, scripted (below): no player, no thread
//           bit 4     rendition switches: a later segment that starts with an init box (ftyp,
//                     moov) is pushed with mq_player_push_init, replacing the kept init while
//                     the decode thread may be injecting the old one (after damage, a rollover)
//
// The scripted byte queue (byte 1 bit 3; byte 0 bit 0: MPEG-TS, else fMP4): each segment's
// first byte is an operation, the rest its bytes. One thread pushes and reads through the
// AVIOContext (reading only what is there: mq_byte_queue_poll), so an init segment is replaced
// at an exact point of an injection of the last one (issue #36, item 8). Operation bits:
//   0-2  0 push; 1 push_init (a rendition switch); 2 push in two halves, the reads between;
//        3 a discontinuity (mq_byte_queue_mark_stream), then push; 4 push_init of an init over
//        the 4 MiB kept (ftyp + a large free box; the segment's bytes unused); 5 reset, then
//        push; 6-7 push
//   3    end the segment after it
//   4    ask for a rollover (a fresh session at the next segment end) before the reads
//   5-6  reads after it: 0, 1, 3, 8
//   7    reads of 97 bytes (many inside one injection), else of up to 40000 (a whole AVIO buffer)
// The reader acts as the decode thread does (pass a boundary or a rollover, skip damage once
// its segment end is marked, acknowledge a reset); after a rollover it checks that the bytes
// injected are the init segment kept when it began. Any mismatch or stall aborts.
//
// Built by cmake (-DMQ_FUZZ=ON, see cmake/fuzz.cmake) and run by scripts/fuzz.

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libavformat/avio.h>
#include <libavutil/frame.h>

#include "audio/pcm_ring.h"
#include "core/player_internal.h"
#include "input/segment_io.h"
#include "mq_err.h"
#include "mq_player.h"
#include "video/frame_queue.h"

#define MQ_FUZZ_SEPARATOR "MQ-SEGMENT"
#define MQ_FUZZ_STALL_S 20.0
#define MQ_FUZZ_MAX_INIT ((size_t)4 << 20) // byte_queue.c's MQ_MAX_INIT: a larger one is not kept
#define MQ_FUZZ_HUGE_INITS 3               // per input (each is 4 MiB queued)

typedef struct fuzz_input {
    const uint8_t *data;
    size_t size;
    bool ts, init_plain, marks, rollover, switches;
    int tracks;   // 0 video, 1 audio, 2 both
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
    while (mq_player_poll_event(p, &ev) > 0) {
    }
}

static bool all_done(mq_player *p)
{
    for (int i = 0; i < p->ntracks; i++)
        if (!atomic_load(&p->tracks[i]->input_done))
            return false;
    return true;
}

/// A segment that begins with an init box (what a rendition switch brings first).
static bool starts_init(const uint8_t *seg, size_t len)
{
    return len >= 8 && (memcmp(seg + 4, "ftyp", 4) == 0 || memcmp(seg + 4, "moov", 4) == 0);
}

static void feed(mq_player *p, const int32_t *tracks, int ntracks, const fuzz_input *in)
{
    const uint8_t *seg;
    size_t len, at = 0;
    for (int n = 0; next_segment(in, &at, &seg, &len); n++) {
        for (int i = 0; i < ntracks; i++) {
            if (!in->ts && ((n == 0 && !in->init_plain) || (n > 0 && in->switches && starts_init(seg, len))))
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

/* ---- the byte queue alone, scripted (byte 1 bit 3) ---- */

typedef struct script {
    mq_byte_queue *q;
    AVIOContext *pb; // the reader's session (NULL between sessions)
    uint8_t buf[40000];
    bool marked;   // no byte pushed since the last segment end: every damage has its end
    uint8_t *kept; // the init segment the queue keeps (push_init of 1 byte … 4 MiB)
    size_t kept_len, kept_cap;
    uint8_t *expect; // after a rollover: the init the injection must deliver
    size_t expect_len, expect_pos, expect_cap;
    int huge_left;
} script;

static void copy_into(uint8_t **dst, size_t *cap, const uint8_t *src, size_t len)
{
    if (len > *cap) {
        uint8_t *grown = realloc(*dst, len);
        if (!grown)
            abort();
        *dst = grown;
        *cap = len;
    }
    if (len)
        memcpy(*dst, src, len);
}

static void script_push_init(script *s, const uint8_t *data, size_t len)
{
    mq_byte_queue_push_init(s->q, data, len);
    bool kept = len > 0 && len <= MQ_FUZZ_MAX_INIT;
    if (kept)
        copy_into(&s->kept, &s->kept_cap, data, len);
    s->kept_len = kept ? len : 0;
    s->marked = len == 0 && s->marked;
}

static void script_push(script *s, const uint8_t *data, size_t len)
{
    mq_byte_queue_push(s->q, data, len);
    s->marked = len == 0 && s->marked;
}

/// A well-formed init segment over the size the queue keeps: ftyp, a large free box, moov.
static const uint8_t *huge_init(size_t *len)
{
    static uint8_t *b;
    static const size_t size = MQ_FUZZ_MAX_INIT + 4096;
    if (!b) {
        if (!(b = calloc(1, size)))
            abort();
        static const uint8_t ftyp[24] = {0, 0, 0, 24, 'f', 't', 'y', 'p', 'i', 's', 'o', '6'};
        size_t free_len = size - 24 - 16;
        memcpy(b, ftyp, sizeof ftyp);
        uint8_t *f = b + 24;
        f[0] = (uint8_t)(free_len >> 24), f[1] = (uint8_t)(free_len >> 16), f[2] = (uint8_t)(free_len >> 8),
        f[3] = (uint8_t)free_len;
        memcpy(f + 4, "free", 4);
        for (size_t i = 8; i < free_len; i++)
            f[i] = (uint8_t)(i * 13);
        uint8_t *m = f + free_len;
        m[3] = 16;
        memcpy(m + 4, "moov", 4);
    }
    *len = size;
    return b;
}

static void script_close(script *s)
{
    mq_segment_io_close(&s->pb);
}

/// One read as the decode thread's demuxer would make it; at the session's end, what the
/// decode thread does at that state. Never blocks.
static void script_read(script *s, int size)
{
    int n = 0, st = MQ_INPUT_DATA;
    if (s->pb && s->pb->buf_ptr < s->pb->buf_end)
        n = avio_read_partial(s->pb, s->buf, size); // what the AVIO buffered
    else if ((st = mq_byte_queue_poll(s->q)) < 0)
        return; // nothing yet: the read would block
    else if (st == MQ_INPUT_DATA) {
        if (!s->pb && mq_segment_io_open(s->q, &s->pb) < 0)
            abort();
        n = avio_read_partial(s->pb, s->buf, size);
        if (n <= 0) {
            fprintf(stderr, "segment_fuzz: a read with bytes waiting returned %d\n", n);
            abort();
        }
    }
    if (n > 0) {
        size_t check = s->expect_len - s->expect_pos < (size_t)n ? s->expect_len - s->expect_pos : (size_t)n;
        if (check && memcmp(s->buf, s->expect + s->expect_pos, check) != 0) {
            fprintf(stderr,
                    "segment_fuzz: the init injected at a rollover differs from the one kept then "
                    "(at byte %zu of %zu)\n",
                    s->expect_pos, s->expect_len);
            abort();
        }
        s->expect_pos += check;
        return;
    }
    script_close(s); // the session ends here (EOF or damage)
    s->expect_len = s->expect_pos = 0;
    switch (st) {
    case MQ_INPUT_BOUNDARY:
        mq_byte_queue_pass_boundary(s->q);
        break;
    case MQ_INPUT_ROLLOVER:
        mq_byte_queue_pass_rollover(s->q); // the kept init is read again first
        copy_into(&s->expect, &s->expect_cap, s->kept, s->kept_len);
        s->expect_len = s->kept_len;
        break;
    case MQ_INPUT_CORRUPT:
        if (s->marked) // (else the skip would wait for the segment's end)
            mq_byte_queue_skip_segment(s->q);
        break;
    case MQ_INPUT_RESET:
        mq_byte_queue_ack_reset(s->q);
        break;
    default:
        break;
    }
}

static void script_reads(script *s, uint8_t op)
{
    static const int counts[4] = {0, 1, 3, 8};
    for (int i = 0; i < counts[(op >> 5) & 3]; i++)
        script_read(s, op & 0x80 ? 97 : (int)sizeof s->buf);
}

static void run_script(const fuzz_input *in)
{
    script *s = calloc(1, sizeof *s);
    if (!s || mq_byte_queue_create(&s->q) < 0)
        abort();
    s->marked = true;
    s->huge_left = MQ_FUZZ_HUGE_INITS;
    mq_byte_queue_set_container(s->q, in->ts ? MQ_CONTAINER_MPEGTS : MQ_CONTAINER_FMP4);
    const uint8_t *seg;
    size_t len, at = 0;
    while (next_segment(in, &at, &seg, &len)) {
        if (len == 0)
            continue;
        uint8_t op = seg[0];
        seg++, len--;
        switch (op & 7) {
        case 1:
            script_push_init(s, seg, len);
            break;
        case 2:
            script_push(s, seg, len / 2);
            script_reads(s, op);
            script_push(s, seg + len / 2, len - len / 2);
            break;
        case 3:
            mq_byte_queue_mark_stream(s->q, NAN);
            script_push(s, seg, len);
            break;
        case 4:
            if (s->huge_left-- > 0) {
                size_t n;
                const uint8_t *h = huge_init(&n);
                script_push_init(s, h, n);
            }
            break;
        case 5:
            mq_byte_queue_reset(s->q);
            script_close(s);
            s->kept_len = s->expect_len = s->expect_pos = 0;
            s->marked = true;
            script_reads(s, 0x20); // the acknowledgement
            mq_byte_queue_set_container(s->q, in->ts ? MQ_CONTAINER_MPEGTS : MQ_CONTAINER_FMP4);
            script_push(s, seg, len);
            break;
        default:
            script_push(s, seg, len);
            break;
        }
        if (op & 8) {
            mq_byte_queue_end_segment(s->q);
            s->marked = true;
        }
        if (op & 0x10)
            mq_byte_queue_request_rollover(s->q);
        script_reads(s, op);
    }
    mq_byte_queue_end(s->q);
    s->marked = true; // (a skip no longer waits once the input ended)
    for (long i = 0; mq_byte_queue_poll(s->q) != MQ_INPUT_ENDED || (s->pb && s->pb->buf_ptr < s->pb->buf_end); i++) {
        if (i > 10000000) {
            fprintf(stderr, "segment_fuzz: the reader did not reach the end of the scripted input\n");
            abort();
        }
        script_read(s, (int)sizeof s->buf);
    }
    script_close(s);
    mq_byte_queue_destroy(&s->q);
    free(s->kept);
    free(s->expect);
    free(s);
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
        .switches = data[1] & 16,
    };
    if (data[1] & 8) {
        run_script(&in);
        return 0;
    }
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
