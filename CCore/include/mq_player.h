#ifndef MQ_PLAYER_H
#define MQ_PLAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mq_defs.h"

MQ_ASSUME_NONNULL_BEGIN

/// A live playback pipeline: one demux+decode chain per track, fed with pushed fMP4 bytes
/// (init segment, then media segments or chunks of them), an audio thread that writes the
/// output device and owns the master clock, and a video thread that presents each frame when
/// the clock reaches it and drops the late ones.
///
/// Threading: every `mq_player_*` function may be called from any one controlling thread at a
/// time (Swift serialises them); `mq_clip_open`, `mq_clip_destroy` and `mq_player_audio_format`
/// from any thread. The player's own threads never call back except through the
/// wake-up callback, which only signals.
typedef struct mq_player mq_player;

/// What a track carries.
typedef enum mq_track_kind {
    MQ_TRACK_AUDIO = 1,
    MQ_TRACK_VIDEO = 2,
} mq_track_kind;

/// What the bytes pushed to a track are (`mq_player_set_track_container`).
typedef enum mq_container {
    MQ_CONTAINER_FMP4 = 0,   ///< Fragmented MP4 / CMAF: an init segment, then media segments.
    MQ_CONTAINER_MPEGTS = 1, ///< MPEG-2 transport stream (188-byte packets, e.g. HLS .ts segments).
    MQ_CONTAINER_PROBED = 2, ///< One whole file recognised by its content: a media file (MP4/MOV,
                             ///< Matroska/WebM, MPEG-TS, WAV, MP3, AAC, FLAC, Ogg) or a still
                             ///< (PNG, JPEG, BMP, WebP, GIF), read front to back once all of it was
                             ///< pushed (the track ended); not scanned for damage (no segments).
                             ///< Another format (a playlist, a concat list, …) is an error event
                             ///< with MQ_ERR_REFUSED; nothing the bytes name is ever opened.
} mq_container;

/// Player state as seen by the presentation side.
typedef enum mq_state {
    MQ_STATE_IDLE = 0,      ///< Created, not started.
    MQ_STATE_BUFFERING = 1, ///< Started, waiting for due media.
    MQ_STATE_PLAYING = 2,   ///< Presenting media on the clock.
    MQ_STATE_ENDED = 3,     ///< Every track ended and was presented.
    MQ_STATE_ERROR = 4,     ///< An output failed; see the error event.
} mq_state;

/// How a picture is fitted to a display (`mq_player_config.video_fit`).
typedef enum mq_fit {
    MQ_FIT_CONTAIN = 0,   ///< The whole picture, aspect kept, black bars (letterbox / pillarbox).
    MQ_FIT_COVER = 1,     ///< The whole screen, aspect kept, the overflow cropped (centred).
    MQ_FIT_FILL = 2,      ///< Stretched to the screen.
    MQ_FIT_SCALEDOWN = 3, ///< As contain, but never enlarged (a small picture is centred 1:1).
} mq_fit;

/// What a display output draws over or instead of the pictures (`mq_player_set_overlay`).
typedef enum mq_overlay {
    MQ_OVERLAY_NONE = 0,      ///< Pictures only.
    MQ_OVERLAY_BUFFERING = 1, ///< A band at the bottom over the held/current picture (or poster).
    MQ_OVERLAY_SLATE = 2,     ///< A full-screen slate with a message; pictures are not shown.
    MQ_OVERLAY_BLANK = 3, ///< The display is off: black; pictures are consumed on the clock, unseen (audio plays on).
} mq_overlay;

