#include <math.h>
#include <stdio.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
#include <libswresample/swresample.h>

#include "audio/resample.h"
#include "core/log.h"
#include "core/player_internal.h"
#include "core/thread.h"
#include "input/decoder_open.h"
#include "input/demux.h"
#include "mq_err.h"

/// The decode thread of one track: waits for bytes, opens a demuxer session on them (init
/// segment to the next init segment or the end), decodes, and hands the results on: pictures
/// to the video frame queue, audio resampled to float interleaved at the output rate into the
/// PCM ring `pcm` (the tempo thread passes it on to the audio thread). Errors become ERROR
/// events; a broken stream waits for mq_player_reset_track.

#define MQ_HELD_AUDIO 12 // frames a staged audio track decodes ahead (AAC at 48 kHz: 256 ms)

typedef struct mq_decoder {
    // decode thread only (lives on its stack)
    mq_track *t;
    mq_player *p;
    mq_demux *dmx;
    AVCodecContext *codec;
    AVPacket *pkt;
    AVFrame *frame;
    SwrContext *swr;
    int swr_rate, swr_format, swr_channels; // input the resampler was set up for
    double next_pts;                        // expected pts of the next picture (no pts)
    double late_until;                      // late pictures ending by here are counted dropped
    bool decode_error_reported;             // once per session
    bool format_reported;                   // TRACK_FORMAT sent for this session
    bool fallback_reported;                 // DECODER_FALLBACK sent (once per track)
    bool rolled;                            // the last session ended at a rollover: keep the codec
    double session_start;                   // media time of the session's first packet (NAN: none yet)
    bool rollover_asked;                    // for this session
    // Auto threads (decode_threads 0): a video decoder opened with one thread measures how much
    // of real time its decoding takes; over MQ_BUSY_WINDOW of media it must stay under
    // decode_busy_limit, else it is reopened with frame threads at the next keyframe (a slow
    // board, a heavy stream), or opened so at the next session, and stays so for the track's life.
    double busy, busy_media; // wall seconds decoding, media seconds decoded (window)
    bool want_threads;       // reopen with frame threads at the next keyframe
    bool threaded;           // auto threads escalated for good
    // A staged audio track's first sound, decoded ahead (mq_player_add_staged_track): handed on
    // at activation, so the ring starts with more than one frame (a busy machine's decode thread
    // may come late for the second: an underrun right after the cut).
    AVFrame *held[MQ_HELD_AUDIO];
    double held_pts[MQ_HELD_AUDIO]; // each one's media time (s), as deliver_audio takes it
    int nheld;
} mq_decoder;

static void post_error(mq_decoder *d, int code, const char *what)
{
    mq_log(MQ_LOG_WARN, "track %d: %s", d->t->id, what);
    mq_event_queue_push(d->p->events, MQ_EVENT_ERROR, d->t->id, code, NAN, "%s", what);
}

/* ---- codec ---- */

static void describe(mq_decoder *d, const AVFrame *f, char *buf, size_t n)
{
    const AVCodecContext *c = d->codec;
    const char *profile = av_get_profile_name(c->codec, c->profile);
    if (c->codec_type == AVMEDIA_TYPE_VIDEO) {
        AVRational fr = d->dmx->st->avg_frame_rate;
        const char *pix = av_get_pix_fmt_name(f->format);
        snprintf(buf, n, "video %s%s%s%s %dx%d %s %.3g fps", c->codec->name, profile ? " (" : "",
                 profile ? profile : "", profile ? ")" : "", f->width, f->height, pix ? pix : "?",
                 fr.den ? av_q2d(fr) : 0.0);
    } else {
        const char *fmt = av_get_sample_fmt_name(f->format);
        snprintf(buf, n, "audio %s%s%s%s %d Hz %d ch %s", c->codec->name, profile ? " (" : "", profile ? profile : "",
                 profile ? ")" : "", f->sample_rate, f->ch_layout.nb_channels, fmt ? fmt : "?");
    }
}

