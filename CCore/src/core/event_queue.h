#ifndef MQ_EVENT_QUEUE_H
#define MQ_EVENT_QUEUE_H

#include "mq_player.h"

/// A bounded FIFO of mq_event filled by player threads (never the audio thread) and drained by
/// mq_player_poll_event. When full the oldest event is dropped (and counted).
typedef struct mq_event_queue mq_event_queue;

int mq_event_queue_create(int capacity, mq_event_queue **out);
void mq_event_queue_destroy(mq_event_queue **q);

void mq_event_queue_push(mq_event_queue *q, int type, int track, int code, double media_time, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
int mq_event_queue_poll(mq_event_queue *q, mq_event *out);
void mq_event_queue_set_wakeup(mq_event_queue *q, void (*cb)(void *), void *ctx);

#endif
