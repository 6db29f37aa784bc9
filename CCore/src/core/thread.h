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

/// Best effort, for the calling output thread: SCHED_RR at `priority` (1–99), so it keeps its
/// timing on a loaded box. That needs CAP_SYS_NICE or an RLIMIT_RTPRIO grant (the systemd unit
/// gives one); the kernel's RT throttling keeps 5 % of each second for other threads, so a runaway
/// RT thread cannot lock the box up. Without the grant (a container, a firmware app's own
/// process) the thread stays SCHED_OTHER with the shortest slice the kernel takes (0.1 ms):
/// from Linux 6.12 a thread with a shorter slice preempts a busy one as it wakes, instead of
/// waiting out its neighbour's slice (ms). Returns whether it runs real-time.
bool mq_thread_prefer_realtime(int priority);

/// Starts a joinable thread named `name` (visible in top/gdb). Returns 0 or an mq_err.
int mq_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name);

#endif
