import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming
import Synchronization

/// Plays one live (or on-demand) DASH stream from a list of sources.
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
    public let options: PlayerOptions
    /// Every change, in order (bounded; see ``PlayerEvents``).
    public let events: PlayerEvents
    private let sink: PlayerEvents.Sink
    private let logger: Logger
    private let fetcher: HTTPFetcher
    private let inner = Mutex(Inner())

    private struct Inner {
        var session: PlaybackSession?
        var task: Task<Void, Never>?
        var state: PlaybackState = .idle
        var error: PlayerError?
        var targetLatency: Double?
    }

    /// Validates `options`; throws ``PlayerError/Code-swift.struct/invalidOptions`` or
    /// ``PlayerError/Code-swift.struct/invalidOptionsSources`` when they cannot be used.
    public init(options: PlayerOptions, logger: Logger = Logger(label: "marquee.player")) throws(PlayerError) {
        self.options = try options.validated()
        self.logger = logger
        (events, sink) = PlayerEvents.make()
        fetcher = HTTPFetcher(headers: options.httpHeaders.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    deinit {
        inner.withLock { $0.task?.cancel() }
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
        let (session, state) = inner.withLock { ($0.session, $0.state) }
        return session?.status() ?? PlaybackStatus(state: state)
    }

    /// Opens the outputs, loads the first source that plays and starts playback. Returns once
    /// media is being fetched; the first frame is reported by ``PlayerEvent/firstFrame(seconds:)``.
    public func play() async throws(PlayerError) {
        let already = inner.withLock { inner -> Bool in
            if inner.session != nil || inner.state == .loading { return true }
            inner.state = .loading
            return false
        }
        if already { return }
        sink.send(.stateChanged(.loading))
        let startMono = Monotonic.now()
        do throws(PlayerError) {
            let core: CoreHandle
            do {
                core = try CoreHandle(
                    audio: options.audioOutput.spec, video: options.videoOutput.spec, fit: options.fit.rawValue,
                    rotation: options.rotation, poster: options.poster,
                    decoders: options.decoders.isEmpty ? nil : options.decoders.joined(separator: ","))
            } catch {
                throw PlayerError(error.isUnsupported || error.isInvalidArgument ? .invalidOptions : .output, error.message, coreCode: error.code)
            }
            let session = try await openFirstSource(core: core, startMono: startMono)
            do { try core.start() } catch { throw PlayerError(.output, error.message, coreCode: error.code) }
            let task = Task { await session.run() }
            inner.withLock {
                $0.session = session
                $0.task = task
                $0.state = .buffering
            }
            sink.send(.stateChanged(.buffering))
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

    private func openFirstSource(core: CoreHandle, startMono: Double) async throws(PlayerError) -> PlaybackSession {
        var lastError = PlayerError(.invalidOptionsSources, "no sources")
        var options = self.options
        if let target = inner.withLock({ $0.targetLatency }) { options.targetLatency = target }
        for source in options.sources {
            do {
                return try await PlaybackSession(
                    source: source, options: options, core: core, fetcher: fetcher, startMono: startMono, logger: logger, events: sink)
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

    /// Changes the latency target (seconds behind live, 0 < seconds ≤ 300) while playing: the
    /// controller steers to it by rate, or jumps when it is more than
    /// ``SyncOptions/jumpThreshold`` away. Before ``play()`` it replaces the options' target.
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

    /// Stops playback and closes the outputs (the WAV file and frames.tsv are complete after it).
    public func stop() async {
        let (task, session) = inner.withLock { inner -> (Task<Void, Never>?, PlaybackSession?) in
            defer {
                inner.task = nil
                inner.session = nil
                if inner.state != .error { inner.state = .idle }
            }
            return (inner.task, inner.session)
        }
        task?.cancel()
        await task?.value
        session?.core.close()
        sink.send(.stateChanged(.idle))
    }
}
