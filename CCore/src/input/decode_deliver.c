#include <math.h>
#include <stdio.h>

#include <libavcodec/avcodec.h>
#include <libavutil/pixdesc.h>
#include <libswresample/swresample.h>

#include "audio/resample.h"
#include "core/log.h"
#include "core/player_internal.h"
#include "core/thread.h"
#include "input/decode_internal.h"
#include "input/demux.h"
#include "mq_err.h"

/// What a track's decode thread hands on (decode.c decodes it): pictures to the video frame
/// queue, sound resampled into the PCM ring, and a staged track's first picture or sound held
/// until it is activated.

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
bool mq_decode_late_mark(mq_decoder *d, double *clock)
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
/// (which first removes the tracks it replaces and empties the queues), asleep on its input's
/// condition (the activation wakes it). False when its input was reset or aborted meanwhile
/// (the held frame is dropped).
static bool wait_activation(mq_decoder *d)
{
    return mq_byte_queue_wait_while(d->t->input, &d->t->staged);
}

/* ---- video ---- */

/// Seconds a picture of `duration` (stream time base, 0: unknown) lasts: else one frame at the
/// stream's average rate, else 1/25.
double mq_decode_picture_seconds(const mq_decoder *d, int64_t duration)
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

/// The captions a picture carries, decoded; a change of the screen queued for the video thread,
/// which reports it with the picture at `pts` (or the first presented after it).
static void captions(mq_decoder *d, const AVFrame *f, double pts)
{
    if (d->cc_none || !av_frame_get_side_data(f, AV_FRAME_DATA_A53_CC))
        return;
    if (!d->cc && mq_cc_decoder_create(&d->cc) < 0) {
        d->cc_none = true;
        mq_log(MQ_LOG_WARN, "track %d: its pictures carry closed captions, and no decoder for them is here", d->t->id);
        return;
    }
    char text[MQ_CC_TEXT];
    if (mq_cc_decoder_feed(d->cc, f, pts, text, sizeof text) == 1)
        mq_cc_queue_push_screen(&d->p->cc, pts, text, mq_cc_decoder_events(d->cc));
}

static int deliver_video(mq_decoder *d, AVFrame *f)
{
    mq_player *p = d->p;
    int64_t ts = f->pts != AV_NOPTS_VALUE ? f->pts : f->best_effort_timestamp;
    mq_vframe v = {.duration = mq_decode_picture_seconds(d, f->pkt_duration)};
    v.media_pts = ts != AV_NOPTS_VALUE ? (double)ts * av_q2d(d->dmx->st->time_base) : d->next_pts;
    v.pts = v.media_pts + atomic_load(&d->t->pts_offset);
    d->next_pts = v.media_pts + v.duration;
    atomic_fetch_add(&p->frames_decoded, 1);
    captions(d, f, v.pts); // every picture's, also one dropped late below: the screen is built over many

    double clock;
    bool staged = atomic_load(&d->t->staged);
    if (mq_decode_late_mark(d, &clock) && v.pts + v.duration < clock) {
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
    if (staged) { // decoded ahead: its first pictures held until activated
        if (d->nheld_video == 0 && isnan(atomic_load(&d->t->held_pts)))
            atomic_store(&d->t->held_pts, v.pts);
        d->held_video[d->nheld_video++] = v;
        return d->nheld_video == MQ_HELD_VIDEO ? mq_decode_settle_held(d) : MQ_OK;
    }
    int ret = mq_decode_settle_held(d); // activated while they were held
    if (ret < 0) {
        av_frame_free(&v.frame);
        return ret;
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
        mq_decode_post_error(d, MQ_ERR_DECODE, "cannot set up the audio resampler");
        return MQ_ERR_DECODE;
    }
    d->swr_rate = f->sample_rate;
    d->swr_format = f->format;
    d->swr_channels = f->ch_layout.nb_channels;
    return MQ_OK;
}

/// Waits for a free block of the ring, looking again each time a block's worth of sound has
/// played (the ring is full then, seconds ahead: a block frees as often); a reset or an abort
/// of the input ends the wait at once. (Its consumer, on the real-time side, never signals.)
static mq_pcm_block *wait_block(mq_decoder *d)
{
    _Atomic bool *cancel = mq_byte_queue_cancel_flag(d->t->input);
    double block = (double)d->p->pcm->block_frames / d->p->sample_rate;
    for (;;) {
        mq_pcm_block *b = mq_pcm_ring_acquire(d->p->pcm);
        if (b || atomic_load(cancel))
            return b;
        mq_byte_queue_sleep(d->t->input, mq_clock_now() + block);
    }
}

/// Resamples `f` (NULL: drains the resampler) into ring blocks starting at presentation `pts`.
int mq_decode_push_audio(mq_decoder *d, const AVFrame *f, double pts)
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
    ret = mq_decode_push_audio(d, f, pts);
    av_frame_unref(f);
    return ret;
}

void mq_decode_free_held(mq_decoder *d)
{
    for (int i = 0; i < d->nheld; i++)
        av_frame_free(&d->held[i]);
    d->nheld = 0;
    for (int i = 0; i < d->nheld_video; i++)
        av_frame_free(&d->held_video[i].frame);
    d->nheld_video = 0;
}

/// The held sound or pictures, once the track is activated: handed on in order (dropped if its
/// input was reset meanwhile).
int mq_decode_settle_held(mq_decoder *d)
{
    if (d->nheld == 0 && d->nheld_video == 0)
        return MQ_OK;
    if (!wait_activation(d)) {
        mq_decode_free_held(d);
        return MQ_OK;
    }
    int ret = MQ_OK;
    for (int i = 0; i < d->nheld && ret >= 0; i++)
        ret = deliver_audio_at(d, d->held[i], d->held_pts[i]);
    for (int i = 0; i < d->nheld_video && ret >= 0; i++)
        ret = mq_frame_queue_push(d->p->vq, &d->held_video[i], mq_byte_queue_cancel_flag(d->t->input));
    mq_decode_free_held(d); // (what was not handed on)
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
        if (d->nheld == 0 && isnan(atomic_load(&d->t->held_pts)))
            atomic_store(&d->t->held_pts, media + atomic_load(&d->t->pts_offset));
        d->held[d->nheld] = kept;
        d->held_pts[d->nheld++] = media;
        return d->nheld == MQ_HELD_AUDIO ? mq_decode_settle_held(d) : MQ_OK;
    }
    int ret = mq_decode_settle_held(d); // activated while they were held
    return ret < 0 ? ret : deliver_audio_at(d, f, media);
}

int mq_decode_deliver(mq_decoder *d, AVFrame *f)
{
    report_format(d, f);
    return d->t->kind == MQ_TRACK_VIDEO ? deliver_video(d, f) : deliver_audio(d, f);
}
