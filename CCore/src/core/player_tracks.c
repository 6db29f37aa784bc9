#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/player_internal.h"
#include "core/thread.h"
#include "mq_err.h"

/// The player's tracks (player.c has the player itself): each a byte queue and the decode
/// thread that reads it, added, removed, activated and fed on the controlling thread.

/* ---- tracks ---- */

void mq_track_destroy(mq_track **pt)
{
    mq_track *t = pt ? *pt : NULL;
    if (!t)
        return;
    if (t->thread_started) {
        mq_byte_queue_abort(t->input);
        pthread_join(t->thread, NULL);
    }
    mq_byte_queue_destroy(&t->input);
    free(t);
    *pt = NULL;
}

static int track_create(mq_player *p, mq_track_kind kind, double pts_offset, int32_t id, double stage_start,
                        mq_track **out)
{
    mq_track *t = calloc(1, sizeof *t);
    if (!t)
        return MQ_ERR_NO_MEMORY;
    t->player = p;
    t->id = id;
    t->kind = kind;
    atomic_init(&t->pts_offset, pts_offset);
    atomic_init(&t->probed, false);
    atomic_init(&t->staged, !isnan(stage_start));
    atomic_init(&t->stage_start, stage_start);
    atomic_init(&t->held_pts, NAN);
    int ret = mq_byte_queue_create(&t->input);
    if (ret < 0)
        goto fail;
    ret = mq_thread_start(&t->thread, mq_decode_thread_main, t, kind == MQ_TRACK_VIDEO ? "mq-decode-v" : "mq-decode-a");
    if (ret < 0)
        goto fail;
    t->thread_started = true;
    *out = t;
    return MQ_OK;
fail:
    mq_track_destroy(&t);
    return ret;
}

static mq_track *find_track(mq_player *p, int32_t id)
{
    // The track list changes only on the controlling thread, which also calls this.
    for (int i = 0; i < p->ntracks; i++)
        if (p->tracks[i]->id == id)
            return p->tracks[i];
    return NULL;
}

/* ---- tracks API ---- */

static int add_track(mq_player *p, mq_track_kind kind, double pts_offset, double stage_start, int32_t *track_id)
{
    if (!p || !track_id || (kind != MQ_TRACK_AUDIO && kind != MQ_TRACK_VIDEO) || !isfinite(pts_offset))
        return MQ_ERR_INVALID_ARGUMENT;
    bool staged = !isnan(stage_start);
    for (int i = 0; i < p->ntracks; i++)
        if (p->tracks[i]->kind == kind && atomic_load(&p->tracks[i]->staged) == staged)
            return MQ_ERR_UNSUPPORTED; // one audio and one video track (and one of each staged)
    if (p->ntracks == MQ_MAX_TRACKS)
        return MQ_ERR_UNSUPPORTED;
    mq_track *t = NULL;
    int ret = track_create(p, kind, pts_offset, ++p->next_track_id, stage_start, &t);
    if (ret < 0)
        return ret;
    pthread_mutex_lock(&p->lock);
    p->tracks[p->ntracks++] = t;
    pthread_mutex_unlock(&p->lock);
    *track_id = t->id;
    return MQ_OK;
}

int mq_player_add_track(mq_player *p, mq_track_kind kind, double pts_offset, int32_t *track_id)
{
    return add_track(p, kind, pts_offset, NAN, track_id);
}

int mq_player_add_staged_track(mq_player *p, mq_track_kind kind, double pts_offset, double start, int32_t *track_id)
{
    return isfinite(start) ? add_track(p, kind, pts_offset, start, track_id) : MQ_ERR_INVALID_ARGUMENT;
}

/// Takes track `i` off the list (under lock) and destroys it (its decode thread joined).
static void remove_at(mq_player *p, int i)
{
    pthread_mutex_lock(&p->lock);
    mq_track *t = p->tracks[i];
    memmove(p->tracks + i, p->tracks + i + 1, (size_t)(p->ntracks - i - 1) * sizeof p->tracks[0]);
    p->tracks[--p->ntracks] = NULL;
    pthread_mutex_unlock(&p->lock);
    mq_track_destroy(&t);
}

