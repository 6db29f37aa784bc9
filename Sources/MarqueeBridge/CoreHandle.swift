internal import CCore
import Dispatch
import NIOConcurrencyHelpers

/// A C core failure: the `mq_err` code and what the core said.
package struct CoreError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The `mq_err` value (negative).
    package var code: Int32
    package var message: String

    package init(code: Int32, message: String? = nil) {
        self.code = code
        self.message = message ?? String(cString: mq_err_string(code))
    }

    package var description: String { message }

    /// `MQ_ERR_INVALID_ARGUMENT`.
    package var isInvalidArgument: Bool { code == MQ_ERR_INVALID_ARGUMENT.rawValue }
    /// `MQ_ERR_UNSUPPORTED`: unknown output name or codec without a decoder.
    package var isUnsupported: Bool { code == MQ_ERR_UNSUPPORTED.rawValue }
    /// `MQ_ERR_AUDIO_DEVICE` / `MQ_ERR_VIDEO_DEVICE` / `MQ_ERR_IO`: an output failed.
    package var isOutputFailure: Bool {
        code == MQ_ERR_AUDIO_DEVICE.rawValue || code == MQ_ERR_VIDEO_DEVICE.rawValue || code == MQ_ERR_IO.rawValue
    }
    /// `MQ_ERR_NOT_FOUND` on a track's event: its input has no stream of its kind (a file
    /// without sound).
    package var isMissingStream: Bool { code == MQ_ERR_NOT_FOUND.rawValue }
    /// `MQ_ERR_REFUSED`: an input the core will not open (a scheme in a path, a special file, a
    /// format outside what that input may be).
    package var isRefused: Bool { code == MQ_ERR_REFUSED.rawValue }
    /// `MQ_ERR_DEMUX` / `MQ_ERR_DECODE`: the media itself is bad.
    package var isMediaFailure: Bool { code == MQ_ERR_DEMUX.rawValue || code == MQ_ERR_DECODE.rawValue }
}

/// What a core track carries (`mq_track_kind`).
package enum CoreTrackKind: Sendable {
    case audio, video
}

/// A snapshot of the core's presentation state (`mq_status`).
package struct CoreStatus: Sendable {
    package enum State: Sendable { case idle, buffering, playing, ended, error }
    package var state: State
    package var width: Int
    package var height: Int
    package var mono: Double
    /// Presentation time presented now; `nil` before media.
    package var position: Double?
    package var audioDelay: Double
    package var audioQueuedUntil: Double?
    package var videoQueuedUntil: Double?
    package var firstFrameMono: Double?
    package var framesDecoded: Int
    package var framesPresented: Int
    package var framesDropped: Int
    package var audioFramesPlayed: Int
    package var audioFramesDropped: Int
    package var audioSilenceFrames: Int
    /// The largest A/V offset of the last second: the stream audio heard as a picture became
    /// visible minus its presentation time (positive: the picture lags); `nil` without both.
    package var avOffset: Double?
    package var audioUnderruns: Int = 0
    package var audioXruns: Int = 0
    /// The audio device's last failure (an `mq_err`), 0 while it works.
    package var audioError: Int32 = 0
}

/// Something the core reported (`mq_event`).
package struct CoreEvent: Sendable {
    package enum Kind: Sendable {
        case firstFrame, trackFormat, error, ended, underrun, outputChanged, decoderFallback, clipEnded
        case other(Int32)
    }
    package var kind: Kind
    package var track: Int32?
    package var error: CoreError?
    package var mediaTime: Double?
    package var message: String
}

