// Mixer throughput (scripts/bench-mixer builds and runs it): four stereo 48 kHz inputs (sine
// tones pre-generated in memory, one second each, looped) mixed to s16 in 1024-frame periods
// while every input ramps to a new gain over 100 ms every 0.5 s of media (timed commands,
// staggered 100 ms apart, linear and equal-power in turn; the master volume moves every 5 s).
// Reports the mixing thread's CPU time (CLOCK_THREAD_CPUTIME_ID) against the media mixed.
//
//   mixer_bench [media-seconds]      default 600; prints "marquee media <s> cpu <s> xrt <x>"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mixing/mixer.h"

#define SR 48000
#define CH 2
#define PERIOD 1024
#define INPUTS 4

static double thread_cpu(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/// One second of a tone (integer Hz: it loops seamlessly) plus a period more, so that any
/// offset in the first second has PERIOD contiguous frames.
static float *tone(double hz, double amplitude)
{
    float *buf = malloc(sizeof(float) * (SR + PERIOD) * CH);
    if (!buf)
        exit(2);
    for (int f = 0; f < SR + PERIOD; f++)
        buf[f * CH] = buf[f * CH + 1] = (float)(amplitude * sin(2 * M_PI * hz * (f % SR) / SR));
    return buf;
}

/// The commands for the half-second window starting at `t` (seconds of media).
static void schedule(mq_mixer *m, long window, double t)
{
    for (int i = 0; i < INPUTS; i++) {
        float gain = 0.2f + 0.8f * (float)((window * 7 + i * 3) % 10) / 9.0f;
        mq_ramp_shape shape = (window + i) % 2 ? MQ_RAMP_EQUAL_POWER : MQ_RAMP_LINEAR;
        if (mq_mixer_set_gain(m, i, gain, SR / 10, shape, t + 0.1 * i) != 0)
            exit(3);
    }
    if (window % 10 == 0 && mq_mixer_set_master(m, window % 20 ? 0.9f : 1.0f, false) != 0)
        exit(3);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 600;
    static const double hz[INPUTS] = {440, 554, 659, 880};
    float *tones[INPUTS];
    for (int i = 0; i < INPUTS; i++)
        tones[i] = tone(hz[i], 0.3);
    static int16_t out[PERIOD * CH];
    mq_mixer *m = NULL;
    if (mq_mixer_create(INPUTS, CH, SR, PERIOD, &m) != 0)
        return 2;
    long periods = (long)(seconds * SR / PERIOD), window = -1;
    const double dt = 1.0 / SR;
    uint64_t check = 0;
    double start = thread_cpu();
    for (long p = 0; p < periods; p++) {
        long frame = p * PERIOD;
        if (frame / (SR / 2) != window) { // a new half second: send its commands
            window = frame / (SR / 2);
            schedule(m, window, window * 0.5);
        }
        const float *in[INPUTS];
        for (int i = 0; i < INPUTS; i++)
            in[i] = tones[i] + (size_t)(frame % SR) * CH;
        mq_mixer_process(m, in, PERIOD, frame * dt, dt, out, MQ_SAMPLE_S16);
        check += (uint16_t)out[(p * 31) % (PERIOD * CH)];
    }
    double cpu = thread_cpu() - start, media = (double)periods * PERIOD / SR;
    printf("marquee media %.3f cpu %.6f xrt %.1f limited %lld check %llu\n", media, cpu, media / cpu,
           (long long)mq_mixer_limited_frames(m), (unsigned long long)check);
    mq_mixer_destroy(&m);
    for (int i = 0; i < INPUTS; i++)
        free(tones[i]);
    return 0;
}