typedef struct mq_player_config {
    /// Audio output spec: `alsa[:<pcm>]` (default PCM "default"), `wav:<path>`, `null`.
    /// NULL means `null`.
    const char *_Nullable audio_out;
    /// Video output spec: `headless`, `frames:<dir>`, `drm[:<card>[,<connector>[,<WxH>]]]`
    /// (card `0`, `card1` or a path; connector a name such as `HDMI-A-1` or an id; a mode size;
    /// defaults: the first card and connector with a display, its preferred mode).
    /// NULL means `headless`.
    const char *_Nullable video_out;
    /// Output sample rate in Hz; 0 means 48000.
    int32_t sample_rate;
    /// Output channel count; 0 means 2.
    int32_t channels;
    /// Audio kept queued in the device (or the paced virtual device), in ms; 0 means 60.
    int32_t audio_buffer_ms;
    /// Decoded video frames queued ahead of presentation (2…240). 0 (auto): as many of up to 6
    /// as fit in 4.5 MiB, at least 3 (each 720p picture holds 1.4 MB: 3 of them; a 1080p one
    /// 3.1 MB: 3; SD: 6). The queue is slack for a decode that comes late, not buffer: the
    /// bytes queued before the decoder hold the seconds.
    int32_t video_queue_frames;
    /// Display outputs: how pictures fit the screen (`mq_fit`); 0 means contain.
    int32_t video_fit;
    /// Display outputs: clockwise rotation of the picture in degrees, 0, 90, 180 or 270
    /// (done in software by the drm output).
    int32_t video_rotation;
    /// Display outputs: a PNG or JPEG shown (contain) from create until the first picture.
    /// NULL: black. Read during create only. A local regular file (a symbolic link to one is
    /// followed): a URL, a FIFO, a device or a file of another format fails the create with
    /// MQ_ERR_REFUSED (MQ_ERR_IO when it cannot be read).
    const char *_Nullable poster;
    /// Decoder preference: comma-separated libavcodec decoder names tried in order for each
    /// track whose codec they decode, before the codec's default (software) decoder, e.g.
    /// "h264_v4l2m2m,h264_rkmpp" (a board profile's `decode.decoders`). Names for other codecs
    /// are skipped; a name this libavcodec lacks applies to the codec its `<codec>_` prefix
    /// names; `<codec>_<device>` with a hardware device type instead of a decoder name
    /// ("h264_vaapi") is the codec's own decoder with that hwaccel (its pictures are hardware
    /// surfaces, mapped or read back by the outputs). When an applicable preference cannot be
    /// used the next is tried, and the track
    /// reports it once with MQ_EVENT_DECODER_FALLBACK. NULL or "" means the default decoder.
    /// Copied during create; at most 1023 characters of [A-Za-z0-9_], commas and spaces.
    const char *_Nullable decoders;
    /// Software decoder threads per track. 0 (auto): one for video up to 1920×1080 at 30 fps
    /// (frame threads would add per-frame hand-over work and pictures held per thread: measured
    /// at 1080p, 23 MiB and 7 % more CPU), as long as that one keeps well ahead of real time:
    /// one whose decoding takes over half of the media time it decoded (`decode_busy_limit`,
    /// judged every 2 s of media) is reopened at the next keyframe with libavcodec's frame
    /// threads (one per core and one more), as is video above 1080p30 from the start, and the
    /// track keeps them. 1…64: that many.
    int32_t decode_threads;
    /// Seconds of fMP4 media one demuxer session reads before a fresh one is opened at the next
    /// marked segment start, on the kept init segment, the decoder going on untouched (libavformat's
    /// MP4 demuxer keeps an index entry per sample it ever read: a session living for days grows
    /// without bound). 0 means 60; needs `mq_player_push_init` and `mq_player_end_segment`.
    double demux_rollover;
    /// Auto threads (`decode_threads` 0): the share of real time one decoder thread may spend
    /// decoding (judged every 2 s of media) before frame threads are taken. 0 means 0.5; (0, 1].
    double decode_busy_limit;
    /// A join starts decoding at the keyframe before the position the schedule is at and
    /// catches up from there (what ends before the position is dropped unseen): 0 (default)
    /// shows that keyframe at once, as a still, until the first picture that is due follows;
    /// 1 shows nothing (black, or the poster) until that picture. Only before the first due
    /// picture of the player (a later reset keeps the picture on screen). The still is the
    /// first picture (`MQ_EVENT_FIRST_FRAME`, `mq_status.first_frame_mono`); it is not counted
    /// in `frames_presented`, not judged late, and the state, the position and the A/V offset
    /// wait for the first due picture. Costs nothing but the decode that was done anyway.
    int32_t hide_join_still;
} mq_player_config;

