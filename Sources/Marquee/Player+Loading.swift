public import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// Sources after the first: reloads, a switch to other sources, the next source made ready
/// (decoded ahead) and the latency targets learned from earlier sessions.
extension Player {
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
    /// loaded ahead, not decoded (its entry depends on when it starts). `cut`: `startAt` is an
    /// instant the source must take over on (a schedule's switch): the core is armed to switch
    /// to it then by itself (``ArmedActivation``), under the `frames:` label `label`, whatever
    /// the cooperative pool is doing; the load that follows finds it done.
    package func prepare(
        _ upstream: URL, targetLatency: Double?, startAt: Double?, cut: Bool = false, label: String? = nil
    ) async throws(PlayerError) {
        try await startRouter()
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
            source, options: options, fetcher: fetcher, clocks: clocks, logger: logger, policy: policy)
        if let core, stage, startAt != nil || !prepared.mpd.isLive {
            do throws(PlayerError) {
                let session = try await PlaybackSession(
                    source: source, options: options, core: core, fetcher: fetcher, clocks: clocks,
                    startMono: Monotonic.now(),
                    logger: logger, events: sink,
                    mixer: mixer, startPolicy: policy, reports: reports, prepared: prepared,
                    stagedAt: startAt ?? Monotonic.now(),
                    learnedTarget: learnedTarget(for: source))
                session.startFeeding()
                if cut, let startAt { session.arm(at: startAt, label: label) }
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

    /// The switch the source decoded ahead was armed for (``prepare(_:targetLatency:startAt:cut:label:)``)
    /// is not taken after all (a schedule replaced): the core does not switch by itself; the
    /// source stays ready for a load.
    package func disarmCut() {
        let (staged, file) = inner.withLock { ($0.staged, $0.stagedFile) }
        staged?.disarm()
        file?.armed.cancel()
    }

    /// Drops the session or the file decoding ahead, if any (it was not loaded next).
    func discardStaged() async {
        let (staged, file) = inner.withLock { inner in
            defer { (inner.staged, inner.stagedFile) = (nil, nil) }
            return (inner.staged, inner.stagedFile)
        }
        await staged?.discard()
        if let file, let core = inner.withLock({ $0.core }) { file.discard(core) }
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
            present(nil, dropping: true, core: core)  // (a file's or a still's events)
            if let staged = await takeStaged(for: options.sources) {
                do {
                    present(staged, dropping: false, core: core)
                    try staged.activate()  // (decoded ahead while a file or a still played)
                    inner.withLock { $0.ownTracks = [:] }
                    guard inner.withLock({ $0.core != nil }) else { return }
                    try begin(staged, core: core)
                    return
                } catch {
                    logger.warning("the source decoded ahead could not take over", metadata: ["error": "\(error)"])
                    present(nil, dropping: false, core: core)
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
                present(staged, dropping: false, core: core)
                try staged.activate()
                let next = Task { await staged.run() }
                let stopped = inner.withLock { inner -> Bool in
                    guard inner.core != nil else { return true }
                    inner.session = staged
                    inner.task = next
                    inner.file = nil
                    inner.ownTracks = [:]  // (removed by the activation)
                    return false
                }
                if stopped { next.cancel() }
                return
            } catch {
                logger.warning("the source decoded ahead could not take over", metadata: ["error": "\(error)"])
                present(nil, dropping: false, core: core)
                await staged.discard()
            }
        }
        var reuse = Dictionary(old.plans.flatMap(\.coreTracksByKind), uniquingKeysWith: { first, _ in first })
        reuse.merge(inner.withLock { $0.ownTracks }) { session, _ in session }
        present(nil, dropping: true, core: core)  // the old source's (a file's end would end the new one)
        let session: PlaybackSession
        do {
            session = try await openFirstSource(core: core, startMono: Monotonic.now(), reuse: reuse)
            present(session, dropping: false, core: core)
        } catch {
            inner.withLock { $0.reports?.input }?.yield(.noSession)  // the supervisor reloads on its clock
            throw error
        }
        let next = Task { await session.run() }
        let stopped = inner.withLock { inner -> Bool in
            guard inner.core != nil else { return true }  // stop() ran meanwhile
            inner.session = session
            inner.task = next
            inner.file = nil
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
    package func cut() async {
        let (session, task, core, own) = inner.withLock { ($0.session, $0.task, $0.core, $0.ownTracks) }
        task?.cancel()
        await task?.value
        present(nil, dropping: false, core: core)  // (what the cut source's tracks still report)
        learn(from: session)
        let tracks = Set((session?.plans.flatMap(\.coreTracks) ?? []) + own.values)
        for track in tracks { try? core?.resetTrack(track) }
    }
}

extension Player {
    /// Tries the last source's manifest at most `attempts` times at a start (nil: the manifest
    /// policy's): a playlist's item that does not answer is skipped soon, its picture held.
    package func limitStartAttempts(_ attempts: Int?) {
        inner.withLock { $0.startAttempts = attempts }
    }
}
