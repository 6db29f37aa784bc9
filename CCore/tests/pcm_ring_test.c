// The PCM ring (decode thread → audio thread): argument checks, order, partial reads, the
// full/empty edges, a flush (generation change) that makes queued blocks stale, and a
// two-thread stress run whose consumer checks every sample of every block in order.
//
//   pcm_ring_test        exit 0 when every check passed

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>

#include "audio/pcm_ring.h"
#include "mq_err.h"
#include "test_util.h"

static void fill(mq_pcm_ring *r, mq_pcm_block *b, float v, int32_t frames, double pts)
{
    for (int32_t i = 0; i < frames * r->channels; i++)
        b->data[i] = v;
    b->frames = frames;
    b->pts = pts;
}

static void test_arguments(void)
{
    mq_pcm_ring *r = NULL;
    CHECK(mq_pcm_ring_create(0, 256, 2, &r) == MQ_ERR_INVALID_ARGUMENT, "0 blocks");
    CHECK(mq_pcm_ring_create(6, 256, 2, &r) == MQ_ERR_INVALID_ARGUMENT, "not a power of two");
    CHECK(mq_pcm_ring_create(8, 0, 2, &r) == MQ_ERR_INVALID_ARGUMENT, "0 frames");
    CHECK(mq_pcm_ring_create(8, 256, 0, &r) == MQ_ERR_INVALID_ARGUMENT, "0 channels");
    CHECK(r == NULL, "no ring on failure");
    mq_pcm_ring_destroy(&r); // NULL-safe
    mq_pcm_ring_destroy(NULL);
}

static void test_order_and_edges(void)
{
    mq_pcm_ring *r = NULL;
    CHECK(mq_pcm_ring_create(4, 16, 2, &r) == MQ_OK && r, "create");
    if (!r)
        return;
    CHECK(isnan(atomic_load(&r->queued_until)), "queued_until starts NAN");
    CHECK(mq_pcm_ring_peek(r) == NULL, "empty ring peeks NULL");
    for (int i = 0; i < 4; i++) {
        mq_pcm_block *b = mq_pcm_ring_acquire(r);
        CHECK(b != NULL, "block %d free", i);
        if (!b)
            return;
        fill(r, b, (float)i, 16, i * 0.5);
        mq_pcm_ring_commit(r, i * 0.5 + 0.5);
    }
    CHECK(mq_pcm_ring_acquire(r) == NULL, "full ring acquires NULL");
    CHECK(atomic_load(&r->queued_until) == 2.0, "queued_until = end of the last block");
    // Partial reads of block 0, then the rest in order.
    mq_pcm_block *b = mq_pcm_ring_peek(r);
    CHECK(b && b->data[0] == 0.0f && b->pts == 0.0, "first block first");
    mq_pcm_ring_consume(r, 10);
    CHECK(r->read_off == 10 && mq_pcm_ring_peek(r) == b, "partial consume keeps the block");
    mq_pcm_ring_consume(r, 6);
    CHECK(mq_pcm_ring_acquire(r) != NULL, "a consumed block is free again");
    for (int i = 1; i < 4; i++) {
        b = mq_pcm_ring_peek(r);
        CHECK(b && b->data[0] == (float)i && b->data[31] == (float)i, "block %d in order", i);
        mq_pcm_ring_consume(r, 16);
    }
    CHECK(mq_pcm_ring_peek(r) == NULL, "drained");
    mq_pcm_ring_destroy(&r);
    CHECK(r == NULL, "destroy clears the pointer");
}

static void test_flush(void)
{
    mq_pcm_ring *r = NULL;
    if (mq_pcm_ring_create(8, 8, 1, &r) < 0)
        return;
    for (int i = 0; i < 5; i++) {
        fill(r, mq_pcm_ring_acquire(r), 1.0f, 8, i);
        mq_pcm_ring_commit(r, i + 1);
    }
    atomic_store(&r->eof, true);
    mq_pcm_ring_flush(r);
    CHECK(!atomic_load(&r->eof) && isnan(atomic_load(&r->queued_until)), "flush clears eof, queued_until");
    CHECK(mq_pcm_ring_peek(r) == NULL, "stale blocks are skipped");
    fill(r, mq_pcm_ring_acquire(r), 2.0f, 3, 100);
    mq_pcm_ring_commit(r, 100.375);
    mq_pcm_block *b = mq_pcm_ring_peek(r);
    CHECK(b && b->data[0] == 2.0f && b->pts == 100 && b->frames == 3, "new generation plays");
    mq_pcm_ring_consume(r, 3);
    CHECK(mq_pcm_ring_peek(r) == NULL, "empty again");
    mq_pcm_ring_destroy(&r);
}

/* ---- two threads ---- */

#define STRESS_BLOCKS 20000

static void *producer(void *arg)
{
    mq_pcm_ring *r = arg;
    uint32_t seq = 0;
    while (seq < STRESS_BLOCKS) {
        mq_pcm_block *b = mq_pcm_ring_acquire(r);
        if (!b) {
            sched_yield();
            continue;
        }
        int32_t frames = 1 + (int32_t)(seq % (uint32_t)r->block_frames);
        for (int32_t i = 0; i < frames * r->channels; i++)
            b->data[i] = (float)seq + (float)i / 65536.0f;
        b->frames = frames;
        b->pts = seq;
        mq_pcm_ring_commit(r, seq + 1.0);
        seq++;
    }
    atomic_store(&r->eof, true);
    return NULL;
}

static void test_two_threads(void)
{
    mq_pcm_ring *r = NULL;
    if (mq_pcm_ring_create(8, 64, 2, &r) < 0)
        return;
    pthread_t th;
    pthread_create(&th, NULL, producer, r);
    uint32_t expect = 0;
    int bad = 0;
    for (;;) {
        mq_pcm_block *b = mq_pcm_ring_peek(r);
        if (!b) {
            if (atomic_load(&r->eof) && !mq_pcm_ring_peek(r))
                break;
            sched_yield();
            continue;
        }
        int32_t frames = 1 + (int32_t)(expect % 64u);
        if (b->pts != expect || b->frames != frames)
            bad++;
        for (int32_t i = 0; i < frames * 2 && !bad; i++)
            bad += b->data[i] != (float)expect + (float)i / 65536.0f;
        // Consume in two pieces to cross the read_off path.
        int32_t first = b->frames / 2;
        if (first > 0)
            mq_pcm_ring_consume(r, first);
        mq_pcm_ring_consume(r, b->frames - first);
        expect++;
        if (bad)
            break;
    }
    pthread_join(th, NULL);
    CHECK(bad == 0, "block %u arrived intact and in order", expect);
    CHECK(expect == STRESS_BLOCKS, "received %u of %d blocks", expect, STRESS_BLOCKS);
    mq_pcm_ring_destroy(&r);
}

int main(void)
{
    test_arguments();
    test_order_and_edges();
    test_flush();
    test_two_threads();
    return mqt_done("pcm_ring_test");
}
