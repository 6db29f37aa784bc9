// The track input (byte queue + blocking AVIOContext + box scanner) on a real ffmpeg-made
// fMP4: bytes pushed in odd-sized chunks from another thread come out of avio_read exactly;
// a second init segment is a session boundary (EOF there, then the next session); garbage and
// a truncated segment are reported corrupt; a reset cancels a blocked reader and the queue
// takes new bytes after it; a segment skipped before the next arrives is followed by the init
// segment and the next; an init segment pushed while the last one is being injected again (a
// rendition switch during a skip or a rollover) never changes the bytes injected; one copy of
// the bytes pushed to two queues is read whole by each (a muxed transport stream's tracks).
//
//   segment_io_test <stream.mp4>      exit 0 when every check passed

#include <pthread.h>

#include <libavformat/avio.h>
#include <libavutil/error.h>

#include "input/segment_io.h"
#include "mq_err.h"
#include "test_util.h"

static const uint8_t *media;
static size_t media_size;

typedef struct pusher {
    mq_byte_queue *q;
    int copies;
    bool end;
} pusher;

/// Pushes `copies` copies of the media in chunks of 1, 7, 4093, ... bytes, then ends.
static void *push_main(void *arg)
{
    pusher *ps = arg;
    static const size_t sizes[] = {1, 7, 4093, 13, 65536, 333, 2};
    size_t k = 0;
    for (int c = 0; c < ps->copies; c++) {
        for (size_t off = 0; off < media_size;) {
            size_t n = sizes[k++ % (sizeof sizes / sizeof sizes[0])];
            n = n > media_size - off ? media_size - off : n;
            mq_byte_queue_push(ps->q, media + off, n);
            off += n;
            if (k % 64 == 0)
                mqt_sleep(0.0005); // let the reader block now and then
        }
    }
    if (ps->end)
        mq_byte_queue_end(ps->q);
    return NULL;
}

/// Reads one session through a fresh AVIOContext; returns the byte count (or -1), the last
/// avio_read error in *err.
static long read_session(mq_byte_queue *q, uint8_t *out, size_t cap, int *err)
{
    AVIOContext *pb = NULL;
    if (mq_segment_io_open(q, &pb) < 0)
        return -1;
    long total = 0;
    int n;
    while ((n = avio_read(pb, out + total, (int)(cap - (size_t)total > 65536 ? 65536 : cap - (size_t)total))) > 0)
        total += n;
    *err = n;
    mq_segment_io_close(&pb);
    CHECK(pb == NULL, "close clears the pointer");
    return total;
}

static void test_chunks_and_boundary(void)
{
    mq_byte_queue *q = NULL;
    CHECK(mq_byte_queue_create(&q) == MQ_OK, "create");
    uint8_t *out = malloc(media_size * 2 + 1);
    pusher ps = {.q = q, .copies = 2, .end = true};
    pthread_t th;
    pthread_create(&th, NULL, push_main, &ps);
    CHECK(mq_byte_queue_wait(q) == MQ_INPUT_DATA, "bytes arrive");
    int err = 0;
    long n = read_session(q, out, media_size * 2 + 1, &err);
    CHECK(n == (long)media_size, "first session: %ld bytes of %zu", n, media_size);
    CHECK(err == AVERROR_EOF, "EOF (never 0) at the boundary: %d", err);
    CHECK(n > 0 && memcmp(out, media, (size_t)n) == 0, "first session byte-exact");
    CHECK(mq_byte_queue_wait(q) == MQ_INPUT_BOUNDARY, "stopped at the new init segment");
    mq_byte_queue_pass_boundary(q);
    n = read_session(q, out, media_size * 2 + 1, &err);
    CHECK(n == (long)media_size && memcmp(out, media, media_size) == 0, "second session byte-exact (%ld)", n);
    CHECK(err == AVERROR_EOF, "EOF at the end");
    pthread_join(th, NULL);
    CHECK(mq_byte_queue_wait(q) == MQ_INPUT_ENDED, "ended");
    CHECK(mq_byte_queue_push(q, media, 8) == MQ_ERR_CLOSED, "push after end is refused");
    free(out);
    mq_byte_queue_destroy(&q);
    CHECK(q == NULL, "destroy clears the pointer");
}

