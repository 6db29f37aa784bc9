// Clip hand-over (player.c, mq_player_set_clip): clips opened off the player and swapped in
// rapidly on two inputs, with stops and status polls between, while the audio thread mixes
// them into a WAV. Run under ASan/LSan (scripts/sanitize) this shows that no swapped-out clip is
// read after it is freed and that destroy frees every one; the WAV shows that the clip set last
// is the one heard: the 660 Hz music, then after the swap the 440 Hz tone, then silence after
// the stop.
//
//   clip_swap_test <music660.m4a> <tone440.mp4> <tone1k.mp4> <out.wav>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "CCore.h"
#include "test_util.h"

#define RATE 48000

static uint32_t lcg = 12345;

static double random_pause(double max)
{
    lcg = lcg * 1664525u + 1013904223u;
    return max * (double)(lcg >> 8) / (double)(1u << 24);
}

/// Opens `path` for the player and sets it on `input`; returns the set's result.
static int swap_in(mq_player *p, int32_t input, const char *path, bool loop)
{
    mq_clip *c = NULL;
    int ret = mq_clip_open(path, RATE, 2, 0, loop, loop ? 0.03 : 0, NAN, &c);
    if (ret < 0)
        return ret;
    ret = mq_player_set_clip(p, input, &c);
    CHECK(c == NULL, "set_clip takes the clip");
    return ret;
}

static void check_arguments(mq_player *p, const char *music)
{
    int32_t rate = 0, channels = 0;
    CHECK(mq_player_audio_format(p, &rate, &channels) == MQ_OK && rate == RATE && channels == 2, "format %d/%d", rate,
          channels);
    mq_clip *c = NULL;
    CHECK(mq_clip_open(music, RATE, 1, 0, true, 0.03, NAN, &c) == MQ_OK, "open mono");
    CHECK(mq_player_set_clip(p, 1, &c) == MQ_ERR_INVALID_ARGUMENT && !c,
          "a clip of another format is refused (and freed)");
    CHECK(mq_clip_open(music, RATE, 2, 0, true, 0.03, NAN, &c) == MQ_OK, "open");
    CHECK(mq_player_set_clip(p, 0, &c) == MQ_ERR_INVALID_ARGUMENT && !c, "input 0 is the stream (the clip is freed)");
    CHECK(mq_clip_open(music, RATE, 2, 0, true, 0.03, INFINITY, &c) == MQ_ERR_INVALID_ARGUMENT && !c, "infinite start");
    CHECK(mq_clip_open(music, RATE, 2, 0, true, 0.03, NAN, &c) == MQ_OK, "open");
    mq_clip_destroy(&c); // never handed over
    CHECK(c == NULL, "destroy clears the pointer");
}

/// 150 swaps on input 1 (and some on input 2) 0–6 ms apart, with stops and status polls.
static void swap_rapidly(mq_player *p, const char *music, const char *tone, const char *other)
{
    mq_status st;
    for (int i = 0; i < 150; i++) {
        CHECK(swap_in(p, 1, i % 2 ? tone : music, i % 2 == 0) == MQ_OK, "swap %d", i);
        if (i % 3 == 0)
            CHECK(swap_in(p, 2, other, false) == MQ_OK, "swap %d on input 2", i);
        if (i % 7 == 0)
            CHECK(mq_player_stop_clip(p, 1) == MQ_OK, "stop %d", i);
        if (i % 5 == 0)
            mq_player_get_status(p, &st);
        mqt_sleep(random_pause(0.006));
    }
    CHECK(mq_player_stop_clip(p, 2) == MQ_OK, "stop input 2");
}

/// Dominant frequency and peak of the left channel over [from, to) seconds of the WAV.
static double frequency_at(const mqt_wav *w, double from, double to)
{
    size_t a = from > 0 ? (size_t)(from * w->rate) : 0, b = (size_t)(to * w->rate);
    return b <= w->frames && a < b ? mqt_frequency(w, 0, a, b) : 0;
}

static void check_heard(const char *path)
{
    mqt_wav w;
    CHECK(mqt_wav_read(path, &w) == 0 && w.rate == RATE && w.channels == 2, "read %s", path);
    if (!w.file)
        return;
    size_t begin = 0, end = 0;
    CHECK(mqt_sound_span(&w, 0, 0.01, &begin, &end) == 0, "something was heard");
    double last = (double)end / RATE, total = (double)w.frames / RATE;
    int16_t peak = 0;
    for (size_t i = 0; i < w.frames * 2; i++)
        peak = abs(w.samples[i]) > peak ? (int16_t)abs(w.samples[i]) : peak;
    // Two clips at amplitude 1/8 sum to at most 1/4: anything louder is not what they hold.
    CHECK(peak < 0.27 * 32768, "peak %.3f", peak / 32768.0);
    // The 440 Hz tone for 1 s until the stop, the 660 Hz music for 1.2 s before it.
    double after = frequency_at(&w, last - 0.6, last - 0.1), before = frequency_at(&w, last - 1.9, last - 1.4);
    printf("clip_swap: %.2f s, heard until %.2f s: %.1f Hz before the swap, %.1f Hz after, peak %.3f\n", total, last,
           before, after, peak / 32768.0);
    CHECK(fabs(after - 440) < 3, "after the swap: %.1f Hz, want the second clip's 440", after);
    CHECK(fabs(before - 660) < 3, "before the swap: %.1f Hz, want the first clip's 660", before);
    CHECK(total - last > 0.2, "silence after the stop: %.2f s", total - last);
    free(w.file);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: clip_swap_test <music660.m4a> <tone440.mp4> <tone1k.mp4> <out.wav>\n");
        return 2;
    }
    char spec[1100];
    snprintf(spec, sizeof spec, "wav:%s", argv[4]);
    mq_player_config cfg = {.audio_out = spec, .video_out = "headless", .sample_rate = RATE, .channels = 2};
    mq_player *p = NULL;
    if (mq_player_create(&cfg, &p) < 0 || mq_player_start(p) < 0)
        return 2;
    check_arguments(p, argv[1]);
    swap_rapidly(p, argv[1], argv[2], argv[3]);
    CHECK(swap_in(p, 1, argv[1], true) == MQ_OK, "the music");
    mqt_sleep(1.2);
    CHECK(swap_in(p, 1, argv[2], false) == MQ_OK, "the tone");
    mqt_sleep(1.0);
    CHECK(mq_player_stop_clip(p, 1) == MQ_OK, "stop");
    mqt_sleep(0.5);
    mq_player_destroy(&p); // frees every clip still retired (LeakSanitizer)
    check_heard(argv[4]);
    return mqt_done("clip_swap_test");
}
