// Decoder preference (mq_player_config.decoders) and the software fallback:
//  - mq_decoder_open on real streams: which names apply to which codec, a missing decoder
//    ("h264_nosuch") and a hardware one with no device here (h264_v4l2m2m: no /dev/video*)
//    fall back to libavcodec's default with the reasons, names for other codecs are skipped;
//  - through the player: one DECODER_FALLBACK event per track (not per session), and the
//    fallback decoder's pictures are ffmpeg's own (framemd5);
//  - malformed lists are refused at create;
//  - auto threads: a decoder that takes too much of real time (decode_busy_limit) is reopened
//    with frame threads (the process gains threads) and every picture is still ffmpeg's, none
//    lost across the switch; also on MPEG-TS (another container: keyframes from its parser).
//
//   decoder_pref_test <video.mp4> <video.md5> <audio.mp4> <outdir> [<muxed.ts>]

#include <dirent.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include "CCore.h"
#include "input/decoder_open.h"
#include "input/demux.h"
#include "test_util.h"

typedef struct stream {
    mq_byte_queue *q;
    mq_demux *d;
} stream;

static int open_stream(const char *path, enum AVMediaType type, stream *s)
{
    size_t size = 0;
    uint8_t *bytes = mqt_read_file(path, &size);
    char why[256];
    if (!bytes || mq_byte_queue_create(&s->q) < 0)
        return -1;
    mq_byte_queue_push(s->q, bytes, size);
    mq_byte_queue_end(s->q);
    free(bytes);
    int ret = mq_demux_open(s->q, type, &s->d, why, sizeof why);
    CHECK(ret == MQ_OK, "demux %s: %s", path, why);
    return ret;
}

static void close_stream(stream *s)
{
    mq_demux_destroy(&s->d);
    mq_byte_queue_destroy(&s->q);
}

/// Opens with `prefs`; returns the decoder's name ("" on failure) and the failure notes.
static const char *open_with(const stream *s, const char *prefs, char *failed, size_t n)
{
    static char used[64];
    AVCodecContext *c = NULL;
    int ret = mq_decoder_open(prefs, s->d->st->codecpar, s->d->st->time_base, 0, &c, failed, n);
    snprintf(used, sizeof used, "%s", ret == MQ_OK && c ? c->codec->name : "");
    CHECK(ret == MQ_OK && c && avcodec_is_open(c), "prefs \"%s\": opened (%d)", prefs ? prefs : "NULL", ret);
    avcodec_free_context(&c);
    return used;
}

static bool have_video_devices(void)
{
    glob_t g;
    int found = glob("/dev/video*", 0, NULL, &g) == 0 && g.gl_pathc > 0;
    globfree(&g);
    return found;
}

static void test_selection(const char *video, const char *audio)
{
    stream v = {0}, a = {0};
    if (open_stream(video, AVMEDIA_TYPE_VIDEO, &v) < 0 || open_stream(audio, AVMEDIA_TYPE_AUDIO, &a) < 0)
        return;
    char failed[256];
    const char *used = open_with(&v, NULL, failed, sizeof failed);
    CHECK(!strcmp(used, "h264") && !failed[0], "no list: the default decoder (%s) [%s]", used, failed);

    used = open_with(&v, "h264_nosuch", failed, sizeof failed);
    CHECK(!strcmp(used, "h264"), "a missing preference falls back to h264 (%s)", used);
    CHECK(strstr(failed, "h264_nosuch: not in this libavcodec") != NULL, "and says why: [%s]", failed);

    used = open_with(&v, " aac , mp3float,hevc_nosuch,,h264 ", failed, sizeof failed);
    CHECK(!strcmp(used, "h264") && !failed[0], "other codecs' names are skipped, h264 chosen (%s) [%s]", used, failed);

    used = open_with(&v, "h264_v4l2m2m,h264", failed, sizeof failed);
    printf("h264_v4l2m2m here: used %s [%s]\n", used, failed);
    if (!have_video_devices()) {
        CHECK(!strcmp(used, "h264"), "no V4L2 device: software h264 (%s)", used);
        CHECK(strncmp(failed, "h264_v4l2m2m: ", 14) == 0, "the hardware decoder's failure is noted [%s]", failed);
    }

    // h264_vaapi: no decoder of that name, but a hwaccel of h264's own: with no VA device here
    // (no render node), the software decoder, the reason noted
    used = open_with(&v, "h264_vaapi,h264", failed, sizeof failed);
    printf("h264_vaapi here: used %s [%s]\n", used, failed);
    if (access("/dev/dri/renderD128", F_OK) != 0) {
        CHECK(!strcmp(used, "h264"), "no VA device: software h264 (%s)", used);
        CHECK(strncmp(failed, "h264_vaapi: ", 12) == 0 && !strstr(failed, "not in this libavcodec"),
              "the hwaccel's failure is noted as the device's [%s]", failed);
    }

    used = open_with(&a, "h264_v4l2m2m,hevc_rkmpp,h264_nosuch", failed, sizeof failed);
    CHECK(!strcmp(used, "aac") && !failed[0], "video names do not apply to AAC (%s) [%s]", used, failed);

    CHECK(mq_decoder_prefs_check(NULL) == MQ_OK && mq_decoder_prefs_check("h264_v4l2m2m, h264") == MQ_OK,
          "valid lists");
    CHECK(mq_decoder_prefs_check("h264;reboot") == MQ_ERR_INVALID_ARGUMENT, "bad characters refused");
    char longlist[1100];
    memset(longlist, 'a', sizeof longlist - 1);
    longlist[sizeof longlist - 1] = '\0';
    CHECK(mq_decoder_prefs_check(longlist) == MQ_ERR_INVALID_ARGUMENT, "over-long list refused");
    close_stream(&v);
    close_stream(&a);
}

