import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// Playing and stopping: the outputs opened, the first source that plays, the stall supervisor,
/// the sources tried again while none plays, and the teardown.
extension Player {
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
    func openOutputs(_ options: PlayerOptions) throws(PlayerError) -> CoreHandle {
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
        applyCaptions(to: core)
        if inner.withLock({ $0.keepsLastPicture }) { try? core.keepLastPicture(true) }
        if inner.withLock({ $0.displayOff }) { try? core.setOverlay(.blank) }
        mixer.insert(scheduled)
        Task { await mixer.prepare() }
        let pump = pumpEvents(core)
        inner.withLock {
            $0.mixer = mixer
            $0.pump = pump
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
    func begin(_ session: PlaybackSession, core: CoreHandle) throws(PlayerError) {
        present(session, dropping: false, core: core)
        inner.withLock { $0.file = nil }
        try startOnce(core)
        // The session and the core are the player's before its tasks start: the supervisor's
        // first step (on the session's first report) acts on them, and one that came first found
        // none and ended for good (a box left without recovery, its restarts not followed, its
        // CMCD keys never past start-up: seen on a loaded CI box).
        inner.withLock {
            $0.session = session
            $0.core = core
            $0.state = .buffering
        }
        let task = Task { await session.run() }
        let reports = inner.withLock { $0.reports?.stream } ?? AsyncStream { $0.finish() }
        let supervisor = Task { [weak self, options] in
            await Self.supervise(reports, first: options, player: { [weak self] in self })
        }
        let stopped = inner.withLock { inner -> Bool in
            guard inner.core === core else { return true }  // stop() ran meanwhile
            inner.task = task
            inner.supervisor = supervisor
            return false
        }
        if stopped {
            task.cancel()
            supervisor.cancel()
        }
        sink.send(.stateChanged(.buffering))
    }

    /// Starts the core's threads unless a still picture started them already.
    func startOnce(_ core: CoreHandle) throws(PlayerError) {
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

    func openFirstSource(
        core: CoreHandle, startMono: Double, reuse: [CoreTrackKind: Int32] = [:]
    ) async throws(PlayerError) -> PlaybackSession {
        var lastError = PlayerError(.invalidOptionsSources, "no sources")
        var options = self.options
        if let target = inner.withLock({ $0.targetLatency }) { options.targetLatency = target }
        let (mixer, reports, prepared) = inner.withLock { inner in
            defer { inner.prepared = nil }
            return (inner.mixer, inner.reports?.input, inner.prepared)
        }
        try await startRouter()
        for (index, upstream) in options.sources.enumerated() {
            let source = routed(upstream)
            // With a backup behind it, a source is tried once (the backup waits); the last one
            // gets the manifest's retries.
            var policy = FetchPolicy.manifest
            if index < options.sources.count - 1 { policy.attempts = 1 }
            if let attempts = inner.withLock({ $0.startAttempts }) { policy.attempts = min(policy.attempts, attempts) }
            do {
                return try await PlaybackSession(
                    source: source, options: options, core: core, fetcher: fetcher, clocks: clocks,
                    startMono: startMono,
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
        await router?.stopRouting()
        let (task, core, supervisor, pump) = inner.withLock {
            inner -> (Task<Void, Never>?, CoreHandle?, Task<Void, Never>?, Task<Void, Never>?) in
            defer {
                inner.pump = nil
                inner.file = nil
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
            return (inner.task, inner.session?.core ?? inner.core, inner.supervisor, inner.pump)
        }
        pump?.cancel()
        present(nil, dropping: false, core: nil)
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