/// Creates a player and opens its outputs (nothing plays until `mq_player_start`).
int mq_player_create(const mq_player_config *cfg, mq_player *_Nullable *_Nonnull out);

/// Stops every thread, closes the outputs (the WAV header and frames.tsv are finalised) and
/// frees the player. NULL-safe, idempotent; sets `*p` to NULL.
void mq_player_destroy(mq_player *_Nullable *_Nonnull p);

/// Adds a track. `pts_offset` (seconds) is added to the demuxer's `pts_time` to place the
/// track's media on the common presentation timeline the clock runs on.
int mq_player_add_track(mq_player *p, mq_track_kind kind, double pts_offset, int32_t *track_id);

/// Adds a staged track: the next item's, decoded while the tracks playing go on (at most one of
/// each kind). Its decoder discards what ends before `start` (presentation time, after
/// `pts_offset`: the position the next item enters at) and holds its first picture (or sound)
/// from `start` on, until `mq_player_activate_tracks`. It is not judged late, counts no drops,
/// and does not keep the player from ENDED.
int mq_player_add_staged_track(mq_player *p, mq_track_kind kind, double pts_offset, double start, int32_t *track_id);

/// The staged tracks replace the others: every track that is not staged is removed (its decode
/// thread stopped), what the queues hold is dropped, and the staged tracks hand on what they
/// hold: set the timeline first, so that the held picture is due. MQ_ERR_STATE without a
/// staged track.
int mq_player_activate_tracks(mq_player *p);

/// A cut timed by the core (`mq_player_activate_tracks_at`): the staged tracks take over at an
/// instant, whatever the controlling side is doing then.
typedef struct mq_activation {
    /// Monotonic seconds the staged tracks' first picture (or sound) is due.
    double at;
    /// The presentation time due at `at` (the timeline from then, rate 1); NAN: the time of the
    /// picture the staged video track holds, else of the sound the staged audio track holds (a
    /// file's first, decoded ahead).
    double media_anchor;
    /// The wall clock's offset from then (`mq_player_set_wall_offset`); NAN: unchanged.
    double wall_offset;
    /// Seconds before `at` the tracks replaced stop decoding (their threads joined while what
    /// they queued plays on): their decoders' last frame ends within it. 0: at `at`.
    double lead;
    /// The `frames:` label from then (`mq_player_set_label`); NULL: unchanged.
    const char *_Nullable label;
} mq_activation;

/// `mq_player_activate_tracks` at an instant, with the timeline, the wall offset and the label
/// set with it: blocks until `a->at - a->lead`, stops the tracks replaced (their queued pictures
/// and sound play on), blocks until just before `a->at` (1 ms: the held picture queued in time
/// for its due instant), then sets the rest, empties the queues and hands on what the staged
/// tracks hold. A controlling call like the others (call it where they are serialised, from a
/// thread that may block that long). Returns at once, without a change, MQ_ERR_STATE without a
/// staged track, or (`media_anchor` NAN) when none holds its first frame yet;
/// MQ_ERR_INVALID_ARGUMENT for a non-finite `at` or `lead` < 0.
int mq_player_activate_tracks_at(mq_player *p, const mq_activation *a);

/// How pictures fit the display from now on (`mq_fit`; a playlist item's own): the picture on
/// screen is drawn again in it at once.
int mq_player_set_fit(mq_player *p, int32_t fit);

/// Whether the closed captions carried in the video are drawn over the pictures from now on
/// (off at create): on a display output, with libass in DejaVu Sans Mono (the caption screen's
/// rows where the stream places them, white on black). Reported either way (MQ_EVENT_CAPTION).
int mq_player_set_captions(mq_player *p, bool shown);

