internal import CCore
import Dispatch
import NIOConcurrencyHelpers

/// Owns one `mq_player`; `deinit` destroys it. Calls are serialised, as the C API requires.
package final class CoreHandle: Sendable {
    /// The `mq_player`, behind SwiftNIO's `NIOLock` (a `pthread_mutex_t`, which ThreadSanitizer
    /// sees; see `MarqueeStreaming.Locked`).
    let player: LockedPlayer
    /// Signals ``events()``' consumer; registered with the core at creation, alive until the
    /// core is destroyed.
    private let wakeup: CoreWakeup
    /// The output format clips are opened with (`mq_player_audio_format`: the rate the device
    /// took, which may differ from the one asked for, and the channel count).
    let clipFormat: (rate: Int32, channels: Int32)

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

    /// A signal each time events are queued (one stands for any number; the newest kept), for a
    /// consumer that polls them itself (``pollEvent()``). It ends when the core closes; a second
    /// call ends the first.
    package func eventSignals() -> AsyncStream<Void> { wakeup.subscribe() }

    func call(_ body: (OpaquePointer) -> Int32) throws(CoreError) {
        let rc: Int32 = player.withLock { p in
            guard let p else { return MQ_ERR_CLOSED.rawValue }
            return body(p)
        }
        if rc < 0 { throw CoreError(code: rc) }
    }

    /// Server Unix time = monotonic seconds + `offset`.
    package func setWallOffset(_ offset: Double) throws(CoreError) {
        try call { mq_player_set_wall_offset($0, offset) }
    }

    /// Presentation time due at monotonic `t` = `mediaAnchor + (t − monoAnchor) × rate`.
    /// Sets the schedule (`mq_player_set_timeline`). `epoch`: only while the tracks activated
    /// in that epoch present (``epoch``): a source replaced meanwhile (a cut the core made on its
    /// own, ``ArmedActivation``) steers no more (`MQ_ERR_STATE`).
    package func setTimeline(monoAnchor: Double, mediaAnchor: Double, rate: Double = 1, epoch: UInt64? = nil)
        throws(CoreError)
    {
        let rc: Int32 = player.withEpochLock { p, current in
            guard let p else { return MQ_ERR_CLOSED.rawValue }
            if let epoch, epoch != current { return MQ_ERR_STATE.rawValue }
            return mq_player_set_timeline(p, monoAnchor, mediaAnchor, rate)
        }
        if rc < 0 { throw CoreError(code: rc) }
    }

    /// The presenting tracks' epoch: every activation of staged tracks (``activateTracks()``,
    /// an ``ArmedActivation``) begins the next. A source notes it when it begins presenting.
    package var epoch: UInt64 { player.withEpochLock { _, epoch in epoch } }

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
        case Int32(MQ_EVENT_LABEL_SHOWN.rawValue): kind = .labelShown
        case Int32(MQ_EVENT_CAPTION.rawValue): kind = .caption
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

func withOptionalCString<R>(_ s: String?, _ body: (UnsafePointer<CChar>?) -> R) -> R {
    guard let s else { return body(nil) }
    return s.withCString { body($0) }
}

/// The `mq_player` pointer behind a `NIOLock`: calls into the core one at a time.
final class LockedPlayer: @unchecked Sendable {
    private let lock = NIOLock()
    private var pointer: OpaquePointer?
    /// Counts the activations of staged tracks (``CoreHandle/epoch``), under the same lock.
    private var epoch: UInt64 = 0

    init(_ pointer: OpaquePointer?) { self.pointer = pointer }

    func withLock<R>(_ body: (inout OpaquePointer?) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&pointer)
    }

    /// `withLock` with the epoch too, read and written under the same lock.
    func withEpochLock<R>(_ body: (inout OpaquePointer?, inout UInt64) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&pointer, &epoch)
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
struct CorePointer: @unchecked Sendable {
    var pointer: OpaquePointer?
    var rc: Int32

    init(_ pointer: OpaquePointer?, _ rc: Int32 = 0) {
        self.pointer = pointer
        self.rc = rc
    }
}

/// Runs `body` on a Dispatch queue and waits for it: core calls that block (file I/O, joining
/// threads) must not hold one of the cooperative pool's few threads.
func offCooperativePool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { (done: CheckedContinuation<T, Never>) in
        DispatchQueue.global(qos: .userInitiated).async { done.resume(returning: body()) }
    }
}
