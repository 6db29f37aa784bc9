#ifndef MQ_THREAD_H
#define MQ_THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/// Initialises `c` to time its waits on CLOCK_MONOTONIC (the clock of every `mono` value).
int mq_cond_init_mono(pthread_cond_t *c);

/// Waits on `c` until signalled or monotonic time `deadline`; returns 0 or ETIMEDOUT.
int mq_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, double deadline);

/// Sleeps until monotonic time `deadline` (clock_nanosleep, absolute: no drift).
void mq_sleep_until(double deadline);

/// Sleeps until monotonic time `deadline` or until mq_wake_all(word) is called (a futex: no
/// lock, nothing allocated; a signal may end it early too). Returns at once when `word`
/// already differs from `seen`, so a change made and woken just before the call is not missed.
void mq_wait_change(_Atomic uint32_t *word, uint32_t seen, double deadline);

/// Wakes every thread in mq_wait_change on `word` (call after changing it).
void mq_wake_all(_Atomic uint32_t *word);

/// Best effort: moves `t` to SCHED_RR at `priority` (1–99) so output threads keep their timing
/// on a loaded box. Needs CAP_SYS_NICE or an RLIMIT_RTPRIO grant (the systemd unit gives one);
/// returns false, changing nothing, without it. The kernel's RT throttling keeps 5 % of each
/// second for other threads, so a runaway RT thread cannot lock the box up.
bool mq_thread_set_realtime(pthread_t t, int priority);

/// Starts a joinable thread named `name` (visible in top/gdb). Returns 0 or an mq_err.
int mq_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

#endif