/// Removes a track: its decode thread stops and its input is dropped; unless it is staged,
/// what it decoded (the queued pictures and sound) is dropped too. Its id is not reused.
int mq_player_remove_track(mq_player *p, int32_t track_id);

/// Appends bytes to a track's input (an init segment, a media segment or any chunk of one;
/// the bytes are copied). The track's demuxer reads them as one continuous fMP4 stream.
int mq_player_push(mq_player *p, int32_t track_id, const uint8_t *data, size_t size);

/// Appends the same bytes to `count` tracks' inputs (1–8; as `mq_player_push` to each in turn)
/// with one copy they share: a muxed transport stream's audio and video tracks each demux the
/// whole stream. MQ_ERR_NOT_FOUND (nothing pushed) when a track is unknown; otherwise the first
/// track's refusal, the others pushed still.
int mq_player_push_shared(mq_player *p, const int32_t *track_ids, int count, const uint8_t *data, size_t size);

/// Pushes an init segment (as `mq_player_push`) and keeps a copy: after a damaged media
/// segment the track's demuxer reopens on it, so one bad segment costs only itself.
int mq_player_push_init(mq_player *p, int32_t track_id, const uint8_t *data, size_t size);

/// Marks the end of a media segment in a track's input. A segment cut short (a box or TS
/// packet running past this point), garbage, or one the demuxer fails on is reported
/// (`MQ_EVENT_ERROR`) and skipped: decoding goes on at the next segment, the pictures and
/// sound decoded before it are kept. Without marks a damaged input stops the track until
/// `mq_player_reset_track`. A track ends only through `mq_player_end_track`.
int mq_player_end_segment(mq_player *p, int32_t track_id);

/// Discards what the track has queued and restarts its demuxer: the next bytes pushed must
/// begin with an init segment (used for a seek, a jump or a representation change).
int mq_player_reset_track(mq_player *p, int32_t track_id);

/// Changes the offset added to a track's `pts_time` (see `mq_player_add_track`): for the stream
/// begun by the last `mq_player_push_discontinuity` when the decoder has not reached it yet,
/// otherwise from now on (what is pushed after a `mq_player_reset_track`: a reload or another
/// source reuses the track).
int mq_player_set_track_offset(mq_player *p, int32_t track_id, double pts_offset);

/// The bytes pushed next begin a new stream (an encoder restart, a splice, a new DASH Period):
/// what was pushed before is demuxed and decoded to its end (nothing queued is lost: the decoder
/// is drained), then a new demuxer and decoder open on what follows (an fMP4 track's next bytes
/// must be an init segment; MPEG-TS reads its own tables), placed with `pts_offset` (NAN: the
/// current one, or one given later by `mq_player_set_track_offset`). MQ_ERR_STATE when 16 are
/// waiting already.
int mq_player_push_discontinuity(mq_player *p, int32_t track_id, double pts_offset);

/// Sets the container of what is pushed to the track (`mq_container`; a new track expects
/// fMP4): before its first push or right after `mq_player_reset_track`, else MQ_ERR_STATE.
/// A probed input (MQ_CONTAINER_PROBED) is one file, like a transport stream taken by each
/// track of its kind; a still image decodes to one picture (pts 0), shown until the next.
/// An MPEG-TS track has no init segment; its demuxer reads the stream's own program tables,
/// and takes from it the elementary stream of the track's kind (so the same muxed audio+video
/// bytes may be pushed to an audio and a video track). Bytes without the TS sync byte every 188
/// are reported as a corrupt input.
int mq_player_set_track_container(mq_player *p, int32_t track_id, int32_t container);

/// Marks the end of a track's input; once everything queued is presented the player ends.
int mq_player_end_track(mq_player *p, int32_t track_id);

/// Seconds on CLOCK_MONOTONIC: the time base of every `mono` value below.
double mq_clock_now(void);

/// The process's C heap (every thread's allocations, Swift's included): bytes in live
/// allocations (`*in_use`) and bytes the allocator keeps free in its arenas (`*free_bytes`,
/// fragmentation). glibc's `mallinfo2`; MQ_ERR_UNSUPPORTED (zeros) elsewhere. Walks the
/// arenas: call it every few seconds, never from a real-time thread.
int mq_heap_usage(int64_t *in_use, int64_t *free_bytes);

