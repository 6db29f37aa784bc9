// Demux (mq_demux on a track's byte queue) and decode (libavcodec) of ffmpeg-made fMP4
// segments: every picture of the video stream comes out, in order, with the pts the encoder
// gave it and the picture ffmpeg's own decode gives (framemd5 list); the audio stream yields
// its duration in samples, pts from 0. With a muxed MPEG-TS of the same two streams, the same
// again through a byte queue in TS mode, once per stream kind (as an HLS .ts segment feeds an
// audio and a video track); and fMP4 bytes pushed as TS are refused as corrupt.
//
//   demux_decode_test <video.mp4> <video.md5> <audio.mp4> <audio-seconds> [<muxed.ts>]

#include <libavcodec/avcodec.h>
#include <libavutil/imgutils.h>
#include <libavutil/md5.h>

#include "input/demux.h"
#include "mq_err.h"
#include "mq_player.h"
#include "test_util.h"

/// md5 (hex) of the picture's planes packed without padding, as `ffmpeg -f framemd5` prints.
static void picture_md5(const AVFrame *f, char hex[33])
{
    int size = av_image_get_buffer_size(f->format, f->width, f->height, 1);
    uint8_t *buf = malloc((size_t)size), sum[16];
    av_image_copy_to_buffer(buf, size, (const uint8_t *const *)f->data, f->linesize, f->format, f->width, f->height, 1);
    av_md5_sum(sum, buf, size);
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", sum[i]);
    free(buf);
}

typedef struct result {
    int frames;
    int64_t samples;
    double first_pts, last_pts;
    int pts_errors, md5_errors;
} result;

static void take_frame(const mq_demux *d, const AVFrame *f, char (*md5s)[33], int nmd5, result *r)
{
    double pts = f->best_effort_timestamp * av_q2d(d->st->time_base);
    if (r->frames == 0)
        r->first_pts = pts;
    else if (!(pts > r->last_pts))
        r->pts_errors++;
    r->last_pts = pts;
    if (d->st->codecpar->codec_type == AVMEDIA_TYPE_AUDIO) {
        r->samples += f->nb_samples;
    } else {
        char hex[33];
        picture_md5(f, hex);
        if (r->frames >= nmd5 || strcmp(hex, md5s[r->frames]) != 0)
            r->md5_errors++;
    }
    r->frames++;
}

/// Pushes `path` into a byte queue, demuxes the stream of `type` and decodes all of it.
static int run(const char *path, int container, enum AVMediaType type, char (*md5s)[33], int nmd5, result *r)
{
    size_t size = 0;
    uint8_t *bytes = mqt_read_file(path, &size);
    mq_byte_queue *q = NULL;
    mq_demux *d = NULL;
    AVCodecContext *c = NULL;
    AVPacket *pkt = av_packet_alloc();
    AVFrame *f = av_frame_alloc();
    char why[256] = "";
    memset(r, 0, sizeof *r);
    if (!bytes || mq_byte_queue_create(&q) < 0)
        return -1;
    mq_byte_queue_set_container(q, container);
    mq_byte_queue_push(q, bytes, size);
    mq_byte_queue_end(q);
    int ret = mq_demux_open(q, type, &d, why, sizeof why);
    CHECK(ret == MQ_OK, "%s: demux open: %s", path, why);
    if (ret < 0)
        goto out;
    const AVCodec *codec = avcodec_find_decoder(d->st->codecpar->codec_id);
    c = avcodec_alloc_context3(codec);
    avcodec_parameters_to_context(c, d->st->codecpar);
    c->pkt_timebase = d->st->time_base;
    ret = avcodec_open2(c, codec, NULL);
    CHECK(ret == 0, "%s: open decoder", path);
    int rd = 0;
    while (ret == 0 && (rd = mq_demux_read(d, pkt)) >= 0) {
        CHECK(pkt->stream_index == d->st->index, "only the selected stream");
        avcodec_send_packet(c, pkt);
        av_packet_unref(pkt);
        while (avcodec_receive_frame(c, f) == 0)
            take_frame(d, f, md5s, nmd5, r);
    }
    CHECK(rd == AVERROR_EOF, "%s: the session ends in EOF (%d)", path, rd);
    avcodec_send_packet(c, NULL); // drain
    while (avcodec_receive_frame(c, f) == 0)
        take_frame(d, f, md5s, nmd5, r);
out:
    avcodec_free_context(&c);
    mq_demux_destroy(&d);
    CHECK(d == NULL, "destroy clears the pointer");
    mq_byte_queue_destroy(&q);
    av_packet_free(&pkt);
    av_frame_free(&f);
    free(bytes);
    return ret;
}

