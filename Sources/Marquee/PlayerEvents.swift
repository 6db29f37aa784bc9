import Synchronization
import MarqueeStreaming

/// What a player is doing.
public enum PlaybackState: String, Sendable, Hashable {
    case idle, loading, buffering, playing, paused, ended, error
}

/// Live presentation or on demand, from the manifest.
public enum StreamType: String, Sendable, Hashable {
    case live, onDemand, unknown
}

/// A rendition being played.
public struct Quality: Sendable, Hashable {
    public var kind: String
    public var id: String
    public var bandwidth: Int
    public var codecs: String?
    public var width: Int?
    public var height: Int?

    init(_ r: Representation) {
        self.init(kind: r.kind.rawValue, id: r.id, bandwidth: r.bandwidth, codecs: r.codecs, width: r.width, height: r.height)
    }

    init(kind: String, id: String, bandwidth: Int, codecs: String?, width: Int?, height: Int?) {
        (self.kind, self.id, self.bandwidth, self.codecs, self.width, self.height) = (kind, id, bandwidth, codecs, width, height)
    }
}

/// Something that happened in a player.
public enum PlayerEvent: Sendable, Hashable {
    case stateChanged(PlaybackState)
    /// A source's manifest loaded and its renditions were chosen.
    case sourceLoaded(url: String, streamType: StreamType)
    /// The rendition being played changed (ABR switched, or a pinned quality took effect).
    case activeQualityChanged(Quality)
    /// ABR is stepping up to `quality` on the strength of a throughput estimate of
    /// `bitsPerSecond`: a probe of the link (followed by a step back down if it does not hold).
    case bandwidthTest(bitsPerSecond: Double, quality: Quality)
    /// The first frame was presented, `seconds` after `play()`.
    case firstFrame(seconds: Double)
    /// The server clock was measured: server − local wall clock, seconds.
    case timeOffsetChanged(seconds: Double)
    /// The latency controller changed the playback rate (1 when it stops steering).
    case playbackRateChanged(Double)
    /// The latency controller jumped: the latency was `error` seconds off target (positive:
    /// behind) and is now on target.
    case latencyJump(error: Double)
    /// The latency target in use changed without the app asking: raised to `seconds` because
    /// the stream's segments arrive too late for the app's `requested` target (the server
    /// publishes late), or lowered again toward it once they arrive in time (see
    /// ``FeasibleLatency``).
    case targetLatencyChanged(seconds: Double, requested: Double)
    /// Playback stalled for the recovery delay and the stream is being reloaded; the next
    /// stall waits `nextDelay` seconds.
    case recovering(nextDelay: Double)
    /// Pictures or sound are being presented again after ``recovering(nextDelay:)``.
    case recovered
    /// A refreshed remote config was applied (``Player/apply(_:)``).
    case configApplied(targetLatency: Double?)
    /// A failure. Playback goes on unless `fatal`.
    case error(PlayerError, fatal: Bool)
    /// The display was unplugged, plugged back or changed mode; the output set itself up again.
    case outputChanged(String)
    /// A track's preferred (hardware) decoder could not be used; software decoding took over.
    case decoderFallback(String)
    /// ``Player/setVolume(_:muted:)`` changed the volume or mute.
    case volumeChanged(volume: Double, muted: Bool)
    /// The presented position, once a second while playing (seconds).
    case timeUpdate(Double)
    /// ``Player/seek(to:)`` moved presentation to this presentation time.
    case seeked(to: Double)
    /// A seek asked for a time outside the seekable window; it went to the window's edge.
    case seekClamped(requested: Double, to: Double)
    /// The user delay in effect changed (``Player/setDelay(_:)``, ``Player/resume()``), seconds.
    case delayChanged(seconds: Double)
    /// The presented stream reached a broadcaster mute (or a jump moved into one)…
    case streamerMuted
    /// …and its end (or a jump moved out of it).
    case streamerUnmuted
    /// The mute music began / stopped being heard (it fades in and out over
    /// ``MixOptions/muteCrossfade``).
    case muteMusicStarted
    case muteMusicStopped
    /// The presented stream reached an ad break (or a jump moved into one): the creative plays.
    case adStarted(AdBreak)
    /// The break ended, or a jump left it (forward past its end, or back before its start).
    case adFinished(AdBreak)
    case ended
}

/// The events of one player, oldest first. Bounded: when a consumer falls behind, the oldest
/// undelivered events are dropped and counted in ``droppedCount``. One consumer at a time.
public struct PlayerEvents: AsyncSequence, Sendable {
    public typealias Element = PlayerEvent

    let stream: AsyncStream<PlayerEvent>
    let dropped: DroppedCounter

    final class DroppedCounter: Sendable {
        let value = Atomic<Int>(0)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<PlayerEvent>.AsyncIterator
        public mutating func next() async -> PlayerEvent? { await base.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }

    /// Events dropped because the consumer fell more than the buffer behind.
    public var droppedCount: Int { dropped.value.load(ordering: .relaxed) }

    static func make(capacity: Int = 512) -> (PlayerEvents, Sink) {
        let (stream, continuation) = AsyncStream.makeStream(of: PlayerEvent.self, bufferingPolicy: .bufferingNewest(capacity))
        let counter = DroppedCounter()
        return (PlayerEvents(stream: stream, dropped: counter), Sink(continuation: continuation, dropped: counter))
    }

    struct Sink: Sendable {
        let continuation: AsyncStream<PlayerEvent>.Continuation
        let dropped: DroppedCounter

        func send(_ event: PlayerEvent) {
            if case .dropped = continuation.yield(event) {
                dropped.value.add(1, ordering: .relaxed)
            }
        }

        func finish() { continuation.finish() }
    }
}
