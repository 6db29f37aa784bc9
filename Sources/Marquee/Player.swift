public import Foundation
public import Logging
import MarqueeBridge
import MarqueeStreaming
public import MarqueeVenue

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
    let fetcher: HTTPFetcher
    /// This player's session id: CMCD's `sid` (``CMCDOptions/sessionId``, else a new UUID),
    /// and the QoE record's (MarqueeFleet).
    public let sessionId: String
    let inner: Locked<Inner>
    /// The venue proxy the sources play through (``PlayerOptions/venue``), started by the first
    /// ``play()``, stopped by ``stop()``.
    let venue: VenueProxy?

    struct Inner {
        var options: PlayerOptions
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
        /// The fit set by ``setFit(_:)`` (nil: the options').
        var fit: VideoFit?
        /// Whether the core keeps the picture presented last (``keepLastPicture(_:)``).
        var keepsLastPicture = false
        /// Latency targets earlier sessions had to raise, by source, with when (monotonic):
        /// the next session of that source starts there (``learnedTarget(for:)``).
        var learnedTargets: [URL: (target: Double, at: Double)] = [:]
    }

    /// How long a source's raised latency target is remembered (seconds): a playlist's turn.
    static let learnedTargetLifetime = 600.0

    /// Notes the latency target `session` was raised to (a late server), for its source's next
    /// session; one that held the app's target forgets the source's.
    private func learn(from session: PlaybackSession?) {
        guard let session else { return }
        let raised = session.raisedTarget
        inner.withLock { inner in
            let now = Monotonic.now()
            inner.learnedTargets = inner.learnedTargets.filter { now - $0.value.at < Self.learnedTargetLifetime }
            inner.learnedTargets[session.source] = raised.map { ($0, now) }
        }
    }

    /// The latency target an earlier session of `source` was raised to, within
    /// ``learnedTargetLifetime``; nil when none was.
    func learnedTarget(for source: URL) -> Double? {
        inner.withLock { inner in
            inner.learnedTargets[source].flatMap {
                Monotonic.now() - $0.at < Self.learnedTargetLifetime ? $0.target : nil
            }
        }
    }

    /// Makes `source` ready to play at monotonic time `startAt` (a playlist's next item, while
    /// the current one plays): its manifest and the server clock (live). The next
    /// ``load(sources:)`` of it starts without loading them again. Throws what its manifest's load
    /// throws (the item would fail).
    ///
    /// Once the outputs play, the source's session is made too and decodes ahead on staged core
    /// tracks (``PlaybackSession/startFeeding()``): its first picture and sound wait, decoded, for
    /// the load, which only switches to them (a live source's, the one due at its target latency
    /// at `startAt`). Before that (nothing has played yet), only the manifest and clock are ready.
    /// `startAt` nil: not known yet (a file item playing to its end): a live source is only
    /// loaded ahead, not decoded (its entry depends on when it starts).
    func prepare(_ upstream: URL, targetLatency: Double?, startAt: Double?) async throws(PlayerError) {
        try await startVenue()
        let source = routed(upstream)
        var options = self.options
        options.sources = [source]
        if let target = targetLatency ?? inner.withLock({ $0.targetLatency }) { options.targetLatency = target }
        var policy = FetchPolicy.manifest
        if let attempts = inner.withLock({ $0.startAttempts }) { policy.attempts = min(policy.attempts, attempts) }
        await discardStaged()
        let (core, started, mixer, reports) = inner.withLock { ($0.core, $0.coreStarted, $0.mixer, $0.reports?.input) }
        let stage = core != nil && started
        let prepared = try await PreparedSource.prepare(
            source, options: options, fetcher: fetcher, logger: logger, policy: policy)
        if let core, stage, startAt != nil || !prepared.mpd.isLive {
            do throws(PlayerError) {
                let session = try await PlaybackSession(
                    source: source, options: options, core: core, fetcher: fetcher, startMono: Monotonic.now(),
                    logger: logger, events: sink,
                    mixer: mixer, startPolicy: policy, reports: reports, prepared: prepared,
                    stagedAt: startAt ?? Monotonic.now(),
                    learnedTarget: learnedTarget(for: source))
                session.startFeeding()
                let (kept, replaced) = inner.withLock { inner -> (Bool, PlaybackSession?) in
                    guard inner.core === core else { return (false, nil) }  // stopped meanwhile
                    defer { inner.staged = session }
                    return (true, inner.staged)  // (another preparation's, finished meanwhile)
                }
                await replaced?.discard()
                if !kept { await session.discard() }
                return
            } catch {
                logger.info(
                    "the next source is not decoded ahead", metadata: ["source": "\(source)", "error": "\(error)"])
            }
        }
        inner.withLock { $0.prepared = prepared }
    }

    /// Drops the session decoding ahead, if any (its source was not loaded next).
    private func discardStaged() async {
        let staged = inner.withLock { inner in
            defer { inner.staged = nil }
            return inner.staged
        }
        await staged?.discard()
    }

    /// The session decoding ahead for `sources`' first source, taken; nil (and any other
    /// dropped) when there is none. ``PreparedSource/maxAge`` bounds its age.
    private func takeStaged(for sources: [URL]) async -> PlaybackSession? {
        let staged = inner.withLock { inner in
            defer { inner.staged = nil }
            return inner.staged
        }
        guard let staged else { return nil }
        if staged.source == sources.first.map(routed), Monotonic.now() - staged.startMono < PreparedSource.maxAge {
            return staged
        }
        await staged.discard()
        return nil
    }

    /// Validates `options`; throws ``PlayerError/Code-swift.struct/invalidOptions`` or
    /// ``PlayerError/Code-swift.struct/invalidOptionsSources`` when they cannot be used.
    public init(options: PlayerOptions, logger: Logger = Logger(label: "marquee.player")) throws(PlayerError) {
        inner = Locked(Inner(options: try options.validated()))
        if var configuration = options.venue {
            configuration.upstreams += options.sources.compactMap { url in
                url.host.map { $0 + (url.port.map { ":\($0)" } ?? "") }
            }
            do { venue = try VenueProxy(configuration: configuration, logger: logger) } catch {
                throw PlayerError(.invalidOptions, "venue: \(error.message)")
            }
        } else {
            venue = nil
        }
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

    /// Opens the outputs, loads the first source that plays and starts playback. Returns once
    /// media is being fetched; the first frame is reported by ``PlayerEvent/firstFrame(seconds:)``.
    public func play() async throws(PlayerError) {
        if inner.withLock({ $0.disposed }) { throw PlayerError(.state, "play: the player was disposed") }
        let options = self.options
        let already = inner.withLock { inner -> Bool in
            if inner.session != nil || inner.state == .loading { return true }
            inner.state = .loading
            return false
        }
        if already { return }
        sink.send(.stateChanged(.loading))
        let startMono = Monotonic.now()
        do throws(PlayerError) {
            // What loading and initialising left resident goes before the stream's own work.
            if options.memoryTrimInterval != nil {
                MemoryUsage.mapLargeBlocks()
                MemoryUsage.trim(at: "play", logger: logger)
            }
            let core = try openOutputs(options)
            let session: PlaybackSession
            do {
                session = try await openFirstSource(core: core, startMono: startMono)
            } catch  where !options.failFast && Self.mayPass(error) {
                // An unattended box never gives up: the outputs stay (poster, slate) and the
                // sources are tried again under the recovery policy.
                inner.withLock {
                    $0.core = core
                    $0.state = .buffering
                    $0.supervisor = Task { [weak self] in await self?.retryStart(core: core) }
                }
                sink.send(.stateChanged(.buffering))
                return
            } catch {
                // Fail fast: the outputs stay open (the poster) for a load() of other sources
                // (a playlist's next item); stop() closes them.
                inner.withLock { $0.core = core }
                throw error
            }
            try begin(session, core: core)
        } catch {
            inner.withLock {
                $0.state = .error
                $0.error = error
            }
            sink.send(.error(error, fatal: true))
            sink.send(.stateChanged(.error))
            throw error
        }
    }

    /// Opens the outputs (the core, not started) with the mixer and the supervisor's report
    /// stream, at the volume, mute and display state set so far.
    private func openOutputs(_ options: PlayerOptions) throws(PlayerError) -> CoreHandle {
        let core: CoreHandle
        do {
            core = try CoreHandle(
                audio: options.audioOutput.spec, video: options.videoOutput.spec, fit: options.fit.rawValue,
                rotation: options.rotation, poster: options.poster,
                decoders: options.decoders.isEmpty ? nil : options.decoders.joined(separator: ","),
                decodeThreads: options.decodeThreads, videoQueueFrames: options.videoQueueFrames,
                joinStill: options.joinStill)
        } catch {
            let options = error.isUnsupported || error.isInvalidArgument || error.isRefused
            throw PlayerError(options ? .invalidOptions : .output, error.message, coreCode: error.code)
        }
        let mixer = MixDirector(core: core, options: options.mixing, fetcher: fetcher, events: sink, logger: logger)
        let (volume, muted, scheduled, fit) = inner.withLock { ($0.volume, $0.muted, $0.scheduled, $0.fit) }
        try? core.setVolume(volume, muted: muted)
        if let fit { try? core.setFit(fit.rawValue) }
        if inner.withLock({ $0.keepsLastPicture }) { try? core.keepLastPicture(true) }
        if inner.withLock({ $0.displayOff }) { try? core.setOverlay(.blank) }
        mixer.insert(scheduled)
        Task { await mixer.prepare() }
        inner.withLock {
            $0.mixer = mixer
            // Newest kept: progress readings come 10 times a second and a reload takes seconds.
            let (stream, input) = AsyncStream<SessionReport>.makeStream(bufferingPolicy: .bufferingNewest(64))
            $0.reports = (stream, input)
        }
        return core
    }

    /// Whether a source failure at start may pass with time (a network, server or content
    /// problem), rather than being a wrong option or a broken output.
    private static func mayPass(_ error: PlayerError) -> Bool {
        [.manifest, .network, .noPlayableContent, .media].contains(error.code)
    }

    /// Starts the core on `session` with its stall supervisor.
    private func begin(_ session: PlaybackSession, core: CoreHandle) throws(PlayerError) {
        try startOnce(core)
        let task = Task { await session.run() }
        let reports = inner.withLock { $0.reports?.stream } ?? AsyncStream { $0.finish() }
        let supervisor = Task { [weak self, options] in
            await Self.supervise(reports, first: options, player: { [weak self] in self })
        }
        inner.withLock {
            $0.session = session
            $0.task = task
            $0.core = core
            $0.supervisor = supervisor
            $0.state = .buffering
        }
        sink.send(.stateChanged(.buffering))
    }

    /// Starts the core's threads unless a still picture started them already.
    private func startOnce(_ core: CoreHandle) throws(PlayerError) {
        guard !inner.withLock({ $0.coreStarted }) else { return }
        do { try core.start() } catch { throw PlayerError(.output, error.message, coreCode: error.code) }
        inner.withLock { $0.coreStarted = true }
    }

    /// No source played at start: tries them again after the recovery delay
    /// (``PlayerOptions/minRecoveryDelay`` doubling up to ``PlayerOptions/maxRecoveryDelay``),
    /// for as long as the player is not stopped; ``PlayerEvent/recovering(nextDelay:)`` before
    /// each try, ``PlayerEvent/recovered`` once one plays.
    private func retryStart(core: CoreHandle) async {
        var delay = options.minRecoveryDelay
        while !Task.isCancelled {
            sink.send(.recovering(nextDelay: delay))
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            if Task.isCancelled { return }
            do throws(PlayerError) {
                let session = try await openFirstSource(core: core, startMono: Monotonic.now())
                guard !Task.isCancelled, inner.withLock({ $0.core != nil }) else { return }
                try begin(session, core: core)
                sink.send(.recovered)
                return
            } catch {
                logger.warning(
                    "no source plays yet",
                    metadata: ["error": "\(error)", "next_delay": "\(min(delay * 2, options.maxRecoveryDelay))"])
                delay = min(delay * 2, max(options.minRecoveryDelay, options.maxRecoveryDelay))
            }
        }
    }

    private func openFirstSource(
        core: CoreHandle, startMono: Double, reuse: [CoreTrackKind: Int32] = [:]
    ) async throws(PlayerError) -> PlaybackSession {
        var lastError = PlayerError(.invalidOptionsSources, "no sources")
        var options = self.options
        if let target = inner.withLock({ $0.targetLatency }) { options.targetLatency = target }
        let (mixer, reports, prepared) = inner.withLock { inner in
            defer { inner.prepared = nil }
            return (inner.mixer, inner.reports?.input, inner.prepared)
        }
        try await startVenue()
        for (index, upstream) in options.sources.enumerated() {
            let source = routed(upstream)
            // With a backup behind it, a source is tried once (the backup waits); the last one
            // gets the manifest's retries.
            var policy = FetchPolicy.manifest
            if index < options.sources.count - 1 { policy.attempts = 1 }
            if let attempts = inner.withLock({ $0.startAttempts }) { policy.attempts = min(policy.attempts, attempts) }
            do {
                return try await PlaybackSession(
                    source: source, options: options, core: core, fetcher: fetcher, startMono: startMono,
                    logger: logger, events: sink,
                    reuse: reuse, mixer: mixer, startPolicy: policy, reports: reports, prepared: prepared,
                    learnedTarget: learnedTarget(for: source))
            } catch {
                logger.warning("source failed", metadata: ["source": "\(source)", "error": "\(error)"])
                sink.send(.error(error, fatal: false))
                lastError = error
            }
        }
        throw lastError
    }

    /// Reloads: the playing session stops and the sources are tried again in order (main first,
    /// then the backups) on the same outputs, so the last picture (or the poster) stays on screen.
    /// Called by stall recovery; before ``play()`` it is ``play()``. Throws the last source's
    /// error when none plays (the outputs stay open; recovery tries again later).
    public func load() async throws(PlayerError) {
        let (old, task, core) = inner.withLock { ($0.session, $0.task, $0.core) }
        guard let core else { return try await play() }
        guard let old else {
            // The outputs are open and nothing played yet (the sources are being retried, or
            // failed fast): the first source that plays now starts them.
            inner.withLock { $0.supervisor }?.cancel()
            core.dropEvents()  // a file's or a still's
            if let staged = await takeStaged(for: options.sources) {
                do {
                    try staged.activate()  // (decoded ahead while a file or a still played)
                    inner.withLock { $0.ownTracks = [:] }
                    guard inner.withLock({ $0.core != nil }) else { return }
                    try begin(staged, core: core)
                    return
                } catch {
                    logger.warning("the source decoded ahead could not take over", metadata: ["error": "\(error)"])
                    await staged.discard()
                }
            }
            let session = try await openFirstSource(
                core: core, startMono: Monotonic.now(), reuse: inner.withLock { $0.ownTracks })
            guard inner.withLock({ $0.core != nil }) else { return }  // stop() ran meanwhile
            try begin(session, core: core)
            return
        }
        task?.cancel()
        await task?.value
        inner.withLock { $0.task = nil }
        learn(from: old)
        if let staged = await takeStaged(for: options.sources) {
            // Decoded ahead: it replaces the playing source's tracks on its next picture.
            do {
                try staged.activate()
                let next = Task { await staged.run() }
                let stopped = inner.withLock { inner -> Bool in
                    guard inner.core != nil else { return true }
                    inner.session = staged
                    inner.task = next
                    inner.ownTracks = [:]  // (removed by the activation)
                    return false
                }
                if stopped { next.cancel() }
                return
            } catch {
                logger.warning("the source decoded ahead could not take over", metadata: ["error": "\(error)"])
                await staged.discard()
            }
        }
        var reuse = Dictionary(old.plans.flatMap(\.coreTracksByKind), uniquingKeysWith: { first, _ in first })
        reuse.merge(inner.withLock { $0.ownTracks }) { session, _ in session }
        core.dropEvents()  // the old source's (a file's end would end the new one)
        let session: PlaybackSession
        do {
            session = try await openFirstSource(core: core, startMono: Monotonic.now(), reuse: reuse)
        } catch {
            inner.withLock { $0.reports?.input }?.yield(.noSession)  // the supervisor reloads on its clock
            throw error
        }
        let next = Task { await session.run() }
        let stopped = inner.withLock { inner -> Bool in
            guard inner.core != nil else { return true }  // stop() ran meanwhile
            inner.session = session
            inner.task = next
            return false
        }
        if stopped { next.cancel() }
    }

    /// Plays `sources` instead of the playing source (the first that plays; the others are its
    /// backups), on the same outputs: the last picture stays until the new source's first, and
    /// stall recovery watches the new source (after an on-demand source ended, too). Before
    /// ``play()`` it sets the sources and plays. Throws
    /// ``PlayerError/Code-swift.struct/invalidOptionsSources`` for an empty list (nothing
    /// changes then), else what ``load()`` throws.
    public func load(sources: [URL]) async throws(PlayerError) {
        var options = self.options
        options.sources = sources
        try updateOptions(options)
        try await load()
    }

    /// Stops presenting the playing source, file or still now (a playlist item's end): its
    /// feeders stop and what its tracks hold is dropped; the last picture stays on screen, the
    /// sound stops.
    func cut() async {
        let (session, task, core, own) = inner.withLock { ($0.session, $0.task, $0.core, $0.ownTracks) }
        task?.cancel()
        await task?.value
        learn(from: session)
        let tracks = Set((session?.plans.flatMap(\.coreTracks) ?? []) + own.values)
        for track in tracks { try? core?.resetTrack(track) }
    }

    /// Plays `file` (the bytes of any file libavformat reads: a PNG or JPEG, an MP4, …) in place
    /// of the source, until the next load (a playlist's image or file item): the source stops
    /// as with ``cut()``, the tracks read the file whole (`MQ_CONTAINER_PROBED`), and its first
    /// picture is shown as soon as it is decoded (the timeline is held until then, then
    /// anchored on that picture's time: no fixed start lead). A `still` (an image) is one
    /// picture held, without sound (its audio track is not fed: no buffering band, no end).
    /// Opens the outputs when nothing played yet. `label` names it in `frames:`. Its end and
    /// later errors are the core's events (``fileEvent()``): no session follows it. Throws
    /// ``PlayerError/Code-swift.struct/media`` when nothing of it decodes.
    /// Returns when (monotonic seconds) its first picture is due.
    @discardableResult
    /// `from`: seconds into the file its presentation starts at (what comes before is decoded,
    /// not shown).
    func playFile(_ file: [UInt8], label: String?, still: Bool, from offset: Double = 0) async throws(PlayerError)
        -> Double
    {
        await discardStaged()
        await cut()
        var core = inner.withLock { $0.core }
        let fresh = core == nil
        if fresh { core = try openOutputs(options) }
        guard let core else { return Monotonic.now() }
        // Before any source measured the server clock: the local one (frames:' wall times).
        if fresh { try? core.setWallOffset(ServerClock.local().offset) }
        core.dropEvents()  // the cut source's
        let kinds: [CoreTrackKind] = still ? [.video] : [.video, .audio]
        var tracks: [Int32] = []
        do throws(CoreError) {
            for kind in kinds {
                let known = inner.withLock { inner in
                    inner.session?.plans.flatMap(\.coreTracksByKind).first { $0.0 == kind }?.1 ?? inner.ownTracks[kind]
                }
                let track: Int32
                if let known { track = known } else { track = try core.addTrack(kind, ptsOffset: 0) }
                inner.withLock {
                    $0.core = core
                    if known == nil { $0.ownTracks[kind] = track }
                }
                try core.resetTrack(track)
                try core.setTrackContainerProbed(track)
                try core.setTrackOffset(track, ptsOffset: 0)
                tracks.append(track)
            }
            try core.setLabel(label)
            // Held (nothing due, nothing late) until its first picture or sound is decoded.
            try core.setTimeline(monoAnchor: Monotonic.now() + Self.fileHold, mediaAnchor: 0)
            for track in tracks {
                let pushed = file.withUnsafeBytes { bytes -> CoreError? in
                    do throws(CoreError) { try core.push(track: track, bytes: bytes) } catch { return error }
                    return nil
                }
                if let pushed { throw pushed }
                try core.endTrack(track)
            }
        } catch {
            throw PlayerError(.output, error.message, coreCode: error.code)
        }
        try startOnce(core)
        // (video first)
        return try await anchorOnFirstFrame(core, video: tracks.first, offset: still ? 0 : max(0, offset))
    }

    /// How far ahead a file's timeline is held while its first frame decodes, seconds.
    static let fileHold = 3600.0

    /// Anchors the timeline on the first decoded frame of a file (its video's, or its sound's
    /// when it has no picture): that time plus `offset` is due 5 ms from then (what comes before
    /// is decoded and dropped as late). Waits at most 2 s (then from 0). Returns when it is due.
    private func anchorOnFirstFrame(_ core: CoreHandle, video: Int32?, offset: Double) async throws(PlayerError)
        -> Double
    {
        var first: Double?
        var videoDone = video == nil
        let deadline = Monotonic.now() + 2
        while !videoDone, Monotonic.now() < deadline, !Task.isCancelled {
            while let event = core.pollEvent() {
                switch event.kind {
                case .trackFormat:
                    if let t = event.mediaTime, t.isFinite { first = min(first ?? t, t) }
                    if event.track == video { videoDone = true }
                case .error where event.error?.isMissingStream == true:
                    // a sound file: no picture; a file without sound: its pictures
                    if event.track == video { videoDone = true }
                case .error where event.track == video && first != nil:
                    videoDone = true  // a sound file: no picture
                case .error:
                    if event.track == video { continue }  // (its sound may still come)
                    throw PlayerError(.media, event.message)
                case .ended:
                    throw PlayerError(.media, "nothing in the file decodes")
                default:
                    continue
                }
            }
            if !videoDone { try? await Task.sleep(for: .milliseconds(2)) }
        }
        do {
            let due = Monotonic.now() + 0.005
            try core.setTimeline(monoAnchor: due, mediaAnchor: (first ?? 0) + offset)
            return due
        } catch {
            throw PlayerError(.output, error.message, coreCode: error.code)
        }
    }

    /// The next core event while a file plays (``playFile(_:label:still:)``): its end, a
    /// decode error.
    func fileEvent() -> CoreEvent? { inner.withLock { $0.core }?.pollEvent() }

    /// Names what is presented from now on: the `frames:` output's `item` column (a playlist
    /// item's id; nil: none).
    func setLabel(_ label: String?) {
        try? inner.withLock { $0.core }?.setLabel(label)
    }

    /// Waits until playback ends (on-demand end, fatal error) or the calling task is cancelled.
    public func waitUntilFinished() async {
        guard let task = inner.withLock({ $0.task }) else { return }
        // Awaiting the session's task cannot be interrupted; a stream ended by either the
        // session or the caller's cancellation can.
        let (done, finish) = AsyncStream<Never>.makeStream()
        let waiter = Task {
            await task.value
            finish.finish()
        }
        await withTaskCancellationHandler {
            for await _ in done {}
        } onCancel: {
            finish.finish()
        }
        waiter.cancel()
    }

    /// Changes the latency target (seconds behind live, 0 < seconds ≤ 300) while playing: the
    /// controller steers to it by rate, or jumps when it is more than
    /// ``SyncOptions/jumpThreshold`` away. When the stream's segments arrive too late for it,
    /// the target in use stays raised (``PlayerEvent/targetLatencyChanged(seconds:requested:)``).
    /// Before ``play()`` it replaces the options' target.
    /// Throws ``PlayerError/Code-swift.struct/invalidOptions`` for a value out of range.
    public func setTargetLatency(_ seconds: Double) throws(PlayerError) {
        guard seconds.isFinite, seconds > 0, seconds <= 300 else {
            throw PlayerError(.invalidOptions, "targetLatency \(seconds) s is outside 0…300")
        }
        let session = inner.withLock { inner -> PlaybackSession? in
            inner.targetLatency = seconds
            return inner.session
        }
        session?.setTargetLatency(seconds)
    }

    /// Applies a refreshed remote config to this player: what can change while playing does now
    /// (the latency target); the rest (sources, fit, poster, muted) takes effect at the next
    /// load. Reported as ``PlayerEvent/configApplied(targetLatency:)``.
    public func apply(_ config: MarqueeConfig) throws(PlayerError) {
        if let target = config.advanced?.sync?.targetLatency, target > 0 {
            try setTargetLatency(target)
        }
        sink.send(.configApplied(targetLatency: config.advanced?.sync?.targetLatency))
    }

    // MARK: properties

    /// The source playing: the first of ``PlayerOptions/sources`` that played, or a backup;
    /// nil before one loaded.
    public var source: URL? {
        inner.withLock { $0.session?.source }.map { local in venue?.upstreamURL(for: local) ?? local }
    }

    /// What the player plays when it plays through a venue proxy (``PlayerOptions/venue``):
    /// the proxy's URL of the playing source, which any other player on this box may play too.
    /// Nil without a venue or before a source plays.
    public var localManifestUrl: URL? {
        guard venue != nil else { return nil }
        return inner.withLock { $0.session?.source }
    }

    /// The venue proxy's figures (bytes from the CDN and from peers, peers, fallbacks, bans);
    /// nil without a venue.
    public var venueStatistics: VenueStatistics? { venue?.statistics }

    /// `url` as the player fetches it: through the venue proxy when there is one and it serves
    /// `url`'s host.
    func routed(_ url: URL) -> URL {
        guard let venue, venue.port != nil else { return url }
        venue.addUpstream(url)
        return (try? venue.localURL(for: url)) ?? url
    }

    /// Starts the venue proxy if there is one and it is not running.
    func startVenue() async throws(PlayerError) {
        guard let venue, venue.port == nil else { return }
        do { _ = try await venue.start() } catch {
            throw PlayerError(.network, "venue proxy: \(error)")
        }
    }
    /// Live or on demand, by the manifest (unknown before one loaded).
    public var streamType: StreamType {
        guard let mpd = inner.withLock({ $0.session?.mpd }) else { return .unknown }
        return mpd.isLive ? .live : .onDemand
    }
    /// On demand: the presentation's length, seconds; nil for live or before a manifest loaded.
    public var duration: Double? {
        inner.withLock { $0.session?.mpd }.flatMap { $0.isLive ? nil : $0.mediaPresentationDuration }
    }
    /// The renditions playing now (one per track: video and audio).
    public var activeQualities: [Quality] {
        guard let session = inner.withLock({ $0.session }) else { return [] }
        return session.feeders.map { feeder in
            let id = feeder.active.withLock { $0 }
            return Quality(feeder.plan.renditions.first { $0.id == id } ?? feeder.plan.representation)
        }
    }

    /// The video rendition to play (a representation id of ``qualities``), or nil to let ABR
    /// choose by throughput (the default). Takes effect from the next segment; an id that is not
    /// a video rendition of the stream (or one above the board's caps) is refused with
    /// ``PlayerError/Code/invalidOptions`` and changes nothing.
    public var selectedQuality: String? {
        inner.withLock { $0.options.selectedQuality }
    }

    /// Pins the video rendition (`id`) or returns to automatic choice (nil); see ``selectedQuality``.
    public func selectQuality(_ id: String?) throws(PlayerError) {
        let session = inner.withLock { $0.session }
        if let id {
            let known =
                session?.feeders.contains { feeder in
                    feeder.abr?.withLock { $0.renditions.contains { $0.id == id } }
                        ?? (feeder.plan.kind == .video && feeder.plan.representation.id == id)
                } ?? false
            guard known else {
                throw PlayerError(.invalidOptions, "\"\(id)\" is not a video rendition of the stream playing")
            }
        }
        inner.withLock { $0.options.selectedQuality = id }
        for feeder in session?.feeders ?? [] { feeder.abr?.withLock { $0.pinned = id } }
    }
    /// Every rendition of the playing period's tracks.
    public var qualities: [Quality] {
        guard let session = inner.withLock({ $0.session }) else { return [] }
        let period = session.mpd.periods[session.plans.first?.periodIndex ?? 0]
        return period.adaptationSets.flatMap { $0.representations.map(Quality.init) }
    }

    // MARK: time shift

    /// Plays a live stream `seconds` later than the latency target (0 = at the target), e.g. to
    /// line the sound up with a TV picture. Limited to what the segment store holds
    /// (``PlaybackStatus/availableDelay``, growing from `play()` up to
    /// ``PlayerOptions/maxDelay``) or, further back, what the server's window still serves
    /// (DVR, see ``seekableRange``); returns the delay applied. Events in the stream replay
    /// delayed with it; moving the delay across one applies it (toward live) or undoes it (back).
    /// Throws ``PlayerError/Code-swift.struct/invalidOptions`` for a negative or non-finite
    /// value, ``PlayerError/Code-swift.struct/state`` when nothing plays.
    @discardableResult
    public func setDelay(_ seconds: Double) throws(PlayerError) -> Double {
        guard seconds.isFinite, seconds >= 0 else {
            throw PlayerError(.invalidOptions, "delay \(seconds) s must be finite and ≥ 0")
        }
        guard let session = inner.withLock({ $0.session }) else {
            throw PlayerError(.state, "setDelay: nothing is playing")
        }
        let applied = session.setDelay(seconds)
        sink.send(.delayChanged(seconds: applied))
        return applied
    }

    // MARK: DVR

    /// What can be presented now, presentation times (seconds): live, from the oldest media the
    /// delay store or the server's window (`timeShiftBufferDepth`, the HLS playlist) still holds
    /// to the latency target; on demand, the whole presentation. nil before a source loaded.
    public var seekableRange: ClosedRange<Double>? { inner.withLock { $0.session }?.seekableRange }

    /// Whether the live stream can be rewound meaningfully: its window (or the delay store)
    /// reaches back at least 30 s, or its URL carries the `DVR` flag (`?DVR`).
    public var isDVR: Bool {
        guard let session = inner.withLock({ $0.session }), session.mpd.isLive else { return false }
        if session.source.query?.split(separator: "&").contains(where: {
            $0.uppercased() == "DVR" || $0.uppercased().hasPrefix("DVR=")
        }) == true {
            return true
        }
        return (session.seekableRange.map { $0.upperBound - $0.lowerBound } ?? 0) >= 30 || session.windowDelay >= 30
    }

    /// Moves presentation to `time` (a presentation time within ``seekableRange``; the SDK's
    /// settable `currentTime`). Live it becomes the user delay (so the stream keeps being
    /// followed from there); a time outside the window is clamped to it and reported by
    /// ``PlayerEvent/seekClamped(requested:to:)``. Throws ``PlayerError/Code-swift.struct/state``
    /// when nothing plays, ``PlayerError/Code-swift.struct/invalidOptions`` for a non-finite time.
    public func seek(to time: Double) throws(PlayerError) {
        guard time.isFinite else { throw PlayerError(.invalidOptions, "seek: \(time) is not a time") }
        guard let session = inner.withLock({ $0.session }), let range = session.seekableRange else {
            throw PlayerError(.state, "seek: nothing is playing")
        }
        let target = min(max(time, range.lowerBound), range.upperBound)
        if abs(target - time) > 0.001 { sink.send(.seekClamped(requested: time, to: target)) }
        if let live = session.livePosition {
            let applied = session.setDelay(live - target)
            sink.send(.delayChanged(seconds: applied))
        } else {
            session.seekOnDemand(to: target)
        }
        sink.send(.seeked(to: target))
    }

    /// Returns a live stream to the latency target (the user delay to 0).
    public func goLive() throws(PlayerError) {
        try setDelay(0)
    }

    /// Pauses: presentation stops (the picture stays, the sound goes silent). A live stream keeps
    /// being collected, so ``resume()`` continues from the paused point as long as the segment
    /// store reaches back that far (then from the oldest point kept). Throws
    /// ``PlayerError/Code-swift.struct/state`` when nothing plays.
    public func pause() throws(PlayerError) {
        guard let session = inner.withLock({ $0.session }) else {
            throw PlayerError(.state, "pause: nothing is playing")
        }
        guard !session.isPaused else { return }
        session.pausePresentation()
    }

    /// Resumes after ``pause()`` or ``suspend()`` (a no-op otherwise).
    public func resume() {
        let (session, suspended) = inner.withLock { inner in
            defer { inner.suspended = false }
            return (inner.session, inner.suspended)
        }
        if suspended { displayOn() }
        guard let session, session.isPaused else { return }
        session.resumePresentation()
        sink.send(.delayChanged(seconds: session.shift.delay))
    }

    /// Device power state "standby": pauses (a live stream keeps being collected, as with
    /// ``pause()``) and turns the picture off; ``resume()`` undoes both.
    public func suspend() throws(PlayerError) {
        try pause()
        inner.withLock { $0.suspended = true }
        displayOff()
    }

    /// Turns the picture off (black; on DRM the buffers stay, so turning it on is immediate)
    /// while the sound plays on. Pictures keep being decoded on the clock, unseen.
    public func displayOff() {
        let core = inner.withLock { inner -> CoreHandle? in
            inner.displayOff = true
            return inner.core
        }
        try? core?.setOverlay(.blank)
    }

    /// Shows pictures again after ``displayOff()``.
    public func displayOn() {
        let core = inner.withLock { inner -> CoreHandle? in
            inner.displayOff = false
            return inner.core
        }
        try? core?.setOverlay(.none)
    }

    /// Whether ``displayOff()`` is in effect.
    public var isDisplayOff: Bool { inner.withLock { $0.displayOff } }

    // MARK: audio

    /// Keeps (true) the picture presented last for ``snapshot(maxWidth:)`` from now on: a
    /// reference to the decoder's buffer until the next picture replaces it, no copy (one more
    /// buffer in the decoder's pool: about 1.4 MB at 720p). Off by default; the control socket
    /// turns it on.
    public func keepLastPicture(_ keep: Bool) {
        let core = inner.withLock { inner in
            inner.keepsLastPicture = keep
            return inner.core
        }
        try? core?.keepLastPicture(keep)
    }

    /// A screenshot: the picture presented last (what the display shows, before fit, rotation
    /// and overlays), as a PNG, scaled down to `maxWidth` when it is wider. Converted and
    /// encoded on the calling thread: tens of milliseconds at 720p, so not on a cooperative
    /// one. Throws ``PlayerError/Code-swift.struct/state`` unless ``keepLastPicture(_:)`` is on
    /// and a picture was presented since (a reload or a playlist's next item starts afresh).
    public func snapshot(maxWidth: Int? = nil) throws(PlayerError) -> Snapshot {
        if let maxWidth, maxWidth < 2 { throw PlayerError(.invalidArgument, "maxWidth \(maxWidth) is under 2") }
        let (core, keeps) = inner.withLock { ($0.core, $0.keepsLastPicture) }
        guard keeps else { throw PlayerError(.state, "screenshots need keepLastPicture(true)") }
        guard let core else { throw PlayerError(.state, "no picture presented yet") }
        do {
            let shot = try core.snapshotPNG(maxWidth: maxWidth ?? 0)
            return Snapshot(png: shot.png, width: shot.width, height: shot.height, mediaTime: shot.mediaTime)
        } catch {
            if error.isMissingStream { throw PlayerError(.state, "no picture presented yet", coreCode: error.code) }
            throw PlayerError(.output, "screenshot: \(error.message)", coreCode: error.code)
        }
    }

    /// A picture as ``Player/snapshot(maxWidth:)`` took it.
    public struct Snapshot: Sendable {
        /// The PNG file's bytes (RGB, 8 bits per channel).
        public var png: [UInt8]
        /// Its size in pixels.
        public var width: Int, height: Int
        /// The picture's presentation time in the stream (its own pts, as `frames.tsv` has it).
        public var mediaTime: Double
    }

    /// How pictures fit the display: ``PlayerOptions/fit`` until ``setFit(_:)``.
    public var fit: VideoFit { inner.withLock { $0.fit ?? $0.options.fit } }

    /// Fits pictures to the display in `fit` from now on (a playlist item's own); the picture
    /// on screen is drawn again in it at once. Applies while playing, else at ``play()``.
    public func setFit(_ fit: VideoFit) {
        let core = inner.withLock { inner in
            inner.fit = fit
            return inner.core
        }
        try? core?.setFit(fit.rawValue)
    }

    /// Output volume, 0…1 (linear gain); changes ramp over 10 ms. Default 1.
    public var volume: Double { inner.withLock { $0.volume } }
    /// Whether the output is muted (``PlayerOptions/muted`` initially).
    public var isMuted: Bool { inner.withLock { $0.muted } }

    /// Sets the output volume (0…1) and/or mute; applies at once while playing, else at ``play()``.
    /// Throws ``PlayerError/Code-swift.struct/invalidOptions`` for a volume outside 0…1.
    public func setVolume(_ volume: Double? = nil, muted: Bool? = nil) throws(PlayerError) {
        if let volume, !(volume >= 0 && volume <= 1) {
            throw PlayerError(.invalidOptions, "volume \(volume) is outside 0…1")
        }
        let (core, v, m, changed) = inner.withLock { inner in
            let before = (inner.volume, inner.muted)
            if let volume { inner.volume = volume }
            if let muted { inner.muted = muted }
            return (inner.core, inner.volume, inner.muted, before != (inner.volume, inner.muted))
        }
        try? core?.setVolume(v, muted: m)
        if changed { sink.send(.volumeChanged(volume: v, muted: m)) }
    }

    /// Places an event on the presentation timeline, as if the stream had carried it: a
    /// broadcaster mute, an ad break (with its creative), an unmute. What it does follows the
    /// presented time (a user delay replays it late; a jump over it applies or undoes it).
    /// Throws ``PlayerError/Code-swift.struct/invalidOptions`` for a time or duration that is
    /// not finite and ≥ 0.
    public func schedule(_ kind: StreamEvent, at time: Double, duration: Double? = nil, id: String? = nil)
        throws(PlayerError)
    {
        guard time.isFinite, time >= 0, duration.map({ $0.isFinite && $0 > 0 }) ?? true else {
            throw PlayerError(
                .invalidOptions,
                "schedule: time \(time) / duration \(duration.map { "\($0)" } ?? "nil") must be finite, ≥ 0 (> 0)")
        }
        let event = TimedEvent(time: time, duration: duration, kind: kind.timed, id: id, origin: .api)
        let mixer = inner.withLock { inner -> MixDirector? in
            if inner.mixer == nil { inner.scheduled.append(event) }
            return inner.mixer
        }
        mixer?.insert([event])
    }

    /// Changes the options. What can change while playing does at once: the latency target,
    /// mute, the recovery delays and the main-source retry interval; the sources take effect at
    /// the next (re)load; outputs, fit, rotation, poster, decoders, headers, mixing and the
    /// delay store at the next ``play()`` after ``stop()``. Throws what ``init(options:logger:)``
    /// throws for invalid options (nothing changes then).
    public func updateOptions(_ new: PlayerOptions) throws(PlayerError) {
        let validated = try new.validated()
        let old = inner.withLock { inner in
            defer { inner.options = validated }
            return inner.options
        }
        if validated.targetLatency != old.targetLatency, validated.targetLatency > 0 {
            try setTargetLatency(validated.targetLatency)
        }
        if validated.muted != old.muted { try setVolume(muted: validated.muted) }
    }

    /// Stops and releases everything for good: the event sequence finishes, and ``play()``
    /// throws ``PlayerError/Code-swift.struct/state`` afterwards.
    public func close() async {
        await stop()
        inner.withLock { $0.disposed = true }
        sink.finish()
    }

    /// Stops playback and closes the outputs (the WAV file and frames.tsv are complete after it);
    /// with `fadeOut` > 0 (seconds, up to 10) the sound first fades to silence over that long.
    public func stop(fadeOut: Double) async {
        if fadeOut > 0, let core = inner.withLock({ $0.core }) {
            let seconds = min(fadeOut, 10)
            for input in CoreHandle.MixInput.allCases {
                try? core.setGain(input, 0, ramp: seconds, shape: .equalPower, at: nil)
            }
            try? await Task.sleep(for: .milliseconds(Int(seconds * 1000) + 30))
        }
        await stop()
    }

    /// Stops playback and closes the outputs (the WAV file and frames.tsv are complete after it).
    public func stop() async {
        await discardStaged()
        await venue?.stop()
        let (task, core, supervisor) = inner.withLock {
            inner -> (Task<Void, Never>?, CoreHandle?, Task<Void, Never>?) in
            defer {
                inner.task = nil
                inner.session = nil
                inner.core = nil
                inner.supervisor = nil
                inner.reports?.input.finish()
                inner.reports = nil
                inner.mixer = nil
                inner.coreStarted = false
                inner.ownTracks = [:]
                if inner.state != .error { inner.state = .idle }
            }
            return (inner.task, inner.session?.core ?? inner.core, inner.supervisor)
        }
        // The teardown runs code that never ran while playing: with trimming on, what playing
        // kept resident goes first, so the process's peak stays the one it had while playing.
        if core != nil, options.memoryTrimInterval != nil { MemoryUsage.trim(at: "stop", logger: logger) }
        supervisor?.cancel()
        task?.cancel()
        await task?.value
        await core?.close()  // (no session yet while the sources are being retried)
        // Once: a second stop (or close() after stop()) has nothing to stop and says nothing.
        if core != nil || task != nil { sink.send(.stateChanged(.idle)) }
    }
}

