// Proves mq_mixer_process never allocates or frees: malloc & co. are interposed for the whole
// process and every call made on the mixing thread ("mq-mix") is counted. The thread mixes four
// inputs in 256-frame periods for 1.5 s (three times faster than real time) while the main
// thread keeps sending timed and untimed gain ramps (both shapes), master volume/mute changes
// and cancels, filling the queue now and then (MQ_ERR_STATE), and reading the gains back.
//
//   mixer_alloc_test        exit 0 and "mixer allocs 0 frees 0"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mixing/mixer.h"
#include "mq_err.h"

#include "alloc_watch.h"

#define SR 48000
#define CH 2
#define PERIOD 256
#define INPUTS 4

typedef struct {
    mq_mixer *m;
    float *in[INPUTS];
    _Atomic double position; // timeline position of the next period
    _Atomic bool stop;
    _Atomic long periods;
} mix_ctx;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *mix_thread(void *arg)
{
    mix_ctx *c = arg;
    pthread_setname_np(pthread_self(), "mq-mix");
    static int16_t s16[PERIOD * CH];
    static int32_t s32[PERIOD * CH];
    static float f32[PERIOD * CH];
    void *outs[3] = {s16, s32, f32};
    const float *in[INPUTS];
    const double dt = 1.0 / SR;
    struct timespec pause = {0, 1700000}; // 1.7 ms per 5.3 ms period
    atomic_store(&watched, gettid());
    for (long p = 0; !atomic_load(&c->stop); p++) {
        for (int i = 0; i < INPUTS; i++) // input 3 drops out now and then
            in[i] = i == 3 && p % 7 == 0 ? NULL : c->in[i];
        double t0 = p % 50 == 49 ? NAN : (double)p * PERIOD * dt; // sometimes no timeline
        mq_mixer_process(c->m, in, PERIOD, t0, dt, outs[p % 3], (mq_sample_format)(p % 3));
        atomic_store(&c->position, (double)(p + 1) * PERIOD * dt);
        atomic_store(&c->periods, p + 1);
        nanosleep(&pause, NULL);
    }
    atomic_store(&watched, 0); // thread exit may free TLS
    return NULL;
}

/// The controlling thread's traffic for 1.5 s.
static void control(mix_ctx *c)
{
    long sent = 0, refused = 0;
    double end = now() + 1.5;
    for (unsigned k = 0; now() < end; k++) {
        double pos = atomic_load(&c->position);
        int input = (int)(k % INPUTS), ret;
        float gain = (float)((k * 7919) % 400) / 100.0f;
        mq_ramp_shape shape = k % 2 ? MQ_RAMP_EQUAL_POWER : MQ_RAMP_LINEAR;
        switch (k % 6) {
        case 0:
            ret = mq_mixer_set_gain(c->m, input, gain, 2400, shape, NAN);
            break;
        case 1:
            ret = mq_mixer_set_gain(c->m, input, gain, (int)(k % 3000), shape, pos + 0.01 * (k % 50));
            break;
        case 2:
            ret = mq_mixer_set_gain(c->m, input, gain, 0, shape, pos + 0.003);
            break;
        case 3:
            ret = mq_mixer_set_master(c->m, (float)(k % 11) / 10.0f, k % 5 == 0);
            break;
        case 4:
            ret = k % 24 == 4 ? mq_mixer_cancel_timed(c->m) : MQ_OK;
            break;
        default:
            ret = mq_mixer_set_gain(c->m, input, gain, 480, shape, pos + 5.0);
            break; // piles up
        }
        sent++;
        refused += ret == MQ_ERR_STATE;
        if (ret != MQ_OK && ret != MQ_ERR_STATE) {
            fprintf(stderr, "command %u failed: %d\n", k, ret);
            exit(2);
        }
        volatile float g = mq_mixer_gain(c->m, input);
        (void)g;
        if (k % 16 == 0)
            usleep(200);
    }
    printf("commands %ld, refused (queue full) %ld\n", sent, refused);
}

int main(void)
{
    mix_ctx c = {0};
    if (mq_mixer_create(INPUTS, CH, SR, PERIOD, &c.m) < 0)
        return 2;
    for (int i = 0; i < INPUTS; i++) {
        c.in[i] = malloc(sizeof(float) * PERIOD * CH);
        if (!c.in[i])
            return 2;
        for (int f = 0; f < PERIOD * CH; f++) // full scale: the limiter works too
            c.in[i][f] = (float)sin(2 * M_PI * (220.0 * (i + 1)) * (f / CH) / SR);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, mix_thread, &c) != 0)
        return 2;
    while (atomic_load(&watched) == 0)
        usleep(1000);
    control(&c);
    atomic_store(&c.stop, true);
    pthread_join(t, NULL); // the thread stops watching itself before it exits
    long n_alloc = atomic_load(&allocs), n_free = atomic_load(&frees);
    long periods = atomic_load(&c.periods);
    printf("periods %ld (%.1f s of audio), limited frames %lld\n", periods, periods * (double)PERIOD / SR,
           (long long)mq_mixer_limited_frames(c.m));
    printf("mixer allocs %ld frees %ld\n", n_alloc, n_free);
    mq_mixer_destroy(&c.m);
    for (int i = 0; i < INPUTS; i++)
        free(c.in[i]);
    return n_alloc == 0 && n_free == 0 && periods > 100 ? 0 : 1;
}
