#include <math.h>
#include <stdio.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libswresample/swresample.h>

#include "core/log.h"
#include "core/player_internal.h"
#include "input/decode_internal.h"
#include "input/decoder_open.h"
#include "input/demux.h"
#include "mq_err.h"

/// The decode thread of one track: waits for bytes, opens a demuxer session on them (init
/// segment to the next init segment or the end), decodes, and hands the results on
/// (decode_deliver.c): pictures to the video frame queue, audio resampled to float interleaved
/// at the output rate into the PCM ring `pcm` (the tempo thread passes it on to the audio
/// thread). Errors become ERROR events; a broken stream waits for mq_player_reset_track.

void mq_decode_post_error(mq_decoder *d, int code, const char *what)
{
    mq_log(MQ_LOG_WARN, "track %d: %s", d->t->id, what);
    mq_event_queue_push(d->p->events, MQ_EVENT_ERROR, d->t->id, code, NAN, "%s", what);
}

/* ---- codec ---- */

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
        mq_decode_post_error(d, ret, msg);
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

/* ---- session ---- */

/// Whether the picture in `pkt` ends before the clock's position now: it would be dropped as
/// late, so when no other picture refers to it, it need not be decoded at all (the start of a
/// segment before the wanted position, a catch-up).
static bool already_late(mq_decoder *d, const AVPacket *pkt, double *end)
{
    double clock;
    if (pkt->pts == AV_NOPTS_VALUE || !mq_decode_late_mark(d, &clock))
        return false;
    double tb = av_q2d(d->dmx->st->time_base);
    *end = (double)(pkt->pts + (pkt->duration > 0 ? pkt->duration : 0)) * tb + atomic_load(&d->t->pts_offset);
    return *end < clock;
}

static int decode_packet(mq_decoder *d, const AVPacket *pkt);

/// Adds one packet's decode time to the window; a window whose decoding took more than
/// decode_busy_limit of its media time asks for frame threads. Packets skipped as late are not
/// judged (nothing decoded).
static void judge_busy(mq_decoder *d, const AVPacket *pkt, double took)
{
    if (d->codec->skip_frame != AVDISCARD_DEFAULT)
        return;
    double dur = mq_decode_picture_seconds(d, pkt->duration);
    if (!(dur < 1)) // a packet's duration that is no frame's (a damaged box): one frame instead
        dur = mq_decode_picture_seconds(d, 0);
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
        mq_decode_post_error(d, MQ_ERR_DECODE, msg);
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
        ret = mq_decode_deliver(d, d->frame);
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
        mq_decode_post_error(d, ret, why);
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
            mq_decode_push_audio(d, NULL, end);
        swr_free(&d->swr); // the next stream's may differ
    }
    if (ret >= 0 && st == MQ_INPUT_DATA && rd != AVERROR_EOF) {
        snprintf(why, sizeof why, "demuxer failed: %s", av_err2str(rd));
        mq_decode_post_error(d, MQ_ERR_DEMUX, why);
        mq_byte_queue_skip_segment(t->input);
    }
    close_session(d);
}

/* ---- states ---- */

static void on_reset(mq_decoder *d)
{
    mq_player *p = d->p;
    mq_decode_free_held(d);
    atomic_store(&d->t->input_done, false);
    if (d->t->kind == MQ_TRACK_VIDEO) {
        mq_frame_queue_flush(p->vq);
        mq_cc_decoder_flush(d->cc); // (the screen starts empty; changes queued for flushed pictures go)
        mq_cc_queue_clear(&p->cc);
    } else
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
    mq_decode_settle_held(d); // a staged track's whole input decoded: its sound waits for the activation
    if (d->t->kind == MQ_TRACK_AUDIO) {
        if (d->swr)
            mq_decode_push_audio(d, NULL, atomic_load(&d->p->pcm->queued_until));
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
    mq_decode_post_error(d, MQ_ERR_DEMUX, msg);
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
            mq_decode_settle_held(d); // a session ended while sound was held: it waits for the activation
        st = mq_byte_queue_wait(d->t->input);
    }
}

void *mq_decode_thread_main(void *arg)
{
    mq_decoder d = {.t = arg, .p = ((mq_track *)arg)->player, .late_until = -INFINITY, .session_start = NAN};
    d.pkt = av_packet_alloc();
    d.frame = av_frame_alloc();
    if (!d.pkt || !d.frame) {
        mq_decode_post_error(&d, MQ_ERR_NO_MEMORY, "out of memory");
        mq_byte_queue_wait_reset(d.t->input); // nothing to do but wait for the stop
    } else {
        decode_loop(&d);
    }
    mq_decode_free_held(&d);
    close_session(&d);
    mq_cc_decoder_destroy(&d.cc);
    swr_free(&d.swr);
    av_packet_free(&d.pkt);
    av_frame_free(&d.frame);
    return NULL;
}