#define MQ_BUSY_WINDOW 2.0 // media seconds a single-threaded decoder is judged over

/// The decoder's thread count (`mq_player_config.decode_threads`; auto: one up to 1080p30 while
/// it keeps well ahead of real time, else libavcodec's frame threads, one per core and one more).
static int decode_threads(const mq_decoder *d)
{
    if (d->p->decode_threads > 0)
        return d->p->decode_threads;
    if (d->threaded || d->want_threads)
        return 0;
    const AVStream *st = d->dmx->st;
    AVRational fr = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
    double fps = fr.num > 0 && fr.den > 0 ? av_q2d(fr) : 30;
    double pixel_rate = (double)st->codecpar->width * st->codecpar->height * fps;
    return st->codecpar->codec_type == AVMEDIA_TYPE_VIDEO && pixel_rate > 1920.0 * 1088 * 30 * 1.01 ? 0 : 1;
}

/// Opens the preferred decoder that works (mq_player_config.decoders), else the default one.
static int open_codec(mq_decoder *d)
{
    const AVCodecParameters *par = d->dmx->st->codecpar;
    const char *cname = avcodec_get_name(par->codec_id);
    char failed[160], msg[256];
    int ret = mq_decoder_open(d->p->decoders, par, d->dmx->st->time_base, decode_threads(d), &d->codec, failed,
                              sizeof failed);
    if (ret < 0) {
        snprintf(msg, sizeof msg,
                 ret == MQ_ERR_UNSUPPORTED ? "no decoder for codec '%s'%s%s" : "cannot open a %s decoder%s%s", cname,
                 failed[0] ? "; " : "", failed);
        post_error(d, ret, msg);
        return ret;
    }
    if (failed[0] && !d->fallback_reported) {
        d->fallback_reported = true;
        mq_log(MQ_LOG_WARN, "track %d: %s; using %s", d->t->id, failed, d->codec->codec->name);
        mq_event_queue_push(d->p->events, MQ_EVENT_DECODER_FALLBACK, d->t->id, 0, NAN, "%s; using %s", failed,
                            d->codec->codec->name);
    }
    if (d->want_threads) { // opened with the frame threads judge_busy asked for: kept from now on
        d->want_threads = false;
        d->threaded = true;
    }
    return MQ_OK;
}

/// TRACK_FORMAT once per session, from the first decoded frame (the real format).
static void report_format(mq_decoder *d, const AVFrame *f)
{
    if (d->format_reported)
        return;
    d->format_reported = true;
    char msg[256];
    describe(d, f, msg, sizeof msg);
    mq_log(MQ_LOG_INFO, "track %d: %s", d->t->id, msg);
    double pts = f->pts != AV_NOPTS_VALUE ? f->pts * av_q2d(d->dmx->st->time_base) : NAN;
    mq_event_queue_push(d->p->events, MQ_EVENT_TRACK_FORMAT, d->t->id, 0, pts + atomic_load(&d->t->pts_offset), "%s",
                        msg);
}

/* ---- staged (decoded ahead) ---- */

/// The position a picture or sound is judged late against: a staged track's start (what ends
/// before it is not the next item's), else the schedule now. False: nothing is late (no
/// timeline yet).
static bool late_mark(mq_decoder *d, double *clock)
{
    if (atomic_load(&d->t->staged)) {
        *clock = atomic_load(&d->t->stage_start);
        return true;
    }
    // Judged on the schedule, not the master clock: right after a reset (a new item, a seek)
    // the audio clock still tells the old stream's time until the audio thread's next period,
    // and a first picture decoded within it would be thrown away as late (the video thread
    // drops what is late when it is due, on the master clock).
    return mq_clock_schedule(&d->p->clock, mq_clock_now(), clock);
}

