#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/player_internal.h"
#include "core/thread.h"
#include "input/decoder_open.h"
#include "mq_err.h"

/// The player: owns the outputs, the tracks (byte queue + decode thread each), the tempo,
/// audio (master clock), video and monitor threads, and the clips handed to it. Everything here
/// runs on the controlling thread (see ARCHITECTURE.md for the threads and what they share).

static void reap_clips(mq_player *p, bool all);

/* ---- create / destroy ---- */

static int apply_config(mq_player *p, const mq_player_config *cfg, int *buffer_ms, int *queue)
{
    p->sample_rate = cfg->sample_rate > 0 ? cfg->sample_rate : 48000;
    p->channels = cfg->channels > 0 ? cfg->channels : 2;
    *buffer_ms = cfg->audio_buffer_ms > 0 ? cfg->audio_buffer_ms : 60;
    *queue = cfg->video_queue_frames > 0 ? cfg->video_queue_frames : MQ_VIDEO_QUEUE_FRAMES;
    if (p->sample_rate < 8000 || p->sample_rate > 192000 || p->channels > 8 || *buffer_ms < 20 || *buffer_ms > 2000 ||
        *queue < 2 || *queue > 240 || cfg->sample_rate < 0 || cfg->channels < 0 || cfg->video_fit < MQ_FIT_CONTAIN ||
        cfg->video_fit > MQ_FIT_SCALEDOWN || cfg->video_rotation < 0 || cfg->video_rotation > 270 ||
        cfg->video_rotation % 90 != 0 || mq_decoder_prefs_check(cfg->decoders) < 0 || cfg->decode_threads < 0 ||
        cfg->decode_threads > 64 || !(cfg->demux_rollover >= 0) ||
        !(cfg->decode_busy_limit >= 0 && cfg->decode_busy_limit <= 1) || cfg->hide_join_still < 0 ||
        cfg->hide_join_still > 1)
        return MQ_ERR_INVALID_ARGUMENT;
    p->decode_threads = cfg->decode_threads;
    p->decode_busy_limit = cfg->decode_busy_limit > 0 ? cfg->decode_busy_limit : 0.5;
    p->demux_rollover = cfg->demux_rollover > 0 ? cfg->demux_rollover : 60;
    p->hide_join_still = cfg->hide_join_still == 1;
    if (cfg->decoders && cfg->decoders[0] && !(p->decoders = strdup(cfg->decoders)))
        return MQ_ERR_NO_MEMORY;
    return MQ_OK;
}

static void init_shared(mq_player *p)
{
    mq_clock_init(&p->clock);
    atomic_init(&p->state, MQ_STATE_IDLE);
    atomic_init(&p->wall_offset, 0.0);
    atomic_init(&p->audio_delay, 0.0);
    atomic_init(&p->audio_lag, NAN);
    atomic_init(&p->audio_moves, 0);
    atomic_init(&p->audio_readings, 0);
    atomic_init(&p->first_frame_mono, 0.0);
    atomic_init(&p->av_offset, NAN);
    atomic_init(&p->av_offset_peak, NAN);
    atomic_init(&p->underrun_media, NAN);
    atomic_init(&p->drained_gen, -1);
    atomic_init(&p->drained_mono, 0.0);
}

static int open_outputs(mq_player *p, const mq_player_config *cfg, int buffer_ms, int queue)
{
    mq_video_out_options vopts = {.fit = cfg->video_fit, .rotation = cfg->video_rotation, .poster = cfg->poster};
    atomic_init(&p->fit_req, cfg->video_fit);
    atomic_init(&p->captions_req, false);
    int ret = mq_audio_out_create(cfg->audio_out, p->sample_rate, p->channels, buffer_ms, &p->ao);
    if (ret < 0)
        return ret;
    p->sample_rate = p->ao->rate; // the device may have picked another rate
    p->period_frames = p->sample_rate / 100;
    p->buffer_frames = buffer_ms * p->sample_rate / 1000;
    if (p->buffer_frames < 2 * p->period_frames)
        p->buffer_frames = 2 * p->period_frames;
    if ((ret = mq_pcm_ring_create(MQ_PCM_BLOCKS, MQ_PCM_BLOCK_FRAMES, p->channels, &p->pcm)) < 0 ||
        (ret = mq_pcm_ring_create(MQ_OUT_BLOCKS, MQ_OUT_BLOCK_FRAMES, p->channels, &p->out)) < 0 ||
        (ret = mq_frame_queue_create(queue, cfg->video_queue_frames > 0 ? 0 : MQ_VIDEO_QUEUE_BYTES, &p->vq)) < 0 ||
        (ret = mq_video_out_create(cfg->video_out, &vopts, &p->vo)) < 0)
        return ret;
    return mq_audio_sync_init(p);
}

