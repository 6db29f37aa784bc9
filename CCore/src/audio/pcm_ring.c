#include "audio/pcm_ring.h"

#include <math.h>
#include <stdlib.h>

#include "mq_err.h"

int mq_pcm_ring_create(uint32_t nblocks, int32_t block_frames, int32_t channels, mq_pcm_ring **out)
{
    if (nblocks == 0 || (nblocks & (nblocks - 1)) != 0 || block_frames <= 0 || channels <= 0)
        return MQ_ERR_INVALID_ARGUMENT;
    mq_pcm_ring *r = calloc(1, sizeof *r);
    if (!r)
        return MQ_ERR_NO_MEMORY;
    r->nblocks = nblocks;
    r->block_frames = block_frames;
    r->channels = channels;
    atomic_init(&r->queued_until, NAN);
    r->blocks = calloc(nblocks, sizeof *r->blocks);
    if (!r->blocks)
        goto fail;
    for (uint32_t i = 0; i < nblocks; i++) {
        r->blocks[i].data = calloc((size_t)block_frames * (size_t)channels, sizeof(float));
        if (!r->blocks[i].data)
            goto fail;
    }
    *out = r;
    return MQ_OK;
fail:
    mq_pcm_ring_destroy(&r);
    return MQ_ERR_NO_MEMORY;
}

void mq_pcm_ring_destroy(mq_pcm_ring **pr)
{
    mq_pcm_ring *r = pr ? *pr : NULL;
    if (!r)
        return;
    for (uint32_t i = 0; r->blocks && i < r->nblocks; i++)
        free(r->blocks[i].data);
    free(r->blocks);
    free(r);
    *pr = NULL;
}

mq_pcm_block *mq_pcm_ring_acquire(mq_pcm_ring *r)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);
    if (head - tail >= r->nblocks)
        return NULL;
    mq_pcm_block *b = &r->blocks[head & (r->nblocks - 1)];
    b->gen = atomic_load_explicit(&r->gen, memory_order_relaxed);
    b->frames = 0;
    return b;
}

void mq_pcm_ring_commit(mq_pcm_ring *r, double end_pts)
{
    uint32_t head = atomic_load_explicit(&r->head, memory_order_relaxed);
    atomic_store_explicit(&r->queued_until, end_pts, memory_order_relaxed);
    atomic_store_explicit(&r->head, head + 1, memory_order_release);
}

void mq_pcm_ring_flush(mq_pcm_ring *r)
{
    atomic_store(&r->eof, false);
    atomic_store(&r->queued_until, NAN);
    atomic_fetch_add(&r->gen, 1);
}

mq_pcm_block *mq_pcm_ring_peek(mq_pcm_ring *r)
{
    uint32_t gen = atomic_load_explicit(&r->gen, memory_order_acquire);
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    uint32_t head = atomic_load_explicit(&r->head, memory_order_acquire);
    while (tail != head) {
        mq_pcm_block *b = &r->blocks[tail & (r->nblocks - 1)];
        if (b->gen == gen && r->read_off < b->frames)
            return b;
        r->read_off = 0;
        tail++;
        atomic_store_explicit(&r->tail, tail, memory_order_release);
    }
    return NULL;
}

void mq_pcm_ring_consume(mq_pcm_ring *r, int32_t frames)
{
    uint32_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
    mq_pcm_block *b = &r->blocks[tail & (r->nblocks - 1)];
    r->read_off += frames;
    if (r->read_off >= b->frames) {
        r->read_off = 0;
        atomic_store_explicit(&r->tail, tail + 1, memory_order_release);
    }
}