/// A staged track holds its first picture or sound here until mq_player_activate_tracks
/// (which first removes the tracks it replaces and empties the queues). False when its input
/// was reset or aborted meanwhile (the held frame is dropped).
static bool wait_activation(mq_decoder *d)
{
    _Atomic bool *cancel = mq_byte_queue_cancel_flag(d->t->input);
    while (atomic_load(&d->t->staged) && !atomic_load(cancel))
        mq_sleep_until(mq_clock_now() + 0.002);
    return !atomic_load(cancel);
}

/* ---- video ---- */

/// Seconds a picture of `duration` (stream time base, 0: unknown) lasts: else one frame at the
/// stream's average rate, else 1/25.
static double picture_seconds(const mq_decoder *d, int64_t duration)
{
    AVRational tb = d->dmx->st->time_base, fr = d->dmx->st->avg_frame_rate;
    if (duration > 0)
        return (double)duration * av_q2d(tb);
    return fr.num > 0 && fr.den > 0 ? 1.0 / av_q2d(fr) : 1.0 / 25;
}

/// Whether a late picture is the join's still (mq_player_config.hide_join_still): the first one
/// decoded before any due picture was presented (the keyframe a join's catch-up starts at).
static bool join_still(mq_player *p)
{
    return !p->hide_join_still && atomic_load(&p->frames_presented) == 0 && !atomic_exchange(&p->still_offered, true);
}

static int deliver_video(mq_decoder *d, AVFrame *f)
{
    mq_player *p = d->p;
    int64_t ts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
    mq_vframe v = {.duration = picture_seconds(d, f->pkt_duration)};
    v.media_pts = ts != AV_NOPTS_VALUE ? (double)ts * av_q2d(d->dmx->st->time_base) : d->next_pts;
    v.pts = v.media_pts + atomic_load(&d->t->pts_offset);
    d->next_pts = v.media_pts + v.duration;
    atomic_fetch_add(&p->frames_decoded, 1);

    double clock;
    bool staged = atomic_load(&d->t->staged);
    if (late_mark(d, &clock) && v.pts + v.duration < clock) {
        v.still = !staged && join_still(p);
        if (!v.still) {
            if (!staged && v.pts + v.duration > d->late_until + 1e-6) // not counted when it was sent late
                mq_player_count_dropped(d->p);                        // already late: never queue it
            av_frame_unref(f);
            return MQ_OK;
        }
    }
    v.frame = av_frame_alloc();
    if (!v.frame)
        return MQ_ERR_NO_MEMORY;
    av_frame_move_ref(v.frame, f);
    if (staged && !wait_activation(d)) {
        av_frame_free(&v.frame);
        return MQ_OK;
    }
    return mq_frame_queue_push(p->vq, &v, mq_byte_queue_cancel_flag(d->t->input));
}

/* ---- audio ---- */

static int setup_swr(mq_decoder *d, AVFrame *f)
{
    if (d->swr && d->swr_rate == f->sample_rate && d->swr_format == f->format &&
        d->swr_channels == f->ch_layout.nb_channels)
        return MQ_OK;
    if (mq_resampler_open(&d->swr, f, d->p->sample_rate, d->p->channels) < 0) {
        post_error(d, MQ_ERR_DECODE, "cannot set up the audio resampler");
        return MQ_ERR_DECODE;
    }
    d->swr_rate = f->sample_rate;
    d->swr_format = f->format;
    d->swr_channels = f->ch_layout.nb_channels;
    return MQ_OK;
}

/// Waits (polling: the audio thread never signals) for a free block of the ring.
static mq_pcm_block *wait_block(mq_decoder *d)
{
    _Atomic bool *cancel = mq_byte_queue_cancel_flag(d->t->input);
    for (;;) {
        mq_pcm_block *b = mq_pcm_ring_acquire(d->p->pcm);
        if (b || atomic_load(cancel))
            return b;
        mq_sleep_until(mq_clock_now() + 0.005);
    }
}

