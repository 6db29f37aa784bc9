import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

extension Player {
    /// Stall recovery for as long as the outputs are open: reacts to the sessions' reports as
    /// they come (``SessionReport``) and, while no session runs, to the recovery policy's clock.
    /// Reloads when nothing has been presented for the ``RecoveryPolicy``'s delay
    /// (``PlayerOptions/minRecoveryDelay`` doubling up to ``PlayerOptions/maxRecoveryDelay``),
    /// when the packager restarted, and (playing a backup) when the main source answers again.
    /// The player is held only while a step acts (not while waiting): a player the app lets go
    /// of is released, and its `deinit` stops what it runs.
    static func supervise(
        _ reports: AsyncStream<SessionReport>, first: PlayerOptions, player weak: @Sendable () -> Player?
    ) async {
        var watch = StallWatch(
            policy: RecoveryPolicy(minDelay: first.minRecoveryDelay, maxDelay: first.maxRecoveryDelay),
            now: Monotonic.now())
        var running = true  // a session runs and reports
        // The session ended (on demand) or failed for good: nothing is watched until a load()
        // (the next playlist item, the app's) starts another, whose first report wakes it.
        var over = false
        var iterator = reports.makeAsyncIterator()
        while !Task.isCancelled {
            var presented: Int?
            if running {
                guard let report = await iterator.next() else { return }  // stop()
                guard let player = weak() else { return }
                if over {
                    guard case .progress = report else { continue }
                    over = false
                    watch = StallWatch(
                        policy: RecoveryPolicy(minDelay: watch.policy.minDelay, maxDelay: watch.policy.maxDelay),
                        now: Monotonic.now())
                }
                switch report {
                case .progress(let count): presented = count
                case .over:
                    over = true
                    continue
                case .noSession: running = player.sessionRuns()  // (a reload since may have succeeded)
                case .restart:
                    // Every presentation time moved: the timeline starts afresh.
                    running = await player.reload(reason: "the stream restarted")
                    if running { watch.reloaded(now: Monotonic.now()) }
                    continue
                }
            } else if let due = watch.reloadDue {
                try? await Task.sleep(for: .milliseconds(max(0, Int((due - Monotonic.now()) * 1000) + 1)))
                if Task.isCancelled { return }
                if weak()?.sessionRuns() == true {  // the app's load() succeeded meanwhile
                    running = true
                    continue
                }
            }
            guard let player = weak(), let runs = await player.step(&watch, presented: running ? presented : nil) else {
                return
            }
            running = runs
        }
    }

    /// One step of the watch at the time now; acts on what it says. Returns whether a session
    /// runs afterwards, nil once the player is stopped.
    private func step(_ watch: inout StallWatch, presented: Int?) async -> Bool? {
        let options = self.options
        // updateOptions
        if (options.minRecoveryDelay, options.maxRecoveryDelay) != (watch.policy.minDelay, watch.policy.maxDelay) {
            watch.policy = RecoveryPolicy(minDelay: options.minRecoveryDelay, maxDelay: options.maxRecoveryDelay)
        }
        guard let (session, core, displayOff) = supervised() else { return nil }
        router?.reportBuffer(seconds: session.status().buffer)
        if let cmcd = fetcher.cmcd {
            let status = session.status()
            let top = qualities.filter { $0.kind == "video" }.map(\.bandwidth).max()
            let live = session.mpd.isLive
            let hls = session.source.pathExtension.lowercased() == "m3u8"
            cmcd.update { s in
                s.streamType = live ? "l" : "v"
                s.streamingFormat = hls ? "h" : "d"
                s.playbackRate = status.playbackRate
                s.topBitrate = top
                s.throughputSource = { [weak session] in session?.throughputEstimate }
                // su: starting, or recovering from an empty buffer (CTA-5004); bs: it ran
                // empty since the last request, after it had played (a first picture shown
                // while the sound has not begun yet is the startup, not a starved buffer).
                let buffering = status.state == .buffering
                if status.state == .playing { s.played = true }
                if s.played, buffering { s.starved = true }
                s.starting = status.framesPresented == 0 || buffering
            }
        }
        let main = options.sources.first.map(routed)
        let step = watch.step(
            now: Monotonic.now(), presented: presented, onBackup: main.map { session.source != $0 } ?? false,
            mainRetryInterval: options.mainSourceRetryInterval)
        if step.recovered {
            if !displayOff { try? core.setOverlay(.none) }
            sink.send(.recovered)
        }
        if step.probeMain, let main {
            // Playing a backup: when the main source answers again, go back to it.
            var once = FetchPolicy.manifest
            once.attempts = 1  // a probe: the next one comes soon enough
            if (try? await ManifestSource(url: main, fetcher: fetcher, policy: once).load()) != nil {
                logger.notice("main source is back: switching to it", metadata: ["source": "\(main)"])
                return reloaded(await reload(reason: nil), &watch)
            }
        }
        if let next = step.reload {
            if !displayOff { try? core.setOverlay(.slate(nil)) }  // "RECONNECTING..." over the held picture
            logger.notice("stalled: reloading", metadata: ["next_delay": "\(next)"])
            sink.send(.recovering(nextDelay: next))
            return reloaded(await reload(reason: nil), &watch)
        }
        return presented != nil
    }

    /// After a reload: one that played gives its new session the whole delay (it may have waited
    /// long on a hung source before a backup answered); after one that failed, the next is due
    /// the delay after this one began, as the policy counted it.
    private func reloaded(_ runs: Bool, _ watch: inout StallWatch) -> Bool {
        if runs { watch.reloaded(now: Monotonic.now()) }
        return runs
    }

    /// Whether a session's task runs (none after a failed reload).
    private func sessionRuns() -> Bool { inner.withLock { $0.task != nil } }

    /// The session, core and display state the supervisor acts on; nil once stopped.
    private func supervised() -> (PlaybackSession, CoreHandle, Bool)? {
        inner.withLock { inner in
            guard let core = inner.core, let session = inner.session else { return nil }
            return (session, core, inner.displayOff)
        }
    }

    /// Reloads the sources; returns whether a session runs afterwards.
    private func reload(reason: String?) async -> Bool {
        if let reason { logger.notice("reloading", metadata: ["reason": "\(reason)"]) }
        do {
            try await load()
            return true
        } catch {
            logger.warning("reload failed", metadata: ["error": "\(error)"])
            sink.send(.error(error, fatal: false))
            return false
        }
    }
}