/// Threads in this process now.
static int thread_count(void)
{
    DIR *dir = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        n += e->d_name[0] != '.';
    if (dir)
        closedir(dir);
    return n;
}

/// Counts presented pictures in `tsv` and those whose md5 is not in `ref` (ffmpeg's framemd5).
static void match_frames(const char *md5_path, const char *tsv, int *presented, int *unmatched)
{
    size_t n_ref = 0, n_tsv = 0;
    char *ref = (char *)mqt_read_file(md5_path, &n_ref), *rows = (char *)mqt_read_file(tsv, &n_tsv);
    *presented = *unmatched = 0;
    if (ref && rows) {
        ref = realloc(ref, n_ref + 1);
        ref[n_ref] = 0;
        rows = realloc(rows, n_tsv + 1);
        rows[n_tsv] = 0;
        for (char *line = strtok(rows, "\n"); line; line = strtok(NULL, "\n")) {
            char md5[64];
            double wall, pts;
            if (sscanf(line, "%lf\t%lf\t%63s", &wall, &pts, md5) == 3) {
                (*presented)++;
                *unmatched += strstr(ref, md5) == NULL;
            }
        }
    }
    free(ref);
    free(rows);
}

/// Plays the video three times in a row (discontinuities at 2 s and 4 s: 150 pictures) with
/// auto threads and `busy_limit`; returns the most threads the process had while it played.
static int play_threaded(const char *video, int32_t container, const char *md5_path, const char *outdir,
                         const char *name, double busy_limit, int *presented, int *unmatched)
{
    char frames[4096], tsv[4200];
    snprintf(frames, sizeof frames, "frames:%s/%s", outdir, name);
    snprintf(tsv, sizeof tsv, "%s/%s/frames.tsv", outdir, name);
    mq_player *p = NULL;
    mq_player_config cfg = {.audio_out = "null", .video_out = frames, .decode_busy_limit = busy_limit};
    int ret = mq_player_create(&cfg, &p);
    CHECK(ret == MQ_OK, "create: %s", mq_err_string(ret));
    if (ret < 0)
        return 0;
    int32_t v = 0;
    mq_player_add_track(p, MQ_TRACK_VIDEO, 0, &v);
    mq_player_set_track_container(p, v, container);
    size_t size = 0;
    uint8_t *bytes = mqt_read_file(video, &size);
    for (int i = 0; i < 3; i++) {
        if (i > 0)
            mq_player_push_discontinuity(p, v, 2.0 * i);
        mq_player_push(p, v, bytes, size);
    }
    mq_player_end_track(p, v);
    free(bytes);
    mq_player_set_timeline(p, mq_clock_now() + 1.0, 0, 1);
    mq_player_start(p);
    int most = 0, ended = 0, errors = 0;
    mq_event ev;
    double deadline = mq_clock_now() + 30;
    while (!ended && mq_clock_now() < deadline) {
        while (mq_player_poll_event(p, &ev) == 1) {
            errors += ev.type == MQ_EVENT_ERROR;
            ended |= ev.type == MQ_EVENT_ENDED;
        }
        int n = thread_count();
        most = n > most ? n : most;
        mqt_sleep(0.01);
    }
    mq_player_destroy(&p);
    CHECK(ended && errors == 0, "%s: ended %d, %d errors", name, ended, errors);
    match_frames(md5_path, tsv, presented, unmatched);
    return most;
}

/// Auto threads: forced to find one thread too slow (a limit no decoder meets), the track
/// takes frame threads; the pictures are the same as with one thread throughout.
static void test_auto_threads(const char *video, const char *ts, const char *md5_path, const char *outdir)
{
    mq_player *p = NULL;
    mq_player_config bad = {.decode_busy_limit = 1.5};
    CHECK(mq_player_create(&bad, &p) == MQ_ERR_INVALID_ARGUMENT && !p, "busy limit over 1 refused");
    int one_presented, one_unmatched;
    int one =
        play_threaded(video, MQ_CONTAINER_FMP4, md5_path, outdir, "one-thread", 1.0, &one_presented, &one_unmatched);
    CHECK(one_presented >= 145 && one_unmatched == 0, "one thread: %d pictures, %d not ffmpeg's", one_presented,
          one_unmatched);
    const struct {
        const char *path, *name;
        int32_t container;
    } inputs[] = {{video, "frame-threads", MQ_CONTAINER_FMP4}, {ts, "frame-threads-ts", MQ_CONTAINER_MPEGTS}};
    for (size_t i = 0; i < sizeof inputs / sizeof *inputs; i++) {
        if (!inputs[i].path)
            continue;
        int presented, unmatched;
        int many = play_threaded(inputs[i].path, inputs[i].container, md5_path, outdir, inputs[i].name, 1e-9,
                                 &presented, &unmatched);
        printf("auto threads (%s): %d threads at most with one decoder thread, %d after the switch\n", inputs[i].name,
               one, many);
        CHECK(presented >= one_presented - 2 && unmatched == 0, "%s: %d pictures (one thread: %d), %d not ffmpeg's",
              inputs[i].name, presented, one_presented, unmatched);
        if (sysconf(_SC_NPROCESSORS_ONLN) > 1) // libavcodec's auto count is one thread per core and one more
            CHECK(many >= one + 2, "%s: frame threads taken: %d threads at most, %d with one decoder thread",
                  inputs[i].name, many, one);
    }
}