/// Resamples `f` (NULL: drains the resampler) into ring blocks starting at presentation `pts`.
static int push_audio(mq_decoder *d, const AVFrame *f, double pts)
{
    mq_player *p = d->p;
    const uint8_t **in = f ? (const uint8_t **)f->extended_data : NULL;
    int in_count = f ? f->nb_samples : 0;
    for (;;) {
        mq_pcm_block *b = wait_block(d);
        if (!b)
            return MQ_ERR_CLOSED;
        uint8_t *out = (uint8_t *)b->data;
        int n = swr_convert(d->swr, &out, p->pcm->block_frames, in, in_count);
        if (n <= 0)
            return n < 0 ? MQ_ERR_DECODE : MQ_OK;
        b->pts = pts;
        b->rate = 1.0;
        b->frames = n;
        pts += (double)n / p->sample_rate;
        mq_pcm_ring_commit(p->pcm, pts);
        in = NULL;
        in_count = 0;
        if (n < p->pcm->block_frames)
            return MQ_OK;
    }
}

/// Resamples `f` (media time `media`, seconds) into the ring; consumes it.
static int deliver_audio_at(mq_decoder *d, AVFrame *f, double media)
{
    int ret = setup_swr(d, f);
    if (ret < 0) {
        av_frame_unref(f);
        return ret;
    }
    // What comes out first is what the resampler still holds from before this frame.
    double pts = media + atomic_load(&d->t->pts_offset) - (double)swr_get_delay(d->swr, 1000000) / 1e6;
    ret = push_audio(d, f, pts);
    av_frame_unref(f);
    return ret;
}

static void free_held(mq_decoder *d)
{
    for (int i = 0; i < d->nheld; i++)
        av_frame_free(&d->held[i]);
    d->nheld = 0;
}

/// The held sound, once the track is activated: handed on in order (dropped if its input was
/// reset meanwhile).
static int settle_held(mq_decoder *d)
{
    if (d->nheld == 0)
        return MQ_OK;
    if (!wait_activation(d)) {
        free_held(d);
        return MQ_OK;
    }
    int ret = MQ_OK;
    for (int i = 0; i < d->nheld && ret >= 0; i++)
        ret = deliver_audio_at(d, d->held[i], d->held_pts[i]);
    free_held(d);
    return ret;
}

static int deliver_audio(mq_decoder *d, AVFrame *f)
{
    int64_t ts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
    double media = ts != AV_NOPTS_VALUE ? (double)ts * av_q2d(d->dmx->st->time_base) : d->next_pts;
    d->next_pts = media + (double)f->nb_samples / f->sample_rate;
    if (atomic_load(&d->t->staged)) { // decoded ahead: from its start on, held until activated
        double end = media + atomic_load(&d->t->pts_offset) + (double)f->nb_samples / f->sample_rate;
        AVFrame *kept = end > atomic_load(&d->t->stage_start) ? av_frame_alloc() : NULL;
        if (!kept) {
            av_frame_unref(f);
            return MQ_OK;
        }
        av_frame_move_ref(kept, f);
        d->held[d->nheld] = kept;
        d->held_pts[d->nheld++] = media;
        return d->nheld == MQ_HELD_AUDIO ? settle_held(d) : MQ_OK;
    }
    int ret = settle_held(d); // activated while they were held
    return ret < 0 ? ret : deliver_audio_at(d, f, media);
}

/* ---- session ---- */

/// Whether the picture in `pkt` ends before the clock's position now: it would be dropped as
/// late, so when no other picture refers to it, it need not be decoded at all (the start of a
/// segment before the wanted position, a catch-up).
static bool already_late(mq_decoder *d, const AVPacket *pkt, double *end)
{
    double clock;
    if (pkt->pts == AV_NOPTS_VALUE || !late_mark(d, &clock))
        return false;
    double tb = av_q2d(d->dmx->st->time_base);
    *end = (double)(pkt->pts + (pkt->duration > 0 ? pkt->duration : 0)) * tb + atomic_load(&d->t->pts_offset);
    return *end < clock;
}