/// Gives back what the process holds but playing does not use: the heap's free pages (glibc
/// `malloc_trim`) and the page-table entries of the executable's and the shared libraries'
/// code and read-only data (`MADV_DONTNEED` on their read-only `PT_LOAD` segments, with the
/// loader's lock held). Start-up touches far more of those than playing does (initialisers,
/// relocations read, the kernel's 64 KiB fault-around on every first touch); the page cache
/// keeps the pages, so one used again comes back with a minor fault, no disk read. Writable
/// segments (data, relocated pointers) and objects with text relocations are never touched.
/// `*released`: the resident bytes before minus after. Costs a few ms and a burst of minor
/// faults afterwards: call it rarely (after start-up), never from a real-time thread.
/// MQ_ERR_UNSUPPORTED (0) where the C library is not glibc.
int mq_memory_trim(int64_t *released);

/// Has every heap block of `threshold` bytes or more (0: 128 KiB) mapped on its own and given
/// back to the system when freed (glibc `mallopt(M_MMAP_THRESHOLD)`; process-wide). glibc's
/// default raises its threshold to the largest block freed so far (up to 32 MiB): a segment
/// body or a demuxer buffer then stays in an arena, and the arenas' free pages count in the
/// resident set until a trim. Measured at 720p30 over 10 minutes: peak 61.8 → 58.2 MiB; CPU
/// unchanged. Call it once, before playing. MQ_ERR_UNSUPPORTED where the C library is not glibc.
int mq_memory_map_large_blocks(size_t threshold);

/// Server wall-clock (Unix seconds) = monotonic seconds + `offset`. Used to stamp presented
/// frames (frames.tsv `wall_time`).
int mq_player_set_wall_offset(mq_player *p, double offset);

/// The presentation schedule: the presentation time due at monotonic time `t` is
/// `media_anchor + (t - mono_anchor) * rate`. Media earlier than that is late (dropped),
/// later is waited for. May be changed while playing: to steer without a jump, anchor at the
/// time due now. At a rate other than 1 (0.5–2) stream audio is time-stretched with the pitch
/// kept (libavfilter `atempo`), heard within ~0.25 s of the change; at exactly 1 it plays
/// bit-exact. libavfilter is loaded the first time a rate other than 1 is set, on a thread of
/// its own (see `mq_tempo_prepare`): until it is, the sound queued plays out, then none is
/// heard and the pictures keep to the schedule (a cold load has taken seconds).
int mq_player_set_timeline(mq_player *p, double mono_anchor, double media_anchor, double rate);

/// Loads the time-stretch (libavfilter, ~150 shared libraries, ~12 MiB resident) for the whole
/// process, on a thread of its own, if it is not loaded or loading: a box that will steer its
/// rate has the first change heard at once. Never waits: MQ_OK once loaded, MQ_ERR_STATE while
/// loading, MQ_ERR_UNSUPPORTED when it cannot be (rate 1 throughout then).
int mq_tempo_prepare(void);

/// Sets what a display output shows over or instead of pictures: `MQ_OVERLAY_BUFFERING`
/// (a band with `message`, default "BUFFERING"), `MQ_OVERLAY_SLATE` (full screen, `message`,
/// default "RECONNECTING..."; pictures keep playing on the clock, unseen), `MQ_OVERLAY_BLANK`
/// (display off: black, pictures consumed on the clock without being presented — on every
/// output, so `frames:` records none — while audio plays on), or `MQ_OVERLAY_NONE`. `message` is
/// copied (127 bytes kept; NULL = the default). The video thread draws it within ~50 ms. Without
/// an explicit overlay, the output itself shows the buffering band when no picture came for 1 s
/// after the first one (the last picture stays under it). Outputs without a display draw nothing.
int mq_player_set_overlay(mq_player *p, int32_t kind, const char *_Nullable message);

