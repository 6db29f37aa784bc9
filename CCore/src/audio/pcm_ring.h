#ifndef MQ_PCM_RING_H
#define MQ_PCM_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/// One block of decoded audio: float interleaved at the output rate and channel count.
typedef struct mq_pcm_block {
    double pts;     ///< Presentation time of the first frame.
    double rate;    ///< Presentation seconds per second of these frames: 1 as decoded, the
                    ///< tempo when time-stretched (frame k is at pts + k × rate / sample rate).
    int32_t frames; ///< Valid frames in `data`.
    uint32_t gen;   ///< Ring generation the block was written in (stale after a flush).
    float *data;    ///< capacity × channels floats, allocated once.
} mq_pcm_block;

/// Single-producer single-consumer lock-free ring of preallocated blocks. The player has three
/// kinds: `pcm` (audio decode thread → tempo thread), `out` (tempo thread → audio thread) and
/// each clip's ring (clip thread → audio thread). Nothing here allocates, locks or blocks after
/// create.
typedef struct mq_pcm_ring {
    // immutable after create
    uint32_t nblocks; // power of two
    int32_t block_frames, channels;
    mq_pcm_block *blocks;
    // shared, atomics
    _Atomic uint32_t head;       // next block the producer writes (producer stores)
    _Atomic uint32_t tail;       // next block the consumer reads (consumer stores)
    _Atomic uint32_t gen;        // producer bumps it to flush; the consumer skips older blocks
    _Atomic bool eof;            // producer: no more blocks in this generation
    _Atomic double queued_until; // producer: end time of the last committed block (NAN: none);
                                 // read anywhere (mq_player_get_status)
    // consumer only
    int32_t read_off; // frames of the tail block already consumed
} mq_pcm_ring;

int mq_pcm_ring_create(uint32_t nblocks, int32_t block_frames, int32_t channels, mq_pcm_ring **out);
void mq_pcm_ring_destroy(mq_pcm_ring **r);

/// Producer: the free block to fill, or NULL when the ring is full.
mq_pcm_block *mq_pcm_ring_acquire(mq_pcm_ring *r);
/// Producer: publishes the block returned by acquire (pts and frames set).
void mq_pcm_ring_commit(mq_pcm_ring *r, double end_pts);
/// Producer: drops everything queued (the consumer skips it) and clears eof.
void mq_pcm_ring_flush(mq_pcm_ring *r);

/// Consumer: the block holding the next frame (read_off into it), skipping stale ones; NULL if empty.
mq_pcm_block *mq_pcm_ring_peek(mq_pcm_ring *r);
/// Consumer: marks `frames` of the current block consumed (frees the block when done).
void mq_pcm_ring_consume(mq_pcm_ring *r, int32_t frames);

#endif
