import MarqueeStreaming
import Synchronization

/// What a player is doing.
public enum PlaybackState: String, Sendable, Hashable {
    /// Not playing: before ``Player/play()`` or after ``Player/stop()``.
    case idle
    /// ``Player/play()`` is opening the outputs and loading a source's manifest.
    case loading
    /// Waiting for media: before the first frame, after a stall, or while no source plays and
    /// the sources are being tried again.
    case buffering
    /// Pictures and sound are being presented.
    case playing
    /// Presentation is stopped by ``Player/pause()`` or ``Player/suspend()``; a live stream
    /// keeps being collected.
    case paused
    /// An on-demand stream played to its end.
    case ended
    /// Playback failed; ``Player/error`` holds why.
    case error
}

/// Live presentation or on demand, from the manifest.
public enum StreamType: String, Sendable, Hashable {
    /// A live presentation (DASH `type="dynamic"`, an HLS playlist without `EXT-X-ENDLIST`).
    case live
    /// A presentation of fixed length (DASH `type="static"`, an HLS playlist with `EXT-X-ENDLIST`).
    case onDemand
    /// No manifest has loaded yet.
    case unknown
}

/// A rendition being played.
public struct Quality: Sendable, Hashable {
    /// The media it carries: `video`, `audio`, `text`, `image` or `unknown`.
    public var kind: String
    /// The representation id (DASH `Representation@id`, or the id given to an HLS variant or
    /// rendition); what ``Player/selectQuality(_:)`` takes.
    public var id: String
    /// The declared bitrate, bits per second (DASH `@bandwidth`, HLS `BANDWIDTH`).
    public var bandwidth: Int
    /// The RFC 6381 codecs string (`avc1.64001f`, `mp4a.40.2`), when the manifest gives one.
    public var codecs: String?
    /// Picture width, pixels; nil for audio or when the manifest does not say.
    public var width: Int?
    /// Picture height, pixels; nil for audio or when the manifest does not say.
    public var height: Int?

    init(_ r: Representation) {
        self.init(
            kind: r.kind.rawValue, id: r.id, bandwidth: r.bandwidth, codecs: r.codecs, width: r.width, height: r.height)
    }

    init(kind: String, id: String, bandwidth: Int, codecs: String?, width: Int?, height: Int?) {
        (self.kind, self.id, self.bandwidth, self.codecs, self.width, self.height) = (
            kind, id, bandwidth, codecs, width, height
        )
    }
}

/// Something that happened in a player.
public enum PlayerEvent: Sendable, Hashable {
    /// The player's ``PlaybackState`` changed to this one.
    case stateChanged(PlaybackState)
    /// A source's manifest loaded and its renditions were chosen.
    case sourceLoaded(url: String, streamType: StreamType)
    /// The rendition being played changed (ABR switched, or a pinned quality took effect).
    case activeQualityChanged(Quality)
    /// ABR is stepping up to `quality` on the strength of a throughput estimate of
    /// `bitsPerSecond`: a probe of the link (followed by a step back down if it does not hold).
    case bandwidthTest(bitsPerSecond: Double, quality: Quality)
    /// The first frame was presented, `seconds` after `play()`: on a live start, the keyframe
    /// the decode began at, shown as a still while the decoder catches up to the position due
    /// (``PlayerOptions/joinStill``); the state turns `playing` with the first due picture.
    case firstFrame(seconds: Double)
    /// The server clock was measured: server − local wall clock, seconds.
    case timeOffsetChanged(seconds: Double)
    /// The latency controller changed the playback rate (1 when it stops steering).
    case playbackRateChanged(Double)
    /// The latency controller jumped: the latency was `error` seconds off target (positive:
    /// behind) and is now on target.
    case latencyJump(error: Double)
    /// Live HLS without program date-times, placed by when its playlists were answered: when the
    /// packager publishes was learned from the answers, and the timeline moved by `moved`
    /// seconds (positive: toward live) to put each publication where every box puts it, within
    /// `error` seconds. The first comes a few segments after the start, within 10 ms (a move of
    /// up to a segment, one jump); then refinements of a few milliseconds, each a small jump, and
    /// once the error is 2 ms or less, one saying so (`moved` 0 when it needed no move).
    case liveEdgeLearned(moved: Double, error: Double)
    /// The latency target in use changed without the app asking: raised to `seconds` because
    /// the stream's segments arrive too late for the app's `requested` target (the server
    /// publishes late), or lowered again toward it once they arrive in time (see
    /// ``PlaybackStatus/targetLatency``).
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
    /// The mute music began to be heard (it fades in over ``MixOptions/muteCrossfade``).
    case muteMusicStarted
    /// The mute music stopped being heard (it fades out over ``MixOptions/muteCrossfade``).
    case muteMusicStopped
    /// The presented stream reached an ad break (or a jump moved into one): the creative plays.
    case adStarted(AdBreak)
    /// The break ended, or a jump left it (forward past its end, or back before its start).
    case adFinished(AdBreak)
    /// An on-demand stream played to its end (the state becomes ``PlaybackState/ended``).
    case ended
    /// The closed captions on screen changed: CEA-608 carried in the video's pictures (ATSC A/53
    /// user data in H.264, HEVC or MPEG-2, in TS or fMP4, HLS or DASH; channel CC1), decoded as
    /// broadcast decoders do (pop-on, roll-up, paint-on), reported as the picture that changed
    /// them is presented, at `position` (the clock of ``timeUpdate(_:)``). `text` is what they
    /// show now, a line per row, "" when cleared.
    case captionChanged(text: String, position: Double)
}

/// The events of one player: ``EventStream`` of ``PlayerEvent``.
public typealias PlayerEvents = EventStream<PlayerEvent>

/// Events, oldest first (a ``Player``'s, a playlist's). Bounded: when a consumer falls behind,
/// the oldest undelivered events are dropped and counted in ``droppedCount``. One consumer at a
/// time.
public struct EventStream<Event: Sendable>: AsyncSequence, Sendable {
    /// Each element is one event.
    public typealias Element = Event

    let stream: AsyncStream<Event>
    let dropped: DroppedCounter

    final class DroppedCounter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// Iterates the events; returned by ``EventStream/makeAsyncIterator()``.
    public struct AsyncIterator: AsyncIteratorProtocol {
        var base: AsyncStream<Event>.AsyncIterator
        /// The next event, waiting for one; nil once its producer is closed (``Player/close()``)
        /// or the iterating task is cancelled.
        public mutating func next() async -> Event? { await base.next() }
    }

    /// An iterator over the events not yet delivered. Only one task should iterate at a time:
    /// two iterators would share, not each receive, the events.
    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(base: stream.makeAsyncIterator()) }

    /// Events dropped because the consumer fell more than the buffer behind.
    public var droppedCount: Int { dropped.value.load(ordering: .relaxed) }

    /// A stream and the sink its producer sends into.
    package static func make(capacity: Int = 512) -> (EventStream, Sink) {
        let (stream, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(capacity))
        let counter = DroppedCounter()
        return (EventStream(stream: stream, dropped: counter), Sink(continuation: continuation, dropped: counter))
    }

    /// What a producer sends events into.
    package struct Sink: Sendable {
        let continuation: AsyncStream<Event>.Continuation
        let dropped: DroppedCounter

        package func send(_ event: Event) {
            if case .dropped = continuation.yield(event) {
                dropped.value.add(1, ordering: .relaxed)
            }
        }

        package func finish() { continuation.finish() }
    }
}