static int deliver(mq_decoder *d, AVFrame *f)
{
    report_format(d, f);
    return d->t->kind == MQ_TRACK_VIDEO ? deliver_video(d, f) : deliver_audio(d, f);
}

static int decode_packet(mq_decoder *d, const AVPacket *pkt);

/// Adds one packet's decode time to the window; a window whose decoding took more than
/// decode_busy_limit of its media time asks for frame threads. Packets skipped as late are not
/// judged (nothing decoded).
static void judge_busy(mq_decoder *d, const AVPacket *pkt, double took)
{
    if (d->codec->skip_frame != AVDISCARD_DEFAULT)
        return;
    double dur = picture_seconds(d, pkt->duration);
    if (!(dur < 1)) // a packet's duration that is no frame's (a damaged box): one frame instead
        dur = picture_seconds(d, 0);
    d->busy += took;
    d->busy_media += dur;
    if (d->busy_media < MQ_BUSY_WINDOW)
        return;
    if (d->busy > d->p->decode_busy_limit * d->busy_media && !d->want_threads) {
        d->want_threads = true;
        mq_log(MQ_LOG_INFO,
               "track %d: one decoder thread took %.0f%% of real time; frame threads from the next keyframe", d->t->id,
               100 * d->busy / d->busy_media);
    }
    d->busy = d->busy_media = 0;
}

/// Reopens a single-threaded decoder with frame threads at a keyframe (its pictures so far
/// drained first), once judge_busy asked for them.
static int escalate_threads(mq_decoder *d, const AVPacket *pkt)
{
    if (!d->want_threads || !(pkt->flags & AV_PKT_FLAG_KEY))
        return MQ_OK;
    int ret = decode_packet(d, NULL);
    if (ret < 0)
        return ret;
    avcodec_free_context(&d->codec);
    return open_codec(d); // (with frame threads: want_threads)
}

/// Sends `pkt` (NULL: drain) and hands on every frame that comes out. Decoder errors are
/// reported once per session and skipped; only a cancelled output stops the loop.
static int decode_packet(mq_decoder *d, const AVPacket *pkt)
{
    if (pkt && d->t->kind == MQ_TRACK_VIDEO) {
        // A late picture no other refers to is not decoded at all; each late one is dropped.
        double end = 0;
        bool late = already_late(d, pkt, &end);
        d->codec->skip_frame = late ? AVDISCARD_NONREF : AVDISCARD_DEFAULT;
        if (late && !atomic_load(&d->t->staged)) {
            mq_player_count_dropped(d->p);
            d->late_until = fmax(d->late_until, end);
        }
    }
    // Auto threads: the codec's own time (sending and receiving, not the hand-over) is judged.
    bool judged =
        pkt && d->t->kind == MQ_TRACK_VIDEO && d->p->decode_threads == 0 && !d->threaded && d->codec->thread_count == 1;
    double mark = judged ? mq_clock_now() : 0, took = 0;
    int ret = avcodec_send_packet(d->codec, pkt);
    if (ret < 0 && ret != AVERROR(EAGAIN) && ret != AVERROR_EOF && !d->decode_error_reported) {
        char msg[128];
        snprintf(msg, sizeof msg, "decoder rejected the stream: %s", av_err2str(ret));
        post_error(d, MQ_ERR_DECODE, msg);
        d->decode_error_reported = true;
    }
    for (;;) {
        ret = avcodec_receive_frame(d->codec, d->frame);
        if (judged)
            took += mq_clock_now() - mark;
        if (ret < 0) { // EAGAIN, EOF: no frame (yet); else a broken frame: skipped
            if (judged)
                judge_busy(d, pkt, took);
            return MQ_OK;
        }
        ret = deliver(d, d->frame);
        if (ret < 0)
            return ret;
        if (judged)
            mark = mq_clock_now();
    }
}