static void test_garbage(void)
{
    mq_byte_queue *q = NULL;
    mq_byte_queue_create(&q);
    static const uint8_t junk[] = "\x00\x00\x00\x10<html>not a box at all</html>";
    mq_byte_queue_push(q, junk, sizeof junk);
    CHECK(mq_byte_queue_wait(q) == MQ_INPUT_CORRUPT, "garbage is corrupt at once");
    CHECK(strlen(mq_byte_queue_corrupt_reason(q)) > 0, "with a reason");
    uint8_t buf[64];
    int err = 0;
    long n = read_session(q, buf, sizeof buf, &err);
    CHECK(n == 0 && err == AVERROR_INVALIDDATA, "the reader gets INVALIDDATA (%ld, %d)", n, err);
    mq_byte_queue_fail(q);
    CHECK(mq_byte_queue_state(q) != MQ_INPUT_ENDED, "failed input is not an end");
    mq_byte_queue_end(q);
    CHECK(mq_byte_queue_state(q) == MQ_INPUT_ENDED, "ended once its input ends");
    mq_byte_queue_destroy(&q);
}

static void test_truncated(void)
{
    mq_byte_queue *q = NULL;
    mq_byte_queue_create(&q);
    mq_byte_queue_push(q, media, media_size - 100); // the last box cut short
    mq_byte_queue_end(q);
    uint8_t *out = malloc(media_size);
    int err = 0;
    long n = read_session(q, out, media_size, &err);
    CHECK(err == AVERROR_INVALIDDATA, "a cut segment ends in INVALIDDATA, not a clean EOF (%d)", err);
    CHECK(n > 0 && n < (long)media_size - 100, "the complete boxes before it are readable (%ld)", n);
    CHECK(strstr(mq_byte_queue_corrupt_reason(q), "truncated") != NULL, "reason: %s", mq_byte_queue_corrupt_reason(q));
    free(out);
    mq_byte_queue_destroy(&q);
}

static void *reset_later(void *arg)
{
    mqt_sleep(0.2);
    mq_byte_queue_reset(arg);
    return NULL;
}

static void test_reset(void)
{
    mq_byte_queue *q = NULL;
    mq_byte_queue_create(&q);
    size_t half = media_size / 2;
    mq_byte_queue_push(q, media, half);
    uint8_t *out = malloc(media_size);
    pthread_t th;
    pthread_create(&th, NULL, reset_later, q);
    int err = 0;
    long n = read_session(q, out, media_size, &err); // blocks for more, until the reset
    pthread_join(th, NULL);
    CHECK(n == (long)half && err == AVERROR_EOF, "a reset wakes the blocked reader with EOF (%ld, %d)", n, err);
    CHECK(mq_byte_queue_state(q) == MQ_INPUT_RESET, "reset pending");
    CHECK(atomic_load(mq_byte_queue_cancel_flag(q)) && mq_segment_io_interrupt(q) == 1, "cancel raised");
    mq_byte_queue_ack_reset(q);
    CHECK(!atomic_load(mq_byte_queue_cancel_flag(q)) && mq_segment_io_interrupt(q) == 0, "cancel cleared");
    mq_byte_queue_push(q, media, media_size);
    mq_byte_queue_end(q);
    n = read_session(q, out, media_size, &err);
    CHECK(n == (long)media_size && memcmp(out, media, media_size) == 0, "new bytes after the reset (%ld)", n);
    free(out);
    mq_byte_queue_abort(q);
    CHECK(mq_byte_queue_wait(q) == MQ_INPUT_ABORTED, "abort wins");
    mq_byte_queue_destroy(&q);
}

