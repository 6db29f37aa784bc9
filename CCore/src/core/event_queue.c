#include "core/event_queue.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mq_err.h"

struct mq_event_queue {
    // immutable after create
    int capacity;
    mq_event *events;
    bool lock_ok;
    // protected by lock
    pthread_mutex_t lock;
    int head, count;
    int64_t dropped;
    void (*wakeup)(void *);
    void *wakeup_ctx;
};

int mq_event_queue_create(int capacity, mq_event_queue **out)
{
    mq_event_queue *q = calloc(1, sizeof *q);
    if (!q)
        return MQ_ERR_NO_MEMORY;
    q->capacity = capacity;
    q->events = calloc((size_t)capacity, sizeof *q->events);
    if (!q->events)
        goto fail;
    if (pthread_mutex_init(&q->lock, NULL) != 0)
        goto fail;
    q->lock_ok = true;
    *out = q;
    return MQ_OK;
fail:
    mq_event_queue_destroy(&q);
    return MQ_ERR_NO_MEMORY;
}

void mq_event_queue_destroy(mq_event_queue **pq)
{
    mq_event_queue *q = pq ? *pq : NULL;
    if (!q)
        return;
    if (q->lock_ok)
        pthread_mutex_destroy(&q->lock);
    free(q->events);
    free(q);
    *pq = NULL;
}

void mq_event_queue_push(mq_event_queue *q, int type, int track, int code, double media_time, const char *fmt, ...)
{
    mq_event ev = {.type = type, .track = track, .code = code, .media_time = media_time};
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ev.message, sizeof ev.message, fmt, ap);
    va_end(ap);

    pthread_mutex_lock(&q->lock);
    if (q->count == q->capacity) {
        q->head = (q->head + 1) % q->capacity;
        q->count--;
        q->dropped++;
    }
    q->events[(q->head + q->count) % q->capacity] = ev;
    q->count++;
    void (*cb)(void *) = q->wakeup;
    void *ctx = q->wakeup_ctx;
    pthread_mutex_unlock(&q->lock);
    if (cb)
        cb(ctx);
}

int mq_event_queue_poll(mq_event_queue *q, mq_event *out)
{
    pthread_mutex_lock(&q->lock);
    int got = q->count > 0;
    if (got) {
        *out = q->events[q->head];
        q->head = (q->head + 1) % q->capacity;
        q->count--;
    }
    pthread_mutex_unlock(&q->lock);
    return got;
}

void mq_event_queue_set_wakeup(mq_event_queue *q, void (*cb)(void *), void *ctx)
{
    pthread_mutex_lock(&q->lock);
    q->wakeup = cb;
    q->wakeup_ctx = ctx;
    pthread_mutex_unlock(&q->lock);
}