/// Plays the video twice (two sessions: the second init segment reopens the decoder) with a
/// preference that cannot be used; counts the events.
static void test_player(const char *video, const char *md5_path, const char *outdir)
{
    mq_player *p = NULL;
    mq_player_config bad = {.decoders = "h264_v4l2m2m\n"};
    CHECK(mq_player_create(&bad, &p) == MQ_ERR_INVALID_ARGUMENT && !p, "malformed list refused at create");

    char frames[4096], tsv[4200];
    mkdir(outdir, 0755);
    snprintf(frames, sizeof frames, "frames:%s/pref-frames", outdir);
    snprintf(tsv, sizeof tsv, "%s/pref-frames/frames.tsv", outdir);
    mq_player_config cfg = {.audio_out = "null", .video_out = frames, .decoders = "h264_nosuch,h264"};
    int ret = mq_player_create(&cfg, &p);
    CHECK(ret == MQ_OK, "create: %s", mq_err_string(ret));
    if (ret < 0)
        return;
    int32_t v = 0;
    mq_player_add_track(p, MQ_TRACK_VIDEO, 0, &v);
    size_t size = 0;
    uint8_t *bytes = mqt_read_file(video, &size);
    mq_player_push(p, v, bytes, size);
    mq_player_push(p, v, bytes, size); // a second session (same timestamps: late, dropped)
    mq_player_end_track(p, v);
    free(bytes);
    mq_player_set_timeline(p, mq_clock_now() + 1.0, 0, 1); // room for a slow (qemu) start
    mq_player_start(p);
    int fallbacks = 0, errors = 0, ended = 0;
    char fallback_msg[256] = "", format_msg[256] = "";
    mq_event ev;
    double deadline = mq_clock_now() + 20;
    while (!ended && mq_clock_now() < deadline) {
        while (mq_player_poll_event(p, &ev) == 1) {
            printf("event %d track %d: %s\n", ev.type, ev.track, ev.message);
            if (ev.type == MQ_EVENT_DECODER_FALLBACK) {
                fallbacks++;
                snprintf(fallback_msg, sizeof fallback_msg, "%s", ev.message);
                CHECK(ev.track == v && ev.code == 0, "event on the video track");
            }
            if (ev.type == MQ_EVENT_TRACK_FORMAT && !format_msg[0])
                snprintf(format_msg, sizeof format_msg, "%s", ev.message);
            errors += ev.type == MQ_EVENT_ERROR;
            ended |= ev.type == MQ_EVENT_ENDED;
        }
        mqt_sleep(0.01);
    }
    mq_player_destroy(&p);
    CHECK(ended && errors == 0, "ended %d, %d errors", ended, errors);
    CHECK(fallbacks == 1, "one DECODER_FALLBACK per track, not per session (%d)", fallbacks);
    CHECK(strstr(fallback_msg, "h264_nosuch") && strstr(fallback_msg, "using h264"), "message: %s", fallback_msg);
    CHECK(strncmp(format_msg, "video h264 ", 11) == 0, "decoded by h264: %s", format_msg);

    // The fallback decoder's pictures are ffmpeg's.
    int presented = 0, unmatched = 0;
    match_frames(md5_path, tsv, &presented, &unmatched);
    printf("fallback: %d pictures presented, %d not ffmpeg's\n", presented, unmatched);
    // Every picture of the first session is due (1 s lead, a 2 s video): 51 presented natively
    // and under qemu-aarch64, each run (cross-test -j2, the other checks beside it). 48: two
    // or three pictures late after a stall of the machine; the bound was lowered to 25 for an
    // emulated run starved when retried checks piled up (ctest runs each once since issue 37).
    CHECK(presented >= 48 && unmatched == 0, "%d pictures presented, %d not ffmpeg's", presented, unmatched);
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: decoder_pref_test <video.mp4> <video.md5> <audio.mp4> <outdir> [<muxed.ts>]\n");
        return 2;
    }
    test_selection(argv[1], argv[3]);
    test_player(argv[1], argv[2], argv[4]);
    test_auto_threads(argv[1], argc > 5 ? argv[5] : NULL, argv[2], argv[4]);
    return mqt_done("decoder_pref_test");
}