typedef struct shared_reader {
    mq_byte_queue *q;
    uint8_t *out;
    long n;
    int err;
} shared_reader;

static void *shared_read_main(void *arg)
{
    shared_reader *r = arg;
    r->n = mq_byte_queue_wait(r->q) == MQ_INPUT_DATA ? read_session(r->q, r->out, media_size + 1, &r->err) : -1;
    return NULL;
}

/// One copy of the bytes for two queues (a muxed transport stream's audio and video tracks):
/// each reads them all, in its own time, on its own thread; a chunk outlives the queue that
/// refused it, was reset or was destroyed while the other still reads it (ASan: no leak, no
/// use after free).
static void test_shared_chunks(void)
{
    mq_byte_queue *a = NULL, *b = NULL, *ended = NULL;
    mq_byte_queue_create(&a), mq_byte_queue_create(&b), mq_byte_queue_create(&ended);
    mq_byte_queue_end(ended);
    shared_reader ra = {.q = a, .out = malloc(media_size + 1)}, rb = {.q = b, .out = malloc(media_size + 1)};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, shared_read_main, &ra);
    pthread_create(&tb, NULL, shared_read_main, &rb);
    static const size_t sizes[] = {5, 4093, 1, 65536, 777};
    int refused = 0;
    size_t k = 0;
    for (size_t off = 0; off < media_size; k++) {
        size_t n = sizes[k % (sizeof sizes / sizeof sizes[0])];
        n = n > media_size - off ? media_size - off : n;
        mq_chunk *c = mq_chunk_create(media + off, n, 3);
        CHECK(c != NULL, "a chunk for three");
        CHECK(mq_byte_queue_push_ref(a, mq_chunk_place(c, 0)) == MQ_OK, "pushed to a");
        refused += mq_byte_queue_push_ref(ended, mq_chunk_place(c, 2)) == MQ_ERR_CLOSED;
        CHECK(mq_byte_queue_push_ref(b, mq_chunk_place(c, 1)) == MQ_OK, "pushed to b");
        off += n;
        if (k % 16 == 0)
            mqt_sleep(0.0005);
    }
    mq_byte_queue_end(a), mq_byte_queue_end(b);
    pthread_join(ta, NULL), pthread_join(tb, NULL);
    CHECK(refused == (int)k, "an ended queue refuses every chunk (%d of %zu)", refused, k);
    CHECK(ra.n == (long)media_size && memcmp(ra.out, media, media_size) == 0, "a read it all exactly (%ld)", ra.n);
    CHECK(rb.n == (long)media_size && memcmp(rb.out, media, media_size) == 0, "b read it all exactly (%ld)", rb.n);
    // Held by two, one resets (its places released) and the other is destroyed unread.
    mq_byte_queue *c1 = NULL, *c2 = NULL;
    mq_byte_queue_create(&c1), mq_byte_queue_create(&c2);
    for (int i = 0; i < 4; i++) {
        mq_chunk *c = mq_chunk_create(media, 1000, 2);
        mq_byte_queue_push_ref(c1, mq_chunk_place(c, 0));
        mq_byte_queue_push_ref(c2, mq_chunk_place(c, 1));
    }
    mq_byte_queue_reset(c1);
    mq_byte_queue_ack_reset(c1);
    mq_byte_queue_destroy(&c2);
    mq_byte_queue_push(c1, media, media_size);
    mq_byte_queue_end(c1);
    shared_reader r1 = {.q = c1, .out = ra.out};
    shared_read_main(&r1);
    CHECK(r1.n == (long)media_size && memcmp(r1.out, media, media_size) == 0, "after the reset, the new bytes only");
    mq_byte_queue_destroy(&c1), mq_byte_queue_destroy(&a), mq_byte_queue_destroy(&b), mq_byte_queue_destroy(&ended);
    free(ra.out), free(rb.out);
}

/// Offset of the n-th (0-based) top-level box of `type` in the test media, or -1.
static long box_at(const char *type, int n)
{
    return mqt_box_offset(media, media_size, type, n);
}