/// Owns one `mq_player`; `deinit` destroys it. Calls are serialised, as the C API requires.
package final class CoreHandle: Sendable {
    /// The `mq_player`, behind SwiftNIO's `NIOLock` (a `pthread_mutex_t`, which ThreadSanitizer
    /// sees; see `MarqueeStreaming.Locked`).
    private let player: LockedPlayer
    /// Signals ``events()``' consumer; registered with the core at creation, alive until the
    /// core is destroyed.
    private let wakeup: CoreWakeup
    /// The output format clips are opened with (`mq_player_audio_format`: the rate the device
    /// took, which may differ from the one asked for, and the channel count).
    private let clipFormat: (rate: Int32, channels: Int32)

    /// Opens the outputs. `audio`: `alsa[:pcm]`, `wav:<path>`, `null`; `video`: `headless`,
    /// `frames:<dir>`, `drm[:<card>[,<connector>[,<WxH>]]]`. Display outputs only: `fit` (`mq_fit`),
    /// `rotation` (degrees clockwise), `poster` (PNG/JPEG shown until the first picture);
    /// `decoders`: comma-separated decoder names tried first, software fallback; `decodeThreads`:
    /// software decoder threads per track (0: auto, see `mq_player_config.decode_threads`);
    /// `videoQueueFrames`: decoded pictures queued ahead (0: the core's default); `joinStill`:
    /// a join's keyframe is shown at once while the decoder catches up (`hide_join_still` 0).
    package init(
        audio: String, video: String, sampleRate: Int = 48_000, channels: Int = 2, fit: Int32 = 0, rotation: Int = 0,
        poster: String? = nil, decoders: String? = nil, decodeThreads: Int = 0, videoQueueFrames: Int = 0,
        joinStill: Bool = true
    ) throws(CoreError) {
        var created: OpaquePointer?
        let rc: Int32 = audio.withCString { a in
            video.withCString { v in
                withOptionalCString(poster) { posterPath in
                    withOptionalCString(decoders) { decoderList in
                        var cfg = mq_player_config()
                        cfg.audio_out = a
                        cfg.video_out = v
                        cfg.sample_rate = Int32(sampleRate)
                        cfg.channels = Int32(channels)
                        cfg.video_fit = fit
                        cfg.video_rotation = Int32(rotation)
                        cfg.poster = posterPath
                        cfg.decoders = decoderList
                        cfg.decode_threads = Int32(clamping: decodeThreads)
                        cfg.video_queue_frames = Int32(clamping: videoQueueFrames)
                        cfg.hide_join_still = joinStill ? 0 : 1
                        return mq_player_create(&cfg, &created)
                    }
                }
            }
        }
        guard rc >= 0, let created else { throw CoreError(code: rc) }
        var rate: Int32 = 0
        var channels: Int32 = 0
        _ = mq_player_audio_format(created, &rate, &channels)
        clipFormat = (rate, channels)
        let wakeup = CoreWakeup()
        mq_player_set_wakeup(created, CoreWakeup.callback, Unmanaged.passUnretained(wakeup).toOpaque())
        self.wakeup = wakeup
        player = LockedPlayer(created)
    }

    deinit {
        // Not closed: destroy here (joins the core's threads on whichever thread releases us).
        player.withLock { p in
            mq_player_destroy(&p)
        }
        wakeup.finish()
    }

    /// Stops every core thread and closes the outputs (WAV header, frames.tsv finalised) before
    /// it returns. Calls made after it begins fail with `MQ_ERR_CLOSED`; the threads are joined
    /// on a Dispatch queue, not on Swift's cooperative pool.
    package func close() async {
        guard let pointer = player.take() else { return }
        let taken = CorePointer(pointer)
        await offCooperativePool {
            var p: OpaquePointer? = taken.pointer
            mq_player_destroy(&p)
        }
        wakeup.finish()  // (the core's threads are joined: no callback comes any more)
    }

    /// The core's events from now on (those already queued first), delivered as they are queued;
    /// see ``CoreEvents``. A second call ends the first sequence.
    package func events() -> CoreEvents {
        CoreEvents(handle: self, signals: wakeup.subscribe())
    }

    private func call(_ body: (OpaquePointer) -> Int32) throws(CoreError) {
        let rc: Int32 = player.withLock { p in
            guard let p else { return MQ_ERR_CLOSED.rawValue }
            return body(p)
        }
        if rc < 0 { throw CoreError(code: rc) }
    }

    package func addTrack(_ kind: CoreTrackKind, ptsOffset: Double) throws(CoreError) -> Int32 {
        var id: Int32 = -1
        try call { mq_player_add_track($0, kind == .audio ? MQ_TRACK_AUDIO : MQ_TRACK_VIDEO, ptsOffset, &id) }
        return id
    }

    /// A staged track (`mq_player_add_staged_track`): decoded ahead from `start` on, its first
    /// picture or sound held until ``activateTracks()``.
    package func addStagedTrack(_ kind: CoreTrackKind, ptsOffset: Double, start: Double) throws(CoreError) -> Int32 {
        var id: Int32 = -1
        try call {
            mq_player_add_staged_track($0, kind == .audio ? MQ_TRACK_AUDIO : MQ_TRACK_VIDEO, ptsOffset, start, &id)
        }
        return id
    }

    /// The staged tracks replace every other (`mq_player_activate_tracks`).
    package func activateTracks() throws(CoreError) {
        try call { mq_player_activate_tracks($0) }
    }

    /// How pictures fit the display from now on (`mq_player_set_fit`; `mq_fit`'s values).
    package func setFit(_ fit: Int32) throws(CoreError) {
        try call { mq_player_set_fit($0, fit) }
    }

    /// Keeps a reference to the picture presented last, for ``snapshotPNG(maxWidth:)``
    /// (`mq_player_keep_last_picture`).
    package func keepLastPicture(_ keep: Bool) throws(CoreError) {
        try call { mq_player_keep_last_picture($0, keep) }
    }

    /// The picture presented last as a PNG (`mq_player_snapshot_png`): converts and encodes on
    /// the calling thread, tens of milliseconds at 720p.
    package func snapshotPNG(maxWidth: Int) throws(CoreError) -> (
        png: [UInt8], mediaTime: Double, width: Int, height: Int
    ) {
        var bytes: UnsafeMutablePointer<UInt8>?
        var size = 0
        var pts = 0.0
        var width: Int32 = 0
        var height: Int32 = 0
        try call { mq_player_snapshot_png($0, Int32(clamping: maxWidth), &bytes, &size, &pts, &width, &height) }
        defer { mq_free(bytes) }
        let png = bytes.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        return (png, pts, Int(width), Int(height))
    }

    /// Removes a track (`mq_player_remove_track`).
    package func removeTrack(_ track: Int32) throws(CoreError) {
        try call { mq_player_remove_track($0, track) }
    }

    package func push(track: Int32, bytes: UnsafeRawBufferPointer) throws(CoreError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        try call { mq_player_push($0, track, base.assumingMemoryBound(to: UInt8.self), bytes.count) }
    }

    /// The C heap: bytes in live allocations and bytes kept free by the allocator
    /// (`mq_heap_usage`, glibc `mallinfo2`); zeros where unsupported.
    package static func heapUsage() -> (inUse: Int, free: Int) {
        var inUse: Int64 = 0
        var free: Int64 = 0
        _ = mq_heap_usage(&inUse, &free)
        return (Int(inUse), Int(free))
    }

    /// Gives back the heap's free pages and the start-up's resident code and read-only data
    /// (`mq_memory_trim`): the resident bytes released; 0 where unsupported.
    @discardableResult
    package static func trimMemory() -> Int {
        var released: Int64 = 0
        _ = mq_memory_trim(&released)
        return Int(released)
    }

    /// Heap blocks of 128 KiB or more mapped on their own, given back when freed
    /// (`mq_memory_map_large_blocks`); false where unsupported.
    @discardableResult
    package static func mapLargeBlocks() -> Bool { mq_memory_map_large_blocks(0) == 0 }

    /// Pushes an init segment; the core keeps a copy to resume on after a damaged segment
    /// (`mq_player_push_init`).
    package func pushInit(track: Int32, bytes: UnsafeRawBufferPointer) throws(CoreError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        try call { mq_player_push_init($0, track, base.assumingMemoryBound(to: UInt8.self), bytes.count) }
    }

    /// Marks the end of a media segment: a damaged one costs only itself (`mq_player_end_segment`).
    package func endSegment(track: Int32) throws(CoreError) {
        try call { mq_player_end_segment($0, track) }
    }

    package func resetTrack(_ track: Int32) throws(CoreError) {
        try call { mq_player_reset_track($0, track) }
    }

    /// Reuses a track for a new source: discards its queue, restarts its demuxer (the next bytes
    /// are an init segment) and sets its pts offset.
    package func reuseTrack(_ track: Int32, ptsOffset: Double) throws(CoreError) {
        try call { mq_player_reset_track($0, track) }
        try call { mq_player_set_track_offset($0, track, ptsOffset) }
    }

    /// What a track's bytes are (`mq_player_set_track_container`): before its first push or
    /// right after a reset.
    package func setTrackContainer(_ track: Int32, transportStream: Bool) throws(CoreError) {
        try call {
            mq_player_set_track_container(
                $0, track, Int32(transportStream ? MQ_CONTAINER_MPEGTS.rawValue : MQ_CONTAINER_FMP4.rawValue))
        }
    }

    /// The track's bytes are one whole file in any format libavformat recognises (a still
    /// image, a progressive MP4): `MQ_CONTAINER_PROBED`.
    package func setTrackContainerProbed(_ track: Int32) throws(CoreError) {
        try call { mq_player_set_track_container($0, track, Int32(MQ_CONTAINER_PROBED.rawValue)) }
    }

    /// Changes the offset added to a track's media time (`mq_player_set_track_offset`), read as
    /// each frame is decoded.
    package func setTrackOffset(_ track: Int32, ptsOffset: Double) throws(CoreError) {
        try call { mq_player_set_track_offset($0, track, ptsOffset) }
    }

    /// The bytes pushed next begin a new stream (`mq_player_push_discontinuity`): what is queued
    /// plays to its end, then a new demuxer and decoder take over, placed with `ptsOffset`
    /// (`nil`: the current one, or one set later with ``setTrackOffset(_:ptsOffset:)``).
    package func pushDiscontinuity(_ track: Int32, ptsOffset: Double?) throws(CoreError) {
        try call { mq_player_push_discontinuity($0, track, ptsOffset ?? .nan) }
    }

    package func endTrack(_ track: Int32) throws(CoreError) {
        try call { mq_player_end_track($0, track) }
    }

    /// Server Unix time = monotonic seconds + `offset`.
    package func setWallOffset(_ offset: Double) throws(CoreError) {
        try call { mq_player_set_wall_offset($0, offset) }
    }

    /// Presentation time due at monotonic `t` = `mediaAnchor + (t − monoAnchor) × rate`.
    package func setTimeline(monoAnchor: Double, mediaAnchor: Double, rate: Double = 1) throws(CoreError) {
        try call { mq_player_set_timeline($0, monoAnchor, mediaAnchor, rate) }
    }

    /// What a display shows over the pictures (`mq_player_set_overlay`).
    package enum Overlay: Sendable {
        /// Pictures only (`MQ_OVERLAY_NONE`).
        case none
        /// A band at the bottom over the held picture (`MQ_OVERLAY_BUFFERING`); nil message: "BUFFERING".
        case buffering(String?)
        /// A full-screen slate (`MQ_OVERLAY_SLATE`); nil message: "RECONNECTING...".
        case slate(String?)
        /// `MQ_OVERLAY_BLANK`: the display is off (black); pictures are consumed unseen.
        case blank
    }

    package func setOverlay(_ overlay: Overlay) throws(CoreError) {
        let (kind, message): (Int32, String?) =
            switch overlay {
            case .none: (Int32(MQ_OVERLAY_NONE.rawValue), nil)
            case .buffering(let m): (Int32(MQ_OVERLAY_BUFFERING.rawValue), m)
            case .slate(let m): (Int32(MQ_OVERLAY_SLATE.rawValue), m)
            case .blank: (Int32(MQ_OVERLAY_BLANK.rawValue), nil)
            }
        try call { p in withOptionalCString(message) { mq_player_set_overlay(p, kind, $0) } }
    }

    /// Names what is presented from now on (a playlist item's id; nil: nothing): the
    /// `frames:` output's `item` column (`mq_player_set_label`).
    package func setLabel(_ label: String?) throws(CoreError) {
        try call { p in withOptionalCString(label) { mq_player_set_label(p, $0) } }
    }

    // MARK: mixing

    /// A mixer input: the stream's audio or one of the clip inputs.
    package enum MixInput: Int32, Sendable, CaseIterable {
        case stream = 0
        case music = 1
        case ad = 2
        case spare = 3
    }

    package enum Ramp: Int32, Sendable {
        /// `MQ_RAMP_SHAPE_LINEAR`.
        case linear = 0
        /// `MQ_RAMP_SHAPE_EQUAL_POWER`.
        case equalPower = 1
    }

    /// Plays `path` on a clip input (see `mq_player_play_clip`); `at` nil: now. The file is
    /// opened (`mq_clip_open`, file I/O) on a Dispatch queue without holding the core's lock;
    /// the opened clip is then handed over (`mq_player_set_clip`, which never blocks).
    package func playClip(_ input: MixInput, path: String, offset: Double, loop: Bool, crossfade: Double, at: Double?)
        async throws(CoreError)
    {
        let (rate, channels) = clipFormat
        let opened = await offCooperativePool { () -> CorePointer in
            var clip: OpaquePointer?
            let rc = mq_clip_open(path, rate, channels, offset, loop, crossfade, at ?? .nan, &clip)
            return CorePointer(clip, rc)
        }
        var clip = opened.pointer
        guard opened.rc >= 0, clip != nil else { throw CoreError(code: opened.rc) }
        let rc: Int32 = player.withLock { p in
            guard let p else { return MQ_ERR_CLOSED.rawValue }
            return mq_player_set_clip(p, input.rawValue, &clip)  // takes the clip whatever the result
        }
        mq_clip_destroy(&clip)  // closed meanwhile: it was never handed over (else nil already)
        if rc < 0 { throw CoreError(code: rc) }
    }

    /// Stops a clip input at once (`mq_player_stop_clip`, which never blocks).
    package func stopClip(_ input: MixInput) throws(CoreError) {
        try call { p in mq_player_stop_clip(p, input.rawValue) }
    }

    /// Ramps an input's gain (see `mq_player_set_gain`); `at` nil: now.
    package func setGain(_ input: MixInput, _ gain: Double, ramp: Double, shape: Ramp, at: Double?) throws(CoreError) {
        try call { p in mq_player_set_gain(p, input.rawValue, Float(gain), ramp, shape.rawValue, at ?? .nan) }
    }

    package func cancelTimedGains() throws(CoreError) {
        try call { p in mq_player_cancel_timed_gains(p) }
    }

    package func setVolume(_ volume: Double, muted: Bool) throws(CoreError) {
        try call { p in mq_player_set_volume(p, Float(volume), muted) }
    }

    /// The gain an input has reached, nil when closed.
    package func gain(_ input: MixInput) -> Double? {
        player.withLock { p in
            guard let p else { return nil }
            let g = mq_player_gain(p, input.rawValue)
            return g.isFinite ? Double(g) : nil
        }
    }

    package func start() throws(CoreError) {
        try call { mq_player_start($0) }
    }

    package func status() -> CoreStatus? {
        var s = mq_status()
        let rc: Int32 = player.withLock { p in
            guard let p else { return MQ_ERR_CLOSED.rawValue }
            return mq_player_get_status(p, &s)
        }
        guard rc >= 0 else { return nil }
        func finite(_ v: Double) -> Double? { v.isFinite ? v : nil }
        let state: CoreStatus.State
        switch s.state {
        case Int32(MQ_STATE_BUFFERING.rawValue): state = .buffering
        case Int32(MQ_STATE_PLAYING.rawValue): state = .playing
        case Int32(MQ_STATE_ENDED.rawValue): state = .ended
        case Int32(MQ_STATE_ERROR.rawValue): state = .error
        default: state = .idle
        }
        return CoreStatus(
            state: state, width: Int(s.width), height: Int(s.height), mono: s.mono, position: finite(s.position),
            audioDelay: s.audio_delay, audioQueuedUntil: finite(s.audio_queued_until),
            videoQueuedUntil: finite(s.video_queued_until),
            firstFrameMono: s.first_frame_mono > 0 ? s.first_frame_mono : nil, framesDecoded: Int(s.frames_decoded),
            framesPresented: Int(s.frames_presented), framesDropped: Int(s.frames_dropped),
            audioFramesPlayed: Int(s.audio_frames_played),
            audioFramesDropped: Int(s.audio_frames_dropped), audioSilenceFrames: Int(s.audio_silence_frames),
            avOffset: finite(s.av_offset_peak) ?? finite(s.av_offset), audioUnderruns: Int(s.audio_underruns),
            audioXruns: Int(s.audio_xruns),
            audioError: s.audio_error)
    }

    /// Drops the pending events: those of what a new source replaces (its end, its errors)
    /// would otherwise be read as the new one's.
    package func dropEvents() {
        while pollEvent() != nil {}
    }

    /// The oldest pending core event, if any.
    package func pollEvent() -> CoreEvent? {
        var e = mq_event()
        let got: Int32 = player.withLock { p in
            guard let p else { return 0 }
            return mq_player_poll_event(p, &e)
        }
        guard got == 1 else { return nil }
        let message = withUnsafeBytes(of: e.message) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        let kind: CoreEvent.Kind
        switch e.type {
        case Int32(MQ_EVENT_FIRST_FRAME.rawValue): kind = .firstFrame
        case Int32(MQ_EVENT_TRACK_FORMAT.rawValue): kind = .trackFormat
        case Int32(MQ_EVENT_ERROR.rawValue): kind = .error
        case Int32(MQ_EVENT_ENDED.rawValue): kind = .ended
        case Int32(MQ_EVENT_UNDERRUN.rawValue): kind = .underrun
        case Int32(MQ_EVENT_OUTPUT_CHANGED.rawValue): kind = .outputChanged
        case Int32(MQ_EVENT_DECODER_FALLBACK.rawValue): kind = .decoderFallback
        case Int32(MQ_EVENT_CLIP_ENDED.rawValue): kind = .clipEnded
        default: kind = .other(e.type)
        }
        return CoreEvent(
            kind: kind, track: e.track >= 0 ? e.track : nil,
            error: e.code < 0 ? CoreError(code: e.code, message: message) : nil,
            mediaTime: e.media_time.isFinite ? e.media_time : nil, message: message)
    }

    /// `mq_clock_now()`: CLOCK_MONOTONIC seconds.
    package static func now() -> Double { mq_clock_now() }

    /// `bytes` decrypted with AES-128-CBC under `key` from `iv`, PKCS#7 padding removed
    /// (`mq_aes128_cbc_decrypt`).
    package static func decryptAES128(_ bytes: [UInt8], key: [UInt8], iv: [UInt8]) throws(CoreError) -> [UInt8] {
        guard key.count == 16, iv.count == 16, !bytes.isEmpty else {
            throw CoreError(
                code: Int32(MQ_ERR_INVALID_ARGUMENT.rawValue), message: "AES-128 needs a 16-byte key and IV")
        }
        var data = bytes
        var size = 0
        let rc = data.withUnsafeMutableBufferPointer { d in
            key.withUnsafeBufferPointer { k in
                iv.withUnsafeBufferPointer { v in
                    mq_aes128_cbc_decrypt(k.baseAddress!, v.baseAddress!, d.baseAddress!, d.count, &size)
                }
            }
        }
        guard rc >= 0 else { throw CoreError(code: rc) }
        data.removeLast(data.count - size)
        return data
    }
}

private func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}

/// The `mq_player` pointer behind a `NIOLock`: calls into the core one at a time.
private final class LockedPlayer: @unchecked Sendable {
    private let lock = NIOLock()
    private var pointer: OpaquePointer?

    init(_ pointer: OpaquePointer?) { self.pointer = pointer }

    func withLock<R>(_ body: (inout OpaquePointer?) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&pointer)
    }

    /// Takes the pointer out (nil from then on): its new owner destroys it outside the lock.
    func take() -> OpaquePointer? {
        withLock { p in
            defer { p = nil }
            return p
        }
    }
}

/// A core object (`mq_player`, `mq_clip`) in transit between threads, with the status of the
/// call that made it: it has a single owner at a time, which the C API's ownership rules keep.
private struct CorePointer: @unchecked Sendable {
    var pointer: OpaquePointer?
    var rc: Int32

    init(_ pointer: OpaquePointer?, _ rc: Int32 = 0) {
        self.pointer = pointer
        self.rc = rc
    }
}

/// Runs `body` on a Dispatch queue and waits for it: core calls that block (file I/O, joining
/// threads) must not hold one of the cooperative pool's few threads.
private func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        DispatchQueue.global(qos: .userInitiated).async { done.resume(returning: body()) }
    }
}