static void close_session(mq_decoder *d)
{
    avcodec_free_context(&d->codec);
    mq_demux_destroy(&d->dmx);
}

/// Asks for a fresh demuxer session at the next segment once this one has read
/// `mq_player_config.demux_rollover` seconds of media (the fMP4 demuxer's per-sample index
/// grows for as long as a session lives).
static void maybe_rollover(mq_decoder *d, const AVPacket *pkt)
{
    if (d->rollover_asked || pkt->pts == AV_NOPTS_VALUE)
        return;
    double t = (double)pkt->pts * av_q2d(d->dmx->st->time_base);
    if (isnan(d->session_start))
        d->session_start = t;
    else if (t - d->session_start >= d->p->demux_rollover)
        d->rollover_asked = mq_byte_queue_request_rollover(d->t->input) || true; // once either way
}

/// The codec of the last session goes on after a rollover (same init segment: no drain, no
/// reopen, references kept); otherwise a new one is opened.
static int session_codec(mq_decoder *d)
{
    bool keep = d->rolled && d->codec && !d->want_threads;
    d->rolled = false;
    if (keep)
        return MQ_OK;
    avcodec_free_context(&d->codec);
    return open_codec(d); // (with frame threads when judge_busy asked for them)
}

/// Demuxes and decodes one session (until a boundary, the end, a reset or a failure).
static void run_session(mq_decoder *d)
{
    mq_track *t = d->t;
    char why[256];
    enum AVMediaType type = t->kind == MQ_TRACK_VIDEO ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO;
    double offset = mq_byte_queue_take_offset(t->input); // a new stream (discontinuity) passed
    if (!isnan(offset))
        atomic_store(&t->pts_offset, offset);
    int ret = mq_demux_open(t->input, type, &d->dmx, why, sizeof why);
    mq_input_state st = mq_byte_queue_state(t->input);
    if (ret < 0 && (st == MQ_INPUT_DATA || st == MQ_INPUT_ENDED || st == MQ_INPUT_BOUNDARY)) {
        post_error(d, ret, why);
        mq_byte_queue_skip_segment(t->input); // the next segment may open (after the init segment)
    }
    bool rolled = d->rolled;
    if (ret < 0 || session_codec(d) < 0) {
        close_session(d);
        if (ret >= 0) // codec failure
            mq_byte_queue_fail(t->input);
        return;
    }
    if (!rolled)
        d->decode_error_reported = d->format_reported = false;
    d->session_start = NAN;
    d->rollover_asked = false;
    int rd;
    _Atomic bool *cancel = mq_byte_queue_cancel_flag(t->input);
    while ((rd = mq_demux_read(d->dmx, d->pkt)) >= 0) {
        if (atomic_load(cancel)) { // a reset cut this packet short: it is not the stream's
            av_packet_unref(d->pkt);
            break;
        }
        maybe_rollover(d, d->pkt);
        ret = escalate_threads(d, d->pkt);
        if (ret >= 0)
            ret = decode_packet(d, d->pkt);
        av_packet_unref(d->pkt);
        if (ret < 0)
            break;
    }
    st = mq_byte_queue_state(t->input);
    if (ret >= 0 && st == MQ_INPUT_ROLLOVER) { // the same stream goes on: keep the decoder
        mq_demux_destroy(&d->dmx);
        d->rolled = true;
        return;
    }
    if (ret >= 0 && (st == MQ_INPUT_BOUNDARY || st == MQ_INPUT_ENDED))
        decode_packet(d, NULL);                          // drain: the pictures still in the decoder
    if (ret >= 0 && st == MQ_INPUT_BOUNDARY && d->swr) { // and the sound still in the resampler
        double end = atomic_load(&d->p->pcm->queued_until);
        if (isfinite(end))
            push_audio(d, NULL, end);
        swr_free(&d->swr); // the next stream's may differ
    }
    if (ret >= 0 && st == MQ_INPUT_DATA && rd != AVERROR_EOF) {
        snprintf(why, sizeof why, "demuxer failed: %s", av_err2str(rd));
        post_error(d, MQ_ERR_DEMUX, why);
        mq_byte_queue_skip_segment(t->input);
    }
    close_session(d);
}