/// A cut segment skipped before the next one arrives (live: the next is still being fetched):
/// the next is read after the init segment, exactly as if it had been there at the skip.
static void test_skip_before_next(void)
{
    long f1 = box_at("moof", 0), f2 = box_at("moof", 1);
    CHECK(f1 > 0 && f2 > f1, "two fragments (%ld, %ld)", f1, f2);
    if (f1 <= 0 || f2 <= f1)
        return;
    mq_byte_queue *q = NULL;
    mq_byte_queue_create(&q);
    mq_byte_queue_push_init(q, media, (size_t)f1);
    mq_byte_queue_end_segment(q);
    mq_byte_queue_push(q, media + f1, (size_t)(f2 - f1) / 2); // cut short
    mq_byte_queue_end_segment(q);
    uint8_t *out = malloc(media_size * 2);
    int err = 0;
    long n = read_session(q, out, media_size * 2, &err);
    CHECK(n >= f1 && n < f2 && err == AVERROR_INVALIDDATA, "the init segment, then INVALIDDATA (%ld, %d)", n, err);
    CHECK(mq_byte_queue_state(q) == MQ_INPUT_CORRUPT, "corrupt");
    mq_byte_queue_skip_segment(q); // nothing after the cut one yet
    mq_byte_queue_push(q, media + f2, media_size - (size_t)f2);
    mq_byte_queue_end_segment(q);
    mq_byte_queue_end(q);
    n = read_session(q, out, media_size * 2, &err);
    long want = f1 + (long)media_size - f2;
    CHECK(n == want && err == AVERROR_EOF, "init + the next segment (%ld of %ld bytes, %d)", n, want, err);
    CHECK(n == want && memcmp(out, media, (size_t)f1) == 0 &&
              memcmp(out + f1, media + f2, media_size - (size_t)f2) == 0,
          "byte-exact");
    free(out);
    mq_byte_queue_destroy(&q);
}

/* ---- an init segment replaced while it is being injected (issue #36, item 8) ---- */

/// A growable byte string of synthetic top-level boxes (the scanner sees only their headers).
typedef struct bytes {
    uint8_t *data;
    size_t len;
} bytes;

/// Appends a box of `type` whose `payload` bytes follow the pattern `seed`.
static void add_box(bytes *b, const char *type, size_t payload, uint8_t seed)
{
    size_t size = 8 + payload;
    b->data = realloc(b->data, b->len + size);
    uint8_t *p = b->data + b->len;
    p[0] = (uint8_t)(size >> 24), p[1] = (uint8_t)(size >> 16), p[2] = (uint8_t)(size >> 8), p[3] = (uint8_t)size;
    memcpy(p + 4, type, 4);
    for (size_t i = 0; i < payload; i++)
        p[8 + i] = (uint8_t)(seed + i * 7 + (i >> 8));
    b->len += size;
}

/// An init segment of `size` bytes or a little more (ftyp, free, moov), bytes after `seed`.
static bytes make_init(size_t size, uint8_t seed)
{
    bytes b = {0};
    add_box(&b, "ftyp", 16, seed);
    if (size > 24 + 8 + 16 + 8)
        add_box(&b, "free", size - (24 + 8 + 16 + 8), (uint8_t)(seed + 1));
    add_box(&b, "moov", 16, (uint8_t)(seed + 2));
    return b;
}

static bytes make_segment(size_t payload, uint8_t seed)
{
    bytes b = {0};
    add_box(&b, "moof", 64, seed);
    add_box(&b, "mdat", payload, (uint8_t)(seed + 1));
    return b;
}