// MARK: - JavaScript SDK compatibility

/// The names and units of Marquee's JavaScript SDK, for firmware ported from it. Each is a
/// spelling of a Swift member named in its comment; unlike the rest of the API (seconds as
/// `Double` everywhere), ``latency``, ``buffer`` and ``timeOffset`` are milliseconds, as there.
extension Player {
    /// ``source``.
    public var currentSrc: URL? { source }
    /// ``state``.
    public var playbackState: PlaybackState { state }
    /// ``PlaybackStatus/position`` of ``status``, seconds.
    public var currentTime: Double? { status.position }
    /// ``PlaybackStatus/latency`` of ``status``, in milliseconds.
    public var latency: Double? { status.latency.map { $0 * 1000 } }
    /// ``PlaybackStatus/buffer`` of ``status``, in milliseconds.
    public var buffer: Double { status.buffer * 1000 }
    /// ``PlaybackStatus/timeOffset`` of ``status``, in milliseconds.
    public var timeOffset: Double { status.timeOffset * 1000 }
    /// ``PlaybackStatus/playbackRate`` of ``status``.
    public var playbackRate: Double { status.playbackRate }
    /// ``isMuted``.
    public var muted: Bool { isMuted }
    /// ``close()``.
    public func dispose() async { await close() }
}