/// Names what is presented from now on (a playlist item's id): the `frames:` output writes it
/// in its `item` column for every picture presented after this call, until the next. `label`
/// is copied (63 bytes kept; NULL or "": none, an empty column). Outputs without a file ignore it.
int mq_player_set_label(mq_player *p, const char *_Nullable label);

/// Keeps (true) a reference to the picture presented last, for mq_player_snapshot_png; off by
/// default. No copy is made: the decoder's buffer is held until the next picture replaces it
/// (one more buffer in its pool; with a decoder whose surfaces are a fixed pool, one of them).
/// false lets it go at once.
int mq_player_keep_last_picture(mq_player *p, bool keep);

/// The picture presented last, as a PNG (RGB, 8 bits; converted with the picture's own colour
/// matrix and range), scaled down to `max_width` when it is wider (aspect kept; 0: full size).
/// `*png` (`*size` bytes) is the caller's, freed with mq_free; `*media_pts` is the picture's
/// stream pts_time (as the `frames:` output writes it); `*width`/`*height` the PNG's. Converts
/// and encodes on the calling thread (tens of ms at 720p). MQ_ERR_STATE while keeping is off,
/// MQ_ERR_NOT_FOUND when no picture was presented since it was turned on.
int mq_player_snapshot_png(mq_player *p, int32_t max_width, uint8_t *_Nullable *_Nonnull png, size_t *size,
                           double *media_pts, int32_t *width, int32_t *height);

/// Frees a buffer the core gave the caller (mq_player_snapshot_png's).
void mq_free(void *_Nullable ptr);

/// Starts the audio and video threads.
int mq_player_start(mq_player *p);

/* ---- mixing ----
 * Audio is mixed from inputs: 0 is the stream; 1…3 play clips (the mute music, an ad creative,
 * a spare). Each input has a gain ramped sample-accurately, then master volume and mute, then a
 * limiter (loud sums are limited, never wrapped). A ramp or a clip start can be timed on the
 * presentation timeline (`at`, seconds): it begins on the first sample due at or after `at`;
 * NAN means now. Timed gains wait in the mixer; `mq_player_cancel_timed_gains` drops those not
 * begun (a jump or a seek: recompute and re-send). */

/// Number of mixer inputs (the stream and three clip inputs).
#define MQ_MIXER_INPUTS 4
/// The mixer input of the stream's audio.
#define MQ_INPUT_STREAM 0

/// Ramp shapes (`mq_player_set_gain`; the mixer's `mq_ramp_shape`).
#define MQ_RAMP_SHAPE_LINEAR 0      ///< Linear in amplitude.
#define MQ_RAMP_SHAPE_EQUAL_POWER 1 ///< Sine/cosine: a rise and a fall of the same length cross-fade at constant power.

/// A clip: the audio of a file (any format libavformat reads), opened and decoded ahead on its
/// own thread into PCM at one rate and channel count, ready to be heard on a clip input.
typedef struct mq_clip mq_clip;

/// Opens the file at `path` for a clip input of a player whose output is `rate` Hz with
/// `channels` channels (`mq_player_audio_format`): from `offset` seconds into it (modulo its
/// length when `loop`), to be heard from presentation time `at` (NAN: as soon as it is set). A
/// looping clip restarts with a `crossfade`-second linear cross-fade of its end into its start
/// (0…5; the loop is that much shorter than the file). This is the blocking step (file I/O, the
/// decoder opened, its thread started): it touches no player, and may run on any thread,
/// concurrently with every other call. `path` is a local regular file (a symbolic link to one is
/// followed) of a media format (MP4/MOV/M4A, Matroska/WebM, MPEG-TS, WAV, MP3, AAC, FLAC, Ogg).
/// MQ_ERR_REFUSED for a URL or protocol ("http:", "concat:", "file:", …; a local name with a ':'
/// in its first component is written "./a:b"), a FIFO, a device, a directory, or another format
/// (a playlist, a still, …); MQ_ERR_IO when the file cannot be read, MQ_ERR_DEMUX when it is not
/// media, MQ_ERR_UNSUPPORTED without a decodable audio stream; `*out` is NULL on failure.
int mq_clip_open(const char *path, int32_t rate, int32_t channels, double offset, bool loop, double crossfade,
                 double at, mq_clip *_Nullable *_Nonnull out);