/// Reads the session through a fresh AVIOContext: `first` bytes, then `between(q, k)` for each
/// k < `steps` each followed by `chunk` more bytes, then the rest to EOF. Returns the count.
static long read_with_pushes(mq_byte_queue *q, uint8_t *out, size_t cap, int first, int chunk, int steps,
                             void (*between)(mq_byte_queue *, int), int *err)
{
    AVIOContext *pb = NULL;
    if (mq_segment_io_open(q, &pb) < 0)
        return -1;
    long total = 0;
    int n = avio_read(pb, out, first); // the AVIO's 32 KiB buffer takes that much of the injection
    total += n > 0 ? n : 0;
    for (int k = 0; k < steps && n > 0; k++) {
        between(q, k);
        n = avio_read(pb, out + total, chunk);
        total += n > 0 ? n : 0;
    }
    while (n > 0 && (size_t)total < cap) {
        size_t want = cap - (size_t)total > 65536 ? 65536 : cap - (size_t)total;
        n = avio_read(pb, out + total, (int)want);
        total += n > 0 ? n : 0;
    }
    *err = n;
    mq_segment_io_close(&pb);
    return total;
}

static bytes small_init, huge_init, big_init;

/// Mid-injection: a rendition switch to a smaller init, then to one over the 4 MiB kept.
static void push_smaller_then_huge(mq_byte_queue *q, int k)
{
    const bytes *b = k == 0 ? &small_init : &huge_init;
    CHECK(mq_byte_queue_push_init(q, b->data, b->len) == MQ_OK, "push init %d mid-injection", k);
    mq_byte_queue_end_segment(q);
}

/// Mid-injection: a switch to a larger init (in place, it would have mixed its bytes in).
static void push_larger(mq_byte_queue *q, int k)
{
    (void)k;
    CHECK(mq_byte_queue_push_init(q, big_init.data, big_init.len) == MQ_OK, "push larger init mid-injection");
    mq_byte_queue_end_segment(q);
}

static bool starts_with(const uint8_t *out, long n, const bytes *a, const bytes *b)
{
    return n == (long)(a->len + b->len) && memcmp(out, a->data, a->len) == 0 &&
           memcmp(out + a->len, b->data, b->len) == 0;
}

/// After a skip: the old init (100 kB, read in several AVIO reads) is injected before the next
/// segment; a smaller init and then one over the limit are pushed while it is read. The reader
/// gets exactly the old init then the segment, then EOF at the new init; each new init is a
/// session of its own after that.
static void test_init_replaced_during_skip_injection(void)
{
    bytes init = make_init(100000, 11), seg_a = make_segment(4000, 40), seg_b = make_segment(50000, 90);
    mq_byte_queue *q = NULL;
    mq_byte_queue_create(&q);
    mq_byte_queue_push_init(q, init.data, init.len);
    mq_byte_queue_end_segment(q);
    mq_byte_queue_push(q, seg_a.data, 40); // cut inside its moof: damaged from its start
    mq_byte_queue_end_segment(q);
    size_t cap = init.len + seg_a.len + seg_b.len + huge_init.len;
    uint8_t *out = malloc(cap);
    int err = 0;
    long n = read_with_pushes(q, out, cap, 65536, 0, 0, NULL, &err);
    CHECK(n == (long)init.len && err == AVERROR_INVALIDDATA, "the init, then the damage (%ld, %d)", n, err);
    mq_byte_queue_skip_segment(q);
    mq_byte_queue_push(q, seg_b.data, seg_b.len);
    mq_byte_queue_end_segment(q);
    CHECK(mq_byte_queue_state(q) == MQ_INPUT_DATA, "the injection is due");
    n = read_with_pushes(q, out, cap, 1000, 40000, 2, push_smaller_then_huge, &err);
    CHECK(starts_with(out, n, &init, &seg_b), "exactly the old init then the segment (%ld of %zu bytes)", n,
          init.len + seg_b.len);
    CHECK(err == AVERROR_EOF && mq_byte_queue_wait(q) == MQ_INPUT_BOUNDARY, "EOF at the new init (%d)", err);
    mq_byte_queue_pass_boundary(q);
    mq_byte_queue_end(q);
    n = read_with_pushes(q, out, cap, 65536, 0, 0, NULL, &err); // (no media between: one session)
    CHECK(starts_with(out, n, &small_init, &huge_init) && err == AVERROR_EOF,
          "then the two new inits, read once as pushed (%ld)", n);
    CHECK(!mq_byte_queue_request_rollover(q), "an init over the limit is not kept for a resync");
    free(out);
    free(init.data), free(seg_a.data), free(seg_b.data);
    mq_byte_queue_destroy(&q);
}