int mq_player_remove_track(mq_player *p, int32_t track_id)
{
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    for (int i = 0; i < p->ntracks; i++)
        if (p->tracks[i]->id == track_id) {
            bool staged = atomic_load(&p->tracks[i]->staged);
            remove_at(p, i);
            if (!staged) { // what it decoded goes with it
                mq_frame_queue_flush(p->vq);
                mq_pcm_ring_flush(p->pcm);
            }
            return MQ_OK;
        }
    return MQ_ERR_NOT_FOUND;
}

/// Whether `p` has a staged track.
static bool any_staged(mq_player *p)
{
    for (int i = 0; i < p->ntracks; i++)
        if (atomic_load(&p->tracks[i]->staged))
            return true;
    return false;
}

/// Removes every track that is not staged (joined: nothing of it reaches the queues any more).
static void remove_replaced(mq_player *p)
{
    for (int i = p->ntracks - 1; i >= 0; i--)
        if (!atomic_load(&p->tracks[i]->staged))
            remove_at(p, i);
}

/// The staged tracks hold what they decoded: the queues are emptied for them, and they hand it
/// on (each decode thread holds its first frame, asleep on its input).
static void hand_on(mq_player *p)
{
    for (int i = 0; i < p->ntracks; i++) {
        atomic_store(&p->tracks[i]->staged, false);
        mq_byte_queue_wake(p->tracks[i]->input);
    }
}

int mq_player_activate_tracks(mq_player *p)
{
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    if (!any_staged(p))
        return MQ_ERR_STATE;
    remove_replaced(p);
    mq_frame_queue_flush(p->vq);
    mq_pcm_ring_flush(p->pcm);
    hand_on(p);
    return MQ_OK;
}

/// The presentation time a staged track holds first: the video track's, else the audio
/// track's; NAN when none holds one.
static double held_time(mq_player *p)
{
    double audio = NAN;
    for (int i = 0; i < p->ntracks; i++) {
        mq_track *t = p->tracks[i];
        if (!atomic_load(&t->staged))
            continue;
        double held = atomic_load(&t->held_pts);
        if (t->kind == MQ_TRACK_VIDEO && !isnan(held))
            return held;
        if (t->kind == MQ_TRACK_AUDIO)
            audio = held;
    }
    return audio;
}

int mq_player_activate_tracks_at(mq_player *p, const mq_activation *a)
{
    if (!p || !a || !isfinite(a->at) || !isfinite(a->lead) || a->lead < 0 ||
        (!isnan(a->media_anchor) && !isfinite(a->media_anchor)) ||
        (!isnan(a->wall_offset) && !isfinite(a->wall_offset)))
        return MQ_ERR_INVALID_ARGUMENT;
    if (!any_staged(p) || (isnan(a->media_anchor) && isnan(held_time(p))))
        return MQ_ERR_STATE;
    // The tracks replaced stop first (a decode under way can take milliseconds on a busy box);
    // what they queued plays on until the instant.
    mq_sleep_until(a->at - a->lead);
    remove_replaced(p);
    // Then, just before it, the rest at once: the queues emptied before the timeline moves (no
    // picture of the cut stream judged on the new one), the held picture queued for its instant.
    mq_sleep_until(a->at - 0.001);
    double anchor = isnan(a->media_anchor) ? held_time(p) : a->media_anchor;
    mq_frame_queue_flush(p->vq);
    mq_pcm_ring_flush(p->pcm);
    if (!isnan(a->wall_offset))
        atomic_store(&p->wall_offset, a->wall_offset);
    if (a->label)
        mq_player_set_label(p, a->label);
    mq_clock_set_timeline(&p->clock, a->at, anchor, 1.0);
    mq_frame_queue_kick(p->vq);
    hand_on(p);
    return MQ_OK;
}

/// The track `track_id` of `p` for a call whose arguments are `valid`: MQ_OK with *out set,
/// else the error to return.
static int track_arg(mq_player *p, int32_t track_id, bool valid, mq_track **out)
{
    *out = p ? find_track(p, track_id) : NULL;
    if (!p || !valid)
        return MQ_ERR_INVALID_ARGUMENT;
    return *out ? MQ_OK : MQ_ERR_NOT_FOUND;
}