/// Frees a clip that was never handed to a player (it stops its thread). NULL-safe,
/// idempotent; sets `*c` to NULL.
void mq_clip_destroy(mq_clip *_Nullable *_Nonnull c);

/// The output format clips must be opened with: the sample rate the device took (it may differ
/// from `mq_player_config.sample_rate`) and the channel count. Fixed at create: any thread.
int mq_player_audio_format(const mq_player *p, int32_t *rate, int32_t *channels);

/// Makes `*clip` play on clip input `input` (1…3), replacing what it played; NULL stops the input.
/// Never blocks: the audio thread picks the clip up at its next period, and the replaced one is
/// freed by a later `mq_player_set_clip`, `mq_player_stop_clip`, `mq_player_get_status` or
/// `mq_player_destroy` once the audio thread can no longer read it. Takes the clip whatever the
/// result (`*clip` is NULL on return; on failure the clip was destroyed): MQ_ERR_INVALID_ARGUMENT
/// for a bad input or a clip opened for another format than `mq_player_audio_format`'s.
/// When a clip that does not loop has played to its end, MQ_EVENT_CLIP_ENDED reports it.
int mq_player_set_clip(mq_player *p, int32_t input, mq_clip *_Nullable *_Nonnull clip);
/// `mq_clip_open` with the player's format, then `mq_player_set_clip`: blocks on the file.
int mq_player_play_clip(mq_player *p, int32_t input, const char *path, double offset, bool loop, double crossfade,
                        double at);
/// Stops clip input `input` (1…3) at once (`mq_player_set_clip` with NULL; never blocks); ramp
/// its gain down first to avoid a click.
int mq_player_stop_clip(mq_player *p, int32_t input);
/// Ramps input `input`'s gain to `gain` (0…4, 1 = unity) over `ramp` seconds (0: a step, up to
/// 60) with shape `shape` (`MQ_RAMP_SHAPE_*`), from presentation time `at` (NAN: now). A ramp replaces
/// one in progress from the gain it has reached. MQ_ERR_STATE when too many are waiting.
int mq_player_set_gain(mq_player *p, int32_t input, float gain, double ramp, int32_t shape, double at);
/// Drops the timed gain changes not yet begun.
int mq_player_cancel_timed_gains(mq_player *p);
/// Master volume 0…1 (linear) and mute; each change ramps over 10 ms.
int mq_player_set_volume(mq_player *p, float volume, bool muted);
/// The gain input `input` has reached (as of the last audio period), or NAN for a bad input.
float mq_player_gain(mq_player *p, int32_t input);

typedef struct mq_status {
    int32_t state;               ///< `mq_state`.
    int32_t width, height;       ///< Size of the last presented picture, 0 before one.
    double mono;                 ///< When this status was taken (monotonic seconds).
    double position;             ///< Presentation time being presented now (audio clock, else video), NAN before media.
    double audio_delay;          ///< Seconds between a sample written and it being heard.
    double audio_queued_until;   ///< Presentation time at the end of decoded audio waiting to play, NAN if none.
    double video_queued_until;   ///< Presentation time of the last decoded frame waiting, NAN if none.
    double first_frame_mono;     ///< When the first frame was presented (a join's still included), 0 before.
    double av_offset;            ///< A/V offset of the last picture: the stream audio heard when it
                                 ///< became visible minus its presentation time (positive: the
                                 ///< picture lags the sound), seconds; NAN without stream audio.
    double av_offset_peak;       ///< The largest |av_offset| over the last whole second, signed; NAN none.
    int64_t frames_decoded;      ///< Video frames out of the decoder.
    int64_t frames_presented;    ///< Video frames presented when due (a join's still is not counted).
    int64_t frames_dropped;      ///< Video frames dropped as late, after the first one presented.
    int64_t audio_frames_played; ///< Stream audio sample frames written to the output.
    int64_t audio_frames_dropped; ///< Stream audio sample frames skipped as late.
    int64_t audio_silence_frames; ///< Silence frames written while stream audio was missing after it began.
    int32_t audio_underruns;      ///< Times stream audio ran dry after it began (each a run of silence).
    int32_t audio_xruns;          ///< Device xruns the output recovered from.
    int32_t audio_error;          ///< The audio device's last failure (`mq_err`), 0 while it works.
} mq_status;