/// Reads the md5 column (the last field) of `ffmpeg -f framemd5` lines.
static int read_md5s(const char *path, char (*out)[33], int max)
{
    FILE *fp = fopen(path, "r");
    char line[512];
    int n = 0;
    while (fp && n < max && fgets(line, sizeof line, fp)) {
        if (line[0] == '#')
            continue;
        char *last = strrchr(line, ',');
        if (last && sscanf(last + 1, " %32s", out[n]) == 1)
            n++;
    }
    if (fp)
        fclose(fp);
    return n;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: demux_decode_test <video.mp4> <video.md5> <audio.mp4> <seconds>\n");
        return 2;
    }
    static char md5s[1024][33];
    int nmd5 = read_md5s(argv[2], md5s, 1024);
    CHECK(nmd5 > 10, "reference md5 list: %d pictures", nmd5);
    result v, a;
    run(argv[1], MQ_CONTAINER_FMP4, AVMEDIA_TYPE_VIDEO, md5s, nmd5, &v);
    printf("video: %d pictures, pts %.3f..%.3f, %d md5 mismatches\n", v.frames, v.first_pts, v.last_pts, v.md5_errors);
    CHECK(v.frames == nmd5, "every picture decoded: %d of %d", v.frames, nmd5);
    CHECK(v.md5_errors == 0, "%d pictures differ from ffmpeg's decode", v.md5_errors);
    CHECK(v.pts_errors == 0 && fabs(v.first_pts) < 1e-6, "pts increase from 0");

    // Memory trim after a decode: what start-up and the decode mapped in but is not written
    // goes (the decoder's code and tables among it), and the same stream decodes to the same
    // pictures afterwards (nothing the process wrote was dropped).
    int64_t released = 0;
    CHECK(mq_memory_trim(&released) == MQ_OK, "trim");
    printf("trim: %.1f MiB released\n", released / 1048576.0);
    CHECK(released >= 1 << 20 || getenv("MQ_EMULATED"), "a trim after a decode releases at least 1 MiB (%lld bytes)",
          (long long)released);
    result again;
    run(argv[1], MQ_CONTAINER_FMP4, AVMEDIA_TYPE_VIDEO, md5s, nmd5, &again);
    CHECK(again.frames == nmd5 && again.md5_errors == 0,
          "after the trim: every picture as ffmpeg decodes it (%d of %d, %d differ)", again.frames, nmd5,
          again.md5_errors);

    double seconds = atof(argv[4]);
    run(argv[3], MQ_CONTAINER_FMP4, AVMEDIA_TYPE_AUDIO, NULL, 0, &a);
    double got = a.samples / 48000.0;
    printf("audio: %d frames, %lld samples (%.4f s), pts %.4f..%.4f\n", a.frames, (long long)a.samples, got,
           a.first_pts, a.last_pts);
    // AAC: whole 1024-sample frames, plus the encoder's priming frame: at most 2048 more.
    CHECK(got >= seconds && got <= seconds + 2048 / 48000.0, "audio lasts %.4f s, expected %.1f s", got, seconds);
    CHECK(a.pts_errors == 0 && a.first_pts <= 0.0 && a.first_pts > -0.05, "audio pts from 0 (%.4f)", a.first_pts);

    if (argc > 5) {
        // The same streams muxed in one transport stream, read once per kind.
        result tv, ta;
        run(argv[5], MQ_CONTAINER_MPEGTS, AVMEDIA_TYPE_VIDEO, md5s, nmd5, &tv);
        printf("ts video: %d pictures, pts %.3f..%.3f, %d md5 mismatches\n", tv.frames, tv.first_pts, tv.last_pts,
               tv.md5_errors);
        CHECK(tv.frames == nmd5 && tv.md5_errors == 0, "TS: every picture as ffmpeg decodes it (%d of %d, %d differ)",
              tv.frames, nmd5, tv.md5_errors);
        CHECK(tv.pts_errors == 0, "TS: pictures in order");
        CHECK(fabs(tv.last_pts - tv.first_pts - (v.last_pts - v.first_pts)) < 1e-3, "TS: the same picture times");
        run(argv[5], MQ_CONTAINER_MPEGTS, AVMEDIA_TYPE_AUDIO, NULL, 0, &ta);
        printf("ts audio: %lld samples (%.4f s)\n", (long long)ta.samples, ta.samples / 48000.0);
        CHECK(ta.samples == a.samples, "TS: the same audio samples (%lld, fMP4 %lld)", (long long)ta.samples,
              (long long)a.samples);

        // fMP4 bytes announced as TS: corrupt at the first packet.
        size_t size = 0;
        uint8_t *bytes = mqt_read_file(argv[1], &size);
        mq_byte_queue *q = NULL;
        mq_byte_queue_create(&q);
        CHECK(mq_byte_queue_set_container(q, MQ_CONTAINER_MPEGTS) == MQ_OK, "container set before any push");
        mq_byte_queue_push(q, bytes, size);
        CHECK(mq_byte_queue_set_container(q, MQ_CONTAINER_FMP4) == MQ_ERR_STATE, "no container change after a push");
        CHECK(mq_byte_queue_wait(q) == MQ_INPUT_CORRUPT, "fMP4 bytes in TS mode are corrupt input");
        CHECK(strstr(mq_byte_queue_corrupt_reason(q), "MPEG-TS") != NULL, "the reason says why: %s",
              mq_byte_queue_corrupt_reason(q));
        mq_byte_queue_destroy(&q);
        free(bytes);
    }
    return mqt_done("demux_decode_test");
}
