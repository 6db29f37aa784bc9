#include "video/frame_queue.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "core/clock.h"
#include "core/thread.h"
#include "mq_err.h"
#include "mq_player.h"

struct mq_frame_queue {
    // immutable after create
    int capacity;
    size_t budget; // bytes of queued pictures (0: capacity alone)
    mq_vframe *items;
    int sync_ok; // 0, 1: lock, 2: lock + cond
    // protected by lock
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int head, count;
    bool in_flight, kicked;
};

int mq_frame_queue_create(int capacity, size_t budget, mq_frame_queue **out)
{
    mq_frame_queue *q = calloc(1, sizeof *q);
    if (!q)
        return MQ_ERR_NO_MEMORY;
    q->capacity = capacity;
    q->budget = budget;
    q->items = calloc((size_t)capacity, sizeof *q->items);
    if (!q->items || pthread_mutex_init(&q->lock, NULL) != 0)
        goto fail;
    q->sync_ok = 1;
    if (mq_cond_init_mono(&q->cond) != MQ_OK)
        goto fail;
    q->sync_ok = 2;
    *out = q;
    return MQ_OK;
fail:
    mq_frame_queue_destroy(&q);
    return MQ_ERR_NO_MEMORY;
}

void mq_frame_queue_destroy(mq_frame_queue **pq)
{
    mq_frame_queue *q = pq ? *pq : NULL;
    if (!q)
        return;
    if (q->sync_ok >= 1) {
        mq_frame_queue_flush(q);
        pthread_mutex_destroy(&q->lock);
    }
    if (q->sync_ok >= 2)
        pthread_cond_destroy(&q->cond);
    free(q->items);
    free(q);
    *pq = NULL;
}

/// How many pictures like `f` the queue holds: the capacity, or fewer under the byte budget.
static int limit_for(const mq_frame_queue *q, const AVFrame *f)
{
    size_t bytes = 0;
    for (int i = 0; i < AV_NUM_DATA_POINTERS && f->buf[i]; i++)
        bytes += f->buf[i]->size;
    if (q->budget == 0 || bytes == 0)
        return q->capacity;
    size_t n = q->budget / bytes;
    int floor = q->capacity < 3 ? q->capacity : 3;
    return n < (size_t)floor ? floor : n > (size_t)q->capacity ? q->capacity : (int)n;
}

int mq_frame_queue_push(mq_frame_queue *q, mq_vframe *f, _Atomic bool *cancel)
{
    int limit = limit_for(q, f->frame);
    pthread_mutex_lock(&q->lock);
    while (q->count >= limit && !atomic_load(cancel))
        mq_cond_wait_until(&q->cond, &q->lock, mq_clock_now() + 0.02);
    if (atomic_load(cancel)) {
        pthread_mutex_unlock(&q->lock);
        av_frame_free(&f->frame);
        return MQ_ERR_CLOSED;
    }
    q->items[(q->head + q->count) % q->capacity] = *f;
    q->count++;
    f->frame = NULL;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
    return MQ_OK;
}

void mq_frame_queue_flush(mq_frame_queue *q)
{
    pthread_mutex_lock(&q->lock);
    for (; q->count > 0; q->count--) {
        av_frame_free(&q->items[q->head].frame);
        q->head = (q->head + 1) % q->capacity;
    }
    q->kicked = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

int mq_frame_queue_peek(mq_frame_queue *q, mq_vframe *head, mq_vframe *next)
{
    pthread_mutex_lock(&q->lock);
    int n = q->count;
    if (n >= 1)
        *head = q->items[q->head];
    if (n >= 2)
        *next = q->items[(q->head + 1) % q->capacity];
    pthread_mutex_unlock(&q->lock);
    return n;
}

bool mq_frame_queue_pop(mq_frame_queue *q, const AVFrame *expected, mq_vframe *out)
{
    pthread_mutex_lock(&q->lock);
    bool ok = q->count > 0 && q->items[q->head].frame == expected;
    if (ok) {
        *out = q->items[q->head];
        q->items[q->head].frame = NULL;
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        q->in_flight = true;
        pthread_cond_broadcast(&q->cond);
    }
    pthread_mutex_unlock(&q->lock);
    return ok;
}

void mq_frame_queue_release(mq_frame_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->in_flight = false;
    pthread_mutex_unlock(&q->lock);
}

void mq_frame_queue_wait(mq_frame_queue *q, double deadline, bool want_frames)
{
    pthread_mutex_lock(&q->lock);
    while (!q->kicked && !(want_frames && q->count > 0)) {
        if (mq_cond_wait_until(&q->cond, &q->lock, deadline) != 0)
            break;
    }
    q->kicked = false;
    pthread_mutex_unlock(&q->lock);
}

void mq_frame_queue_kick(mq_frame_queue *q)
{
    pthread_mutex_lock(&q->lock);
    q->kicked = true;
    pthread_cond_broadcast(&q->cond);
    pthread_mutex_unlock(&q->lock);
}

int mq_frame_queue_pending(mq_frame_queue *q, double *last_pts)
{
    pthread_mutex_lock(&q->lock);
    int n = q->count + (q->in_flight ? 1 : 0);
    *last_pts = q->count > 0 ? q->items[(q->head + q->count - 1) % q->capacity].pts : NAN;
    pthread_mutex_unlock(&q->lock);
    return n;
}