int mq_player_create(const mq_player_config *cfg, mq_player **out)
{
    if (!cfg || !out)
        return MQ_ERR_INVALID_ARGUMENT;
    *out = NULL;
    mq_ffmpeg_init();
    mq_player *p = calloc(1, sizeof *p);
    if (!p)
        return MQ_ERR_NO_MEMORY;
    init_shared(p);
    int buffer_ms, queue;
    int ret = apply_config(p, cfg, &buffer_ms, &queue);
    if (ret < 0)
        goto fail;
    ret = MQ_ERR_NO_MEMORY;
    if (pthread_mutex_init(&p->lock, NULL) != 0)
        goto fail;
    p->sync_ok = 1;
    if (mq_cond_init_mono(&p->cond) < 0)
        goto fail;
    p->sync_ok = 2;
    if (pthread_mutex_init(&p->snap_lock, NULL) != 0)
        goto fail;
    p->sync_ok = 3;
    if (!(p->snap = av_frame_alloc()))
        goto fail;
    mq_cc_queue_init(&p->cc); // (without its lock, captions are not reported: playback goes on)
    if ((ret = mq_event_queue_create(256, &p->events)) < 0 || (ret = open_outputs(p, cfg, buffer_ms, queue)) < 0)
        goto fail;
    *out = p;
    return MQ_OK;
fail:
    mq_player_destroy(&p);
    return ret;
}

static void stop_threads(mq_player *p)
{
    atomic_store(&p->quit, true);
    for (int i = 0; i < p->ntracks; i++)
        mq_byte_queue_abort(p->tracks[i]->input); // unblocks its decode thread
    if (p->vq)
        mq_frame_queue_kick(p->vq);
    if (p->sync_ok >= 2) {
        pthread_mutex_lock(&p->lock);
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
    }
    if (p->ctl.audio_running)
        pthread_join(p->ctl.audio_thread, NULL);
    if (p->ctl.tempo_running)
        pthread_join(p->ctl.tempo_thread, NULL);
    if (p->ctl.video_running)
        pthread_join(p->ctl.video_thread, NULL);
    if (p->ctl.monitor_running)
        pthread_join(p->ctl.monitor_thread, NULL);
    p->ctl.audio_running = p->ctl.video_running = p->ctl.monitor_running = p->ctl.tempo_running = false;
    for (int i = 0; i < p->ntracks; i++)
        mq_track_destroy(&p->tracks[i]); // joins its decode thread
}

void mq_player_destroy(mq_player **pp)
{
    mq_player *p = pp ? *pp : NULL;
    if (!p)
        return;
    stop_threads(p);
    mq_video_out_destroy(&p->vo);
    mq_audio_out_destroy(&p->ao); // finalises a WAV header
    for (int i = 1; i < MQ_MIXER_MAX_INPUTS; i++) {
        mq_clip *c = atomic_exchange(&p->slots[i].want, NULL);
        mq_clip_destroy(&c); // every thread is stopped
    }
    reap_clips(p, true); // every thread is stopped: frees every retired clip
    mq_audio_sync_uninit(p);
    mq_frame_queue_destroy(&p->vq);
    mq_cc_queue_destroy(&p->cc);
    mq_pcm_ring_destroy(&p->pcm);
    mq_pcm_ring_destroy(&p->out);
    mq_event_queue_destroy(&p->events);
    if (p->sync_ok >= 1)
        pthread_mutex_destroy(&p->lock);
    if (p->sync_ok >= 2)
        pthread_cond_destroy(&p->cond);
    if (p->sync_ok >= 3)
        pthread_mutex_destroy(&p->snap_lock);
    av_frame_free(&p->snap);
    free(p->decoders);
    free(p);
    *pp = NULL;
}

/* ---- timing, start ---- */

int mq_player_set_wall_offset(mq_player *p, double offset)
{
    if (!p || !isfinite(offset))
        return MQ_ERR_INVALID_ARGUMENT;
    atomic_store(&p->wall_offset, offset);
    return MQ_OK;
}

int mq_player_set_timeline(mq_player *p, double mono_anchor, double media_anchor, double rate)
{
    if (!p || !isfinite(mono_anchor) || !isfinite(media_anchor) || !isfinite(rate) || rate < 0)
        return MQ_ERR_INVALID_ARGUMENT;
    if (mq_stretch_wanted(rate))
        (void)mq_tempo_prepare(); // libavfilter loads beside playback, before the tempo stage wants it
    mq_clock_set_timeline(&p->clock, mono_anchor, media_anchor, rate);
    mq_frame_queue_kick(p->vq);
    return MQ_OK;
}