int mq_player_push(mq_player *p, int32_t track_id, const uint8_t *data, size_t size)
{
    mq_track *t;
    int ret = track_arg(p, track_id, data || size == 0, &t);
    return ret < 0 ? ret : mq_byte_queue_push(t->input, data, size);
}

#define MQ_MAX_SHARED_PUSH 8

int mq_player_push_shared(mq_player *p, const int32_t *track_ids, int count, const uint8_t *data, size_t size)
{
    if (!p || !track_ids || count < 1 || count > MQ_MAX_SHARED_PUSH || (!data && size > 0))
        return MQ_ERR_INVALID_ARGUMENT;
    mq_track *tracks[MQ_MAX_SHARED_PUSH];
    for (int i = 0; i < count; i++)
        if (!(tracks[i] = find_track(p, track_ids[i])))
            return MQ_ERR_NOT_FOUND;
    if (size == 0)
        return MQ_OK;
    mq_chunk *c = mq_chunk_create(data, size, count);
    if (!c)
        return MQ_ERR_NO_MEMORY;
    int ret = MQ_OK;
    for (int i = 0; i < count; i++) { // (each queue is done with its place on its own)
        int r = mq_byte_queue_push_ref(tracks[i]->input, mq_chunk_place(c, i));
        if (ret == MQ_OK && r < 0)
            ret = r;
    }
    return ret;
}

int mq_player_push_init(mq_player *p, int32_t track_id, const uint8_t *data, size_t size)
{
    mq_track *t;
    int ret = track_arg(p, track_id, data || size == 0, &t);
    return ret < 0 ? ret : mq_byte_queue_push_init(t->input, data, size);
}

int mq_player_end_segment(mq_player *p, int32_t track_id)
{
    mq_track *t;
    int ret = track_arg(p, track_id, true, &t);
    return ret < 0 ? ret : mq_byte_queue_end_segment(t->input);
}

int mq_player_reset_track(mq_player *p, int32_t track_id)
{
    mq_track *t = p ? find_track(p, track_id) : NULL;
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    if (!t)
        return MQ_ERR_NOT_FOUND;
    atomic_store(&t->input_done, false);
    mq_byte_queue_reset(t->input);
    atomic_store(&t->held_pts, NAN); // (a staged track's held frame is dropped)
    return MQ_OK;
}

int mq_player_set_track_offset(mq_player *p, int32_t track_id, double pts_offset)
{
    mq_track *t = p ? find_track(p, track_id) : NULL;
    if (!p || !isfinite(pts_offset))
        return MQ_ERR_INVALID_ARGUMENT;
    if (!t)
        return MQ_ERR_NOT_FOUND;
    if (!mq_byte_queue_set_stream_offset(t->input, pts_offset))
        atomic_store(&t->pts_offset, pts_offset); // none waiting: from now on
    return MQ_OK;
}

int mq_player_push_discontinuity(mq_player *p, int32_t track_id, double pts_offset)
{
    mq_track *t = p ? find_track(p, track_id) : NULL;
    if (!p || isinf(pts_offset))
        return MQ_ERR_INVALID_ARGUMENT;
    if (!t)
        return MQ_ERR_NOT_FOUND;
    return mq_byte_queue_mark_stream(t->input, pts_offset);
}

int mq_player_set_track_container(mq_player *p, int32_t track_id, int32_t container)
{
    mq_track *t = p ? find_track(p, track_id) : NULL;
    if (!p || (container != MQ_CONTAINER_FMP4 && container != MQ_CONTAINER_MPEGTS && container != MQ_CONTAINER_PROBED))
        return MQ_ERR_INVALID_ARGUMENT;
    if (!t)
        return MQ_ERR_NOT_FOUND;
    int ret = mq_byte_queue_set_container(t->input, container);
    if (ret == MQ_OK)
        atomic_store(&t->probed, container == MQ_CONTAINER_PROBED);
    return ret;
}

int mq_player_end_track(mq_player *p, int32_t track_id)
{
    mq_track *t = p ? find_track(p, track_id) : NULL;
    if (!p)
        return MQ_ERR_INVALID_ARGUMENT;
    if (!t)
        return MQ_ERR_NOT_FOUND;
    return mq_byte_queue_end(t->input);
}