/* ---- states ---- */

static void on_reset(mq_decoder *d)
{
    mq_player *p = d->p;
    free_held(d);
    atomic_store(&d->t->input_done, false);
    if (d->t->kind == MQ_TRACK_VIDEO)
        mq_frame_queue_flush(p->vq);
    else
        mq_pcm_ring_flush(p->pcm);
    swr_free(&d->swr);
    if (d->rolled) { // a codec kept for a rollover: the stream after a reset may be another
        avcodec_free_context(&d->codec);
        d->rolled = false;
    }
    d->next_pts = 0;
    d->late_until = -INFINITY;
    mq_byte_queue_ack_reset(d->t->input);
}

static void on_ended(mq_decoder *d)
{
    settle_held(d); // a staged track's whole input decoded: its sound waits for the activation
    if (d->t->kind == MQ_TRACK_AUDIO) {
        if (d->swr)
            push_audio(d, NULL, atomic_load(&d->p->pcm->queued_until));
        atomic_store(&d->p->pcm->eof, true);
    }
    atomic_store(&d->t->input_done, true);
}

/// A damaged segment: reported, then skipped; the track goes on at the next one (what was
/// decoded before stays queued: the picture holds, the audio has a gap of silence).
static void on_corrupt(mq_decoder *d)
{
    char msg[256];
    snprintf(msg, sizeof msg, "bad input: %s", mq_byte_queue_corrupt_reason(d->t->input));
    post_error(d, MQ_ERR_DEMUX, msg);
    mq_byte_queue_skip_segment(d->t->input);
}

static void decode_loop(mq_decoder *d)
{
    mq_input_state st = mq_byte_queue_wait(d->t->input);
    for (;;) {
        switch (st) {
        case MQ_INPUT_ABORTED:
            return;
        case MQ_INPUT_RESET:
            on_reset(d);
            break;
        case MQ_INPUT_BOUNDARY:
            mq_byte_queue_pass_boundary(d->t->input);
            break;
        case MQ_INPUT_ROLLOVER:
            mq_log(MQ_LOG_INFO, "track %d: a fresh demuxer after %.1f s of media", d->t->id, d->p->demux_rollover);
            mq_byte_queue_pass_rollover(d->t->input);
            break;
        case MQ_INPUT_CORRUPT:
            on_corrupt(d);
            break;
        case MQ_INPUT_ENDED:
            on_ended(d);
            st = mq_byte_queue_wait_reset(d->t->input);
            continue;
        case MQ_INPUT_DATA:
            run_session(d);
            break;
        }
        if (d->nheld > 0 && st != MQ_INPUT_RESET)
            settle_held(d); // a session ended while sound was held: it waits for the activation
        st = mq_byte_queue_wait(d->t->input);
    }
}

void *mq_decode_thread_main(void *arg)
{
    mq_decoder d = {.t = arg, .p = ((mq_track *)arg)->player, .late_until = -INFINITY, .session_start = NAN};
    d.pkt = av_packet_alloc();
    d.frame = av_frame_alloc();
    if (!d.pkt || !d.frame) {
        post_error(&d, MQ_ERR_NO_MEMORY, "out of memory");
        mq_byte_queue_wait_reset(d.t->input); // nothing to do but wait for the stop
    } else {
        decode_loop(&d);
    }
    free_held(&d);
    close_session(&d);
    swr_free(&d.swr);
    av_packet_free(&d.pkt);
    av_frame_free(&d.frame);
    return NULL;
}
