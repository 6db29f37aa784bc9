#include "core/thread.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mq_err.h"

static struct timespec timespec_from(double t)
{
    struct timespec ts;
    if (!(t > 0))
        t = 0;
    ts.tv_sec = (time_t)t;
    ts.tv_nsec = (long)((t - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec += 1;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int mq_cond_init_mono(pthread_cond_t *c)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return MQ_ERR_NO_MEMORY;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int err = pthread_cond_init(c, &attr);
    pthread_condattr_destroy(&attr);
    return err == 0 ? MQ_OK : MQ_ERR_NO_MEMORY;
}

int mq_cond_wait_until(pthread_cond_t *c, pthread_mutex_t *m, double deadline)
{
    struct timespec ts = timespec_from(deadline);
    return pthread_cond_timedwait(c, m, &ts);
}

void mq_sleep_until(double deadline)
{
    struct timespec ts = timespec_from(deadline);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

bool mq_thread_prefer_realtime(int priority)
{
    struct sched_param param = {.sched_priority = priority};
    if (pthread_setschedparam(pthread_self(), SCHED_RR, &param) == 0)
        return true;
    // struct sched_attr as of its first version (glibc has no wrapper; the kernel's header
    // clashes with <sched.h>): policy, then the fair class's slice in sched_runtime.
    struct {
        uint32_t size, policy;
        uint64_t flags;
        int32_t nice;
        uint32_t priority;
        uint64_t runtime, deadline, period;
    } attr = {.size = sizeof attr, .policy = SCHED_OTHER, .runtime = 100000};
    syscall(SYS_sched_setattr, 0, &attr, 0); // (an older kernel keeps its default slice)
    return false;
}

int mq_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
    if (pthread_create(t, NULL, fn, arg) != 0)
        return MQ_ERR_NO_MEMORY;
    pthread_setname_np(*t, name);
    return MQ_OK;
}
