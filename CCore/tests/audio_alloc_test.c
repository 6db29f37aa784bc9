// Proves the audio thread never allocates or frees: malloc & co. are interposed for the whole
// process (shared libraries included) and every call made on the thread named "mq-audio" is
// counted. The player plays a tone through the given audio output, with an underrun (input
// paused), a reset (ring generation change) and the end (drain) on the way, mixed with clips
// (timed start, swap, one-shot end, stop) under timed and immediate gain ramps.
//
//   audio_alloc_test <tone.mp4> <audio-out-spec>     exit 0 and "audio-thread allocs 0 frees 0"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "CCore.h"

#include "alloc_watch.h"

static pid_t find_thread(const char *name)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    pid_t found = 0;
    while (d && !found && (e = readdir(d))) {
        char path[300], comm[64] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (f && fgets(comm, sizeof comm, f) && strncmp(comm, name, strlen(name)) == 0)
            found = (pid_t)atoi(e->d_name);
        if (f)
            fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = malloc(16 << 20);
    *size = buf ? fread(buf, 1, 16 << 20, f) : 0;
    fclose(f);
    return buf;
}

static void sleep_s(double s)
{
    usleep((useconds_t)(s * 1e6));
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t size = 0;
    uint8_t *tone = read_file(argv[1], &size);
    mq_player_config cfg = {.audio_out = argv[2], .video_out = "headless"};
    mq_player *p = NULL;
    int32_t a = 0;
    if (!tone || mq_player_create(&cfg, &p) < 0 || mq_player_add_track(p, MQ_TRACK_AUDIO, 0, &a) < 0)
        return 2;
    mq_player_set_timeline(p, mq_clock_now() + 0.1, 0, 1);
    mq_player_start(p);
    sleep_s(0.05);
    atomic_store(&watched, find_thread("mq-audio"));
    if (atomic_load(&watched) == 0)
        return 3;
    // The mixer's clip inputs and gains on the way: a looping clip started on the timeline,
    // timed and immediate ramps of both shapes, volume; later a swap, a stop and a one-shot clip.
    if (mq_player_play_clip(p, 1, argv[1], 0, true, 0.03, 0.3) < 0 ||
        mq_player_set_gain(p, 1, 0.5f, 0.2, MQ_RAMP_SHAPE_EQUAL_POWER, 0.5) < 0 ||
        mq_player_set_gain(p, MQ_INPUT_STREAM, 0.8f, 0.1, MQ_RAMP_SHAPE_LINEAR, NAN) < 0 ||
        mq_player_set_volume(p, 0.9f, false) < 0)
        return 4;
    mq_player_push(p, a, tone, size / 2); // plays, then runs dry: underrun
    sleep_s(1.5);
    mq_player_play_clip(p, 1, argv[1], 1.0, true, 0.03, NAN); // replaces the playing clip
    mq_player_set_gain(p, 2, 1.0f, 0.05, MQ_RAMP_SHAPE_LINEAR, NAN);
    mq_player_play_clip(p, 2, argv[1], 1.0, false, 0, NAN); // ends after 1 s: CLIP_ENDED
    mq_player_set_gain(p, 1, 0.0f, 0.5, MQ_RAMP_SHAPE_LINEAR, 9.0);
    mq_player_cancel_timed_gains(p);
    mq_player_reset_track(p, a); // new ring generation
    mq_player_set_timeline(p, mq_clock_now() + 0.1, 0, 1);
    mq_player_push(p, a, tone, size);
    mq_player_end_track(p, a);
    mq_event ev;
    double deadline = mq_clock_now() + 10;
    int ended = 0, underruns = 0, clips_ended = 0;
    while (!ended && mq_clock_now() < deadline) {
        while (mq_player_poll_event(p, &ev) == 1) {
            ended |= ev.type == MQ_EVENT_ENDED;
            underruns += ev.type == MQ_EVENT_UNDERRUN;
            clips_ended += ev.type == MQ_EVENT_CLIP_ENDED && ev.track == 2 && ev.code == 0;
        }
        sleep_s(0.01);
    }
    mq_player_stop_clip(p, 1);
    mq_status st;
    mq_player_get_status(p, &st);
    long n_alloc = atomic_load(&allocs), n_free = atomic_load(&frees);
    atomic_store(&watched, 0); // destroy joins the thread: its exit may free TLS
    mq_player_destroy(&p);
    free(tone);
    printf("audio-thread allocs %ld frees %ld ended %d underruns %d played %lld clips ended %d\n", n_alloc, n_free,
           ended, underruns, (long long)st.audio_frames_played, clips_ended);
    return n_alloc == 0 && n_free == 0 && ended && clips_ended == 1 ? 0 : 1;
}