/// Fills `out`. Also frees the clips `mq_player_set_clip` replaced once the audio thread is past them.
int mq_player_get_status(mq_player *p, mq_status *out);

typedef enum mq_event_type {
    MQ_EVENT_NONE = 0,
    MQ_EVENT_FIRST_FRAME = 1,      ///< The first video frame was presented (a join's still, see hide_join_still).
    MQ_EVENT_TRACK_FORMAT = 2,     ///< A track's stream was opened; `message` describes codec and format.
    MQ_EVENT_ERROR = 3,            ///< `code` is an `mq_err`; `track` is set when it is a track's.
    MQ_EVENT_ENDED = 4,            ///< Every track ended and was presented.
    MQ_EVENT_UNDERRUN = 5,         ///< Audio ran dry after it began (`media_time` where it did).
    MQ_EVENT_OUTPUT_CHANGED = 6,   ///< The display was unplugged, plugged back or changed mode and
                                   ///< the output was set up again; `message` says which.
    MQ_EVENT_DECODER_FALLBACK = 7, ///< A track's preferred decoder(s) could not be used;
                                   ///< `message` names them, why, and the decoder used.
    MQ_EVENT_CLIP_ENDED = 8,       ///< A clip that does not loop was heard to its end (`track` is the
                                   ///< mixer input; `code` an `mq_err` when it ended on a decode error).
    MQ_EVENT_LABEL_SHOWN = 9,      ///< The first due picture presented (and counted) since
                                   ///< `mq_player_set_label`: `message` is the label, `media_time` its pts.
    MQ_EVENT_CAPTION = 10,         ///< The closed captions on screen changed (CEA-608 carried in the
                                   ///< video, CC1) with the picture presented at `media_time`:
                                   ///< `message` is their text, rows on lines of their own, "" cleared.
} mq_event_type;

typedef struct mq_event {
    int32_t type;      ///< `mq_event_type`.
    int32_t track;     ///< Track id, or -1.
    int32_t code;      ///< `mq_err` for errors, else 0.
    double media_time; ///< Presentation time the event refers to, or NAN.
    char message[256]; ///< NUL-terminated English detail.
} mq_event;

/// Takes the oldest pending event. Returns 1 and fills `out` if there was one, 0 if none.
int mq_player_poll_event(mq_player *p, mq_event *out);

/// Registers a callback run (on a player thread) whenever an event is queued. It must only
/// signal; it must not call back into the player.
void mq_player_set_wakeup(mq_player *p, void (*_Nullable cb)(void *_Nullable ctx), void *_Nullable ctx);

/* ---- utilities ---- */

/// Decrypts `size` bytes in place with AES-128 in CBC mode under `key` from `iv` (HLS
/// `EXT-X-KEY:METHOD=AES-128`: a whole segment, PKCS#7-padded), with libavutil's AES; sets
/// `*out_size` to the size without the padding. MQ_ERR_INVALID_ARGUMENT when `size` is not a
/// non-zero multiple of 16; MQ_ERR_DEMUX when the padding is not PKCS#7 (a wrong key or IV).
/// Any thread; no state.
int mq_aes128_cbc_decrypt(const uint8_t key[_Nonnull 16], const uint8_t iv[_Nonnull 16], uint8_t *data, size_t size,
                          size_t *out_size);

MQ_ASSUME_NONNULL_END

#endif