/// At a rollover the init is injected again; a larger init pushed while that is read does not
/// change the bytes read (no mix of the two), and a later injection uses the new one.
static void test_init_replaced_during_rollover_injection(void)
{
    bytes init = make_init(70000, 3), seg1 = make_segment(3000, 20), seg2 = make_segment(3000, 30);
    mq_byte_queue *q = NULL;
    mq_byte_queue_create(&q);
    mq_byte_queue_push_init(q, init.data, init.len);
    mq_byte_queue_end_segment(q);
    mq_byte_queue_push(q, seg1.data, seg1.len);
    mq_byte_queue_end_segment(q);
    CHECK(mq_byte_queue_request_rollover(q), "rollover asked (at the init's end)");
    size_t cap = 2 * init.len + seg1.len + big_init.len;
    uint8_t *out = malloc(cap);
    int err = 0;
    long n = read_with_pushes(q, out, cap, 65536, 0, 0, NULL, &err);
    CHECK(n == (long)init.len && err == AVERROR_EOF && mq_byte_queue_wait(q) == MQ_INPUT_ROLLOVER,
          "stopped at the rollover (%ld)", n);
    mq_byte_queue_pass_rollover(q);
    n = read_with_pushes(q, out, cap, 1000, 1000, 1, push_larger, &err);
    CHECK(starts_with(out, n, &init, &seg1), "exactly the old init then the segment (%ld of %zu bytes)", n,
          init.len + seg1.len);
    CHECK(err == AVERROR_EOF && mq_byte_queue_wait(q) == MQ_INPUT_BOUNDARY, "EOF at the new init (%d)", err);
    mq_byte_queue_pass_boundary(q);
    mq_byte_queue_push(q, seg2.data, seg2.len);
    mq_byte_queue_end_segment(q);
    mq_byte_queue_push(q, seg2.data, 40); // cut short: skipped, then the new init injected
    mq_byte_queue_end_segment(q);
    mq_byte_queue_push(q, seg1.data, seg1.len);
    mq_byte_queue_end_segment(q);
    mq_byte_queue_end(q);
    n = read_with_pushes(q, out, cap, 65536, 0, 0, NULL, &err);
    CHECK(starts_with(out, n, &big_init, &seg2) && err == AVERROR_INVALIDDATA, "the new init and its segment (%ld)", n);
    mq_byte_queue_skip_segment(q);
    n = read_with_pushes(q, out, cap, 65536, 0, 0, NULL, &err);
    CHECK(starts_with(out, n, &big_init, &seg1) && err == AVERROR_EOF, "after a skip: the new init injected (%ld)", n);
    free(out);
    free(init.data), free(seg1.data), free(seg2.data);
    mq_byte_queue_destroy(&q);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: segment_io_test <stream.mp4>\n");
        return 2;
    }
    uint8_t *file = mqt_read_file(argv[1], &media_size);
    if (!file || media_size < 1000) {
        fprintf(stderr, "cannot read %s\n", argv[1]);
        return 2;
    }
    media = file;
    test_chunks_and_boundary();
    test_garbage();
    test_truncated();
    test_reset();
    test_shared_chunks();
    test_skip_before_next();
    small_init = make_init(200, 60);
    huge_init = make_init(((size_t)4 << 20) + 4096, 70); // over MQ_MAX_INIT (4 MiB)
    big_init = make_init(150000, 80);
    test_init_replaced_during_skip_injection();
    test_init_replaced_during_rollover_injection();
    free(small_init.data), free(huge_init.data), free(big_init.data);
    free(file);
    return mqt_done("segment_io_test");
}