int mq_player_start(mq_player *p)
{
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    if (p->ctl.started)
        return MQ_ERR_STATE;
    p->ctl.started = true;
    atomic_store(&p->state, MQ_STATE_BUFFERING);
    int ret = mq_thread_start(&p->ctl.tempo_thread, mq_tempo_thread_main, p, "mq-tempo");
    p->ctl.tempo_running = ret >= 0;
    if (ret >= 0)
        ret = mq_thread_start(&p->ctl.audio_thread, mq_audio_thread_main, p, "mq-audio");
    p->ctl.audio_running = p->ctl.tempo_running && ret >= 0;
    if (ret >= 0)
        ret = mq_thread_start(&p->ctl.video_thread, mq_video_thread_main, p, "mq-video");
    p->ctl.video_running = p->ctl.audio_running && ret >= 0;
    if (ret >= 0)
        ret = mq_thread_start(&p->ctl.monitor_thread, mq_monitor_thread_main, p, "mq-monitor");
    p->ctl.monitor_running = p->ctl.video_running && ret >= 0;
    return ret;
}

int mq_player_set_fit(mq_player *p, int32_t fit)
{
    if (!p || fit < MQ_FIT_CONTAIN || fit > MQ_FIT_SCALEDOWN)
        return MQ_ERR_INVALID_ARGUMENT;
    atomic_store(&p->fit_req, fit);
    return MQ_OK;
}

int mq_player_set_captions(mq_player *p, bool shown)
{
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    atomic_store(&p->captions_req, shown);
    return MQ_OK;
}

int mq_player_set_overlay(mq_player *p, int32_t kind, const char *message)
{
    if (!p || kind < MQ_OVERLAY_NONE || kind > MQ_OVERLAY_BLANK)
        return MQ_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&p->lock);
    p->overlay_req.kind = kind;
    snprintf(p->overlay_req.message, sizeof p->overlay_req.message, "%s", message ? message : "");
    pthread_mutex_unlock(&p->lock);
    atomic_fetch_add(&p->overlay_gen, 1);
    mq_frame_queue_kick(p->vq);
    return MQ_OK;
}

int mq_player_set_label(mq_player *p, const char *label)
{
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    pthread_mutex_lock(&p->lock);
    snprintf(p->label_req, sizeof p->label_req, "%s", label ? label : "");
    pthread_mutex_unlock(&p->lock);
    atomic_fetch_add(&p->label_gen, 1);
    return MQ_OK;
}

/* ---- status, events ---- */

static double status_position(mq_player *p, double now)
{
    double media;
    if (atomic_load(&p->frames_presented) == 0 && atomic_load(&p->audio_frames_played) == 0)
        return NAN;
    return mq_clock_master(&p->clock, now, &media) ? media : NAN;
}

int mq_player_get_status(mq_player *p, mq_status *out)
{
    if (!p || !out)
        return MQ_ERR_INVALID_ARGUMENT;
    reap_clips(p, false); // the call the controlling thread makes often
    double now = mq_clock_now(), last;
    mq_frame_queue_pending(p->vq, &last);
    *out = (mq_status){
        .state = atomic_load(&p->state),
        .width = atomic_load(&p->width),
        .height = atomic_load(&p->height),
        .mono = now,
        .position = status_position(p, now),
        .audio_delay = atomic_load(&p->audio_delay),
        .audio_queued_until = atomic_load(&p->pcm->queued_until),
        .video_queued_until = last,
        .first_frame_mono = atomic_load(&p->first_frame_mono),
        .av_offset = atomic_load(&p->av_offset),
        .av_offset_peak = atomic_load(&p->av_offset_peak),
        .frames_decoded = atomic_load(&p->frames_decoded),
        .frames_presented = atomic_load(&p->frames_presented),
        .frames_dropped = atomic_load(&p->frames_dropped),
        .audio_frames_played = atomic_load(&p->audio_frames_played),
        .audio_frames_dropped = atomic_load(&p->audio_frames_dropped),
        .audio_silence_frames = atomic_load(&p->audio_silence_frames),
        .audio_underruns = (int32_t)atomic_load(&p->underruns),
        .audio_xruns = (int32_t)atomic_load(&p->xruns),
        .audio_error = atomic_load(&p->audio_error),
    };
    return MQ_OK;
}

int mq_player_poll_event(mq_player *p, mq_event *out)
{
    if (!p || !out)
        return MQ_ERR_INVALID_ARGUMENT;
    return mq_event_queue_poll(p->events, out);
}

void mq_player_set_wakeup(mq_player *p, void (*cb)(void *ctx), void *ctx)
{
    if (p)
        mq_event_queue_set_wakeup(p->events, cb, ctx);
}

/* ---- clips: opened anywhere (clip.c), handed over here without waiting ---- */

