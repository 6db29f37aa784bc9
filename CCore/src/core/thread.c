#include "core/thread.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <time.h>

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

bool mq_thread_set_realtime(pthread_t t, int priority)
{
    struct sched_param param = {.sched_priority = priority};
    return pthread_setschedparam(t, SCHED_RR, &param) == 0;
}

int mq_thread_start(pthread_t *t, void *(*fn)(void *), void *arg, const char *name)
{
    if (pthread_create(t, NULL, fn, arg) != 0)
        return MQ_ERR_NO_MEMORY;
    pthread_setname_np(*t, name);
    return MQ_OK;
}
