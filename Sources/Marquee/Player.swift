import Foundation
public import Logging
import MarqueeBridge
package import MarqueeStreaming

/// Plays one live (or on-demand) DASH or HLS stream from a list of sources.
///
/// Create it with ``PlayerOptions``, call ``play()``, read ``status`` and ``events``, and
/// ``stop()`` when done. Safe to use from any task.
///
/// ```swift
/// let player = try Player(options: PlayerOptions(sources: [url], audioOutput: .alsa()))
/// try await player.play()
/// for await event in player.events { print(event) }
/// ```
public final class Player: Sendable {
    /// The options in effect (see ``updateOptions(_:)``).
    public var options: PlayerOptions { inner.withLock { $0.options } }
    /// Every change, in order (bounded; see ``PlayerEvents``).
    public let events: PlayerEvents
    let sink: PlayerEvents.Sink
    let logger: Logger
    package let fetcher: HTTPFetcher
    /// The best reading of each server clock this player measured, shared by its sessions,
    /// their re-synchronisations and a schedule's time source (``ServerClockBook``).
    package let clocks = ServerClockBook()
    /// This player's session id: CMCD's `sid` (``CMCDOptions/sessionId``, else a new UUID),
    /// and the QoE record's (MarqueeFleet).
    public let sessionId: String
    let inner: Locked<Inner>
    /// The source the core's events go to (``MediaSource``): switched with this lock held, and
    /// the pump hands each event on with it held (``pumpEvents(_:)``).
    let presenting = Locked<(any MediaSource)?>(nil)
    /// Signalled as the first picture under a new label (``setLabel(_:)``) is presented: a
    /// playlist's watcher learns its item shows without sampling the picture count.
    package let pictures = Wakeup()
    /// What the sources are fetched through (a venue proxy), started by the first ``play()``,
    /// stopped by ``stop()``; nil: straight from the sources.
    public let router: (any SourceRouter)?

    struct Inner {
        var options: PlayerOptions
        /// Whether the options must name a source (not a playlist's player).
        let requiresSources: Bool
        var disposed = false
        var session: PlaybackSession?
        var task: Task<Void, Never>?
        var state: PlaybackState = .idle
        var error: PlayerError?
        var targetLatency: Double?
        /// The outputs, open from the first `play()` to `stop()`: reloads keep them (and what
        /// they show).
        var core: CoreHandle?
        var supervisor: Task<Void, Never>?
        /// The outputs' event pump (``pumpEvents(_:)``), from their opening to `stop()`.
        var pump: Task<Void, Never>?
        /// The file or still presenting (``playFile(_:label:still:from:)``), nil once a stream
        /// took over.
        var file: FileSource?
        /// The sessions' reports to the stall supervisor (``SessionReport``), from the first
        /// `play()` to `stop()`: every session of those outputs reports into it.
        var reports: (stream: AsyncStream<SessionReport>, input: AsyncStream<SessionReport>.Continuation)?
        var mixer: MixDirector?
        /// Events scheduled before `play()`.
        var scheduled: [TimedEvent] = []
        var volume: Double = 1
        var muted = false
        var displayOff = false
        var suspended = false
        /// Whether the core's threads run (a session began, or a still picture is shown).
        var coreStarted = false
        /// The tracks a file or a still was played on when no session had them (reused by the
        /// next source's).
        var ownTracks: [CoreTrackKind: Int32] = [:]
        /// At most this many tries of the last source's manifest at a start (nil: the manifest
        /// policy's): a playlist's item that does not answer is skipped soon, the picture held.
        var startAttempts: Int?
        /// A source made ready ahead (``prepare(_:targetLatency:startAt:)``): the next session
        /// of its URL starts on it.
        var prepared: PreparedSource?
        /// The next source's session, decoding ahead on staged core tracks (``prepare(_:targetLatency:startAt:)``):
        /// the next ``load(sources:)`` of its URL activates it.
        var staged: PlaybackSession?
        /// The next file or still, decoding ahead on staged core tracks for a switch's instant
        /// (``stageFile(_:label:still:from:at:)``): the core shows it then by itself.
        var stagedFile: StagedFile?
        /// The fit set by ``setFit(_:)`` (nil: the options').
        var fit: VideoFit?
        /// The caption display set by ``setCaptions(_:)`` (nil: the options').
        var captions: CaptionDisplay?
        /// Whether the core keeps the picture presented last (``keepLastPicture(_:)``).
        var keepsLastPicture = false
        /// Latency targets earlier sessions had to raise, by source, with when (monotonic):
        /// the next session of that source starts there (``learnedTarget(for:)``).
        var learnedTargets: [URL: (target: Double, at: Double)] = [:]
    }

    /// Validates `options`; throws ``PlayerError/Code-swift.struct/invalidOptions`` or
    /// ``PlayerError/Code-swift.struct/invalidOptionsSources`` when they cannot be used.
    /// `router`: what the sources are fetched through (``SourceRouter``; nil: straight).
    public convenience init(
        options: PlayerOptions, router: (any SourceRouter)? = nil, logger: Logger = Logger(label: "marquee.player")
    ) throws(PlayerError) {
        try self.init(options: options, router: router, logger: logger, requiresSources: true)
    }

    /// `requiresSources` false: the options may name no source (a playlist's player, whose
    /// items' sources are loaded in turn, ``load(sources:)``).
    package init(
        options: PlayerOptions, router: (any SourceRouter)?, logger: Logger, requiresSources: Bool
    ) throws(PlayerError) {
        inner = Locked(
            Inner(options: try options.validated(requiringSources: requiresSources), requiresSources: requiresSources))
        self.router = router
        self.logger = logger
        (events, sink) = PlayerEvents.make()
        sessionId = options.cmcd?.sessionId ?? UUID().uuidString
        let headers = options.httpHeaders.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        var fetcher: HTTPFetcher
        do {
            fetcher = try HTTPFetcher(caFile: options.documentSecurity.caFile, followsRedirects: true, headers: headers)
        } catch {
            throw PlayerError(.invalidOptions, "caFile: \(error.message)")
        }
        if let cmcd = options.cmcd {
            let session = CMCDSession(
                mode: cmcd.transmission == .query ? .query : .headers, sessionId: sessionId, contentId: cmcd.contentId)
            let hls = options.sources.first?.pathExtension.lowercased() == "m3u8"
            session.update { $0.streamingFormat = hls ? "h" : "d" }
            fetcher.cmcd = session
        }
        self.fetcher = fetcher
        inner.withLock { $0.muted = options.muted }
    }

    deinit {
        inner.withLock {
            $0.task?.cancel()
            $0.supervisor?.cancel()
            $0.pump?.cancel()
        }
        sink.finish()
    }

    /// The current state.
    public var state: PlaybackState {
        inner.withLock { $0.session?.state ?? $0.state }
    }

    /// The last fatal error, if playback failed.
    public var error: PlayerError? { inner.withLock { $0.error } }

    /// State, latency, buffer, frame rate and counts, measured now.
    public var status: PlaybackStatus {
        let (session, state, core, started) = inner.withLock { ($0.session, $0.state, $0.core, $0.coreStarted) }
        if let session { return session.status() }
        var status = PlaybackStatus(state: state)
        // A file or a still played before any source (a playlist's first item): the core's.
        if started, let reading = core?.status() { status.read(reading, position: reading.position) }
        return status
    }
}