/// Frees the retired clips the audio thread can no longer read. It reads a slot's clip only
/// between its load of `want` and the `audio_periods` increment that closes that period (both
/// seq_cst, as is the swap): a period that loads `want` after the swap gets the new clip, so
/// once `audio_periods` has moved past the value read right after the swap, the period that may
/// have loaded the old clip is over and no later one can load it. Unless `all` (destroy), a clip
/// whose thread has not yet ended waits for a later call: the caller never waits for a join.
static void reap_clips(mq_player *p, bool all)
{
    uint64_t periods = atomic_load(&p->audio_periods);
    for (int i = 0; i < MQ_RETIRED_CLIPS; i++) {
        mq_clip *c = p->ctl.retired[i];
        if (c && (!p->ctl.audio_running || periods != c->retired_epoch) && (all || mq_clip_stopped(c)))
            mq_clip_destroy(&p->ctl.retired[i]);
    }
}

static bool keep_retired(mq_player *p, mq_clip *c)
{
    for (int i = 0; i < MQ_RETIRED_CLIPS; i++) {
        if (!p->ctl.retired[i]) {
            p->ctl.retired[i] = c;
            return true;
        }
    }
    return false;
}

/// Keeps `old`, just swapped out of clip input `input`, until `reap_clips` may free it.
static void retire_clip(mq_player *p, int input, mq_clip *old)
{
    if (!old)
        return;
    mq_clip_stop(old);
    old->retired_epoch = atomic_load(&p->audio_periods); // after the swap (see reap_clips)
    if (keep_retired(p, old))
        return;
    reap_clips(p, true); // full: free those past their epoch even if that means a short join
    if (keep_retired(p, old))
        return;
    // The audio thread finished no period through MQ_RETIRED_CLIPS swaps: it is stuck in the
    // device. Leak rather than free what it may still read.
    mq_log(MQ_LOG_WARN, "clip on input %d left allocated: the audio thread made no progress", input);
}

int mq_player_audio_format(const mq_player *p, int32_t *rate, int32_t *channels)
{
    if (!p || !rate || !channels)
        return MQ_ERR_INVALID_ARGUMENT;
    *rate = p->sample_rate;
    *channels = p->channels;
    return MQ_OK;
}

int mq_player_set_clip(mq_player *p, int32_t input, mq_clip **clip)
{
    mq_clip *c = clip ? *clip : NULL;
    if (clip)
        *clip = NULL; // ours whatever the result
    if (!p || !clip || input < 1 || input >= MQ_MIXER_MAX_INPUTS ||
        (c && (c->rate != p->sample_rate || c->channels != p->channels))) {
        mq_clip_destroy(&c); // never installed: no other thread has seen it
        return MQ_ERR_INVALID_ARGUMENT;
    }
    reap_clips(p, false); // room for the one retired next
    retire_clip(p, input, atomic_exchange(&p->slots[input].want, c));
    reap_clips(p, false); // frees it at once when no audio thread runs (and its thread ended)
    return MQ_OK;
}

int mq_player_play_clip(mq_player *p, int32_t input, const char *path, double offset, bool loop, double crossfade,
                        double at)
{
    if (!p || !path || input < 1 || input >= MQ_MIXER_MAX_INPUTS)
        return MQ_ERR_INVALID_ARGUMENT;
    mq_clip *c = NULL;
    int ret = mq_clip_open(path, p->sample_rate, p->channels, offset, loop, crossfade, at, &c);
    return ret < 0 ? ret : mq_player_set_clip(p, input, &c);
}

int mq_player_stop_clip(mq_player *p, int32_t input)
{
    mq_clip *none = NULL;
    return mq_player_set_clip(p, input, &none);
}

/* ---- mixing API ---- */

int mq_player_set_gain(mq_player *p, int32_t input, float gain, double ramp, int32_t shape, double at)
{
    if (!p || !(ramp >= 0 && ramp <= 60) || (shape != MQ_RAMP_SHAPE_LINEAR && shape != MQ_RAMP_SHAPE_EQUAL_POWER) ||
        isinf(at))
        return MQ_ERR_INVALID_ARGUMENT;
    return mq_mixer_set_gain(p->mixer, input, gain, (int32_t)lrint(ramp * p->sample_rate),
                             shape == MQ_RAMP_SHAPE_LINEAR ? MQ_RAMP_LINEAR : MQ_RAMP_EQUAL_POWER, at);
}

int mq_player_cancel_timed_gains(mq_player *p)
{
    return p ? mq_mixer_cancel_timed(p->mixer) : MQ_ERR_INVALID_ARGUMENT;
}

int mq_player_set_volume(mq_player *p, float volume, bool muted)
{
    if (!p || !(volume >= 0 && volume <= 1))
        return MQ_ERR_INVALID_ARGUMENT;
    return mq_mixer_set_master(p->mixer, volume, muted);
}

float mq_player_gain(mq_player *p, int32_t input)
{
    if (!p || input < 0 || input >= MQ_MIXER_MAX_INPUTS)
        return NAN;
    return mq_mixer_gain(p->mixer, input);
}
