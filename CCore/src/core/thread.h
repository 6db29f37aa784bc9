#ifndef MQ_THREAD_H
#define MQ_THREAD_H

#include <pthread.h>
#include <stdbool.h>

/// Initialises `c` to time its waits on CLOCK_MONOTONIC (the clock of every `mono` value).
int mq_cond_init_mono(pthread_cond_t *c);

/// Waits on `c` until signalled or monotonic time `deadline`; returns 0 or ETIMEDOUT.
int mq_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, double deadline);

/// Sleeps until monotonic time `deadline` (clock_nanosleep, absolute: no drift).
void mq_sleep_until(double deadline);

/// Best effort: moves `t` to SCHED_RR at `priority` (1–99) so output threads keep their timing
/// on a loaded box. Needs CAP_SYS_NICE or an RLIMIT_RTPRIO grant (the systemd unit gives one);
/// returns false, changing nothing, without it. The kernel's RT throttling keeps 5 % of each
/// second for other threads, so a runaway RT thread cannot lock the box up.
bool mq_thread_set_realtime(pthread_t t, int priority);

/// Starts a joinable thread named `name` (visible in top/gdb). Returns 0 or an mq_err.
int mq_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

#endif
