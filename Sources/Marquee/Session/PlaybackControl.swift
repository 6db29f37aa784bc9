import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// The session's reactions to the core: the event pump (each core event as it is queued) and
/// the 10 Hz control step (state, frame rate, latency steering, the mixer's look-ahead, progress
/// for the stall supervisor), and the status it reads.
extension PlaybackSession {
    /// The control step's period: the latency controller's sampling interval (its gains are
    /// tuned for it), the state and frame-rate readings, the mixer's look-ahead (0.5 s of timed
    /// transitions, so a step this long never misses one) and the stall supervisor's progress
    /// readings. Events do not wait for it (``react(to:)``).
    static let controlInterval = 0.1

    /// The control step, every ``controlInterval``: a sampled-data loop by design (the
    /// controller steers on a fixed period), not a poll for events.
    func control() async {
        defer { suspensions.withLock { $0.stop() } }
        while !Task.isCancelled {
            let now = Monotonic.now()
            if let window = suspensions.withLock({ $0.beat(at: now, every: Self.controlInterval) }) {
                // The process was stopped or starved: what arrived late meanwhile is not the server's.
                logger.notice(
                    "the player was not running", metadata: ["seconds": "\(String(format: "%.2f", window.seconds))"])
            }
            if let status = core.status() {
                update(status)
                steer(status)
                if let mixer, let position = status.position {
                    await mixer.tick(
                        position: drift.withLock { $0.presentation(of: position) }, mono: status.mono,
                        rate: controller.withLock { $0.rate })
                }
                reports?.yield(.progress(presented: status.framesPresented + status.audioFramesPlayed))
            }
            try? await Task.sleep(for: .milliseconds(Int(Self.controlInterval * 1000)))
        }
    }

    /// Reacts to a core event (the player's event pump hands each on as it is queued, while
    /// this session presents); returns `true` when playback is over.
    func react(to event: CoreEvent) -> Bool {
        switch event.kind {
        case .firstFrame:
            let seconds = (core.status()?.firstFrameMono ?? Monotonic.now()) - startMono
            events.send(.firstFrame(seconds: seconds))
            logger.info("first frame", metadata: ["seconds": "\(String(format: "%.3f", seconds))"])
            // What opening the stream and its decoders used once.
            if memoryTrimInterval != nil { MemoryUsage.trim(at: "first frame", logger: logger) }
        case .ended:
            setState(.ended)
            events.send(.ended)
            return true
        case .error:
            let coreError = event.error
            let code: PlayerError.Code = coreError?.isOutputFailure == true ? .output : .media
            let error = PlayerError(code, event.message, coreCode: coreError?.code)
            let fatal = code == .output
            logger.warning("core error", metadata: ["error": "\(error)", "track": "\(event.track ?? -1)"])
            events.send(.error(error, fatal: fatal))
            if fatal {
                monitor.withLock { $0.fatal = error }
                setState(.error)
                return true
            }
            // A damaged segment (skipped by the core): its init segment may be the bad part.
            if let track = event.track {
                for feeder in feeders where feeder.plan.coreTracks.contains(track) {
                    feeder.initSuspect.withLock { $0 = true }
                }
            }
        case .trackFormat:
            logger.info("track opened", metadata: ["track": "\(event.track ?? -1)", "format": "\(event.message)"])
            startOnFirstPicture(event)
        case .outputChanged:
            logger.notice("display changed", metadata: ["detail": "\(event.message)"])
            events.send(.outputChanged(event.message))
        case .decoderFallback:
            logger.notice("decoder fallback", metadata: ["detail": "\(event.message)"])
            events.send(.decoderFallback(event.message))
        case .clipEnded:
            logger.debug("clip ended", metadata: ["input": "\(event.track ?? -1)", "detail": "\(event.message)"])
        case .caption:
            let at = event.mediaTime.map { t in drift.withLock { $0.presentation(of: t) } } ?? .nan
            logger.debug("captions", metadata: ["text": "\(event.message)", "at": "\(at)"])
            events.send(.captionChanged(text: event.message, position: at))
        case .underrun, .labelShown, .other:
            logger.debug("core event", metadata: ["message": "\(event.message)"])
        }
        return false
    }

    /// On demand: the first picture (or the first sound, without video) was decoded before the
    /// start lead ran out: it is due now (5 ms), not at the end of the lead: a playlist's next
    /// item follows the last picture of the one before by its fetch and decode, not a fixed wait.
    func startOnFirstPicture(_ event: CoreEvent) {
        guard let time = event.mediaTime, time.isFinite,
            let start = onDemandStart.withLock({ s -> (anchor: Double, track: Int32)? in
                guard let pending = s, pending.track == event.track else { return nil }
                s = nil
                return pending
            })
        else { return }
        let now = Monotonic.now()
        guard now + 0.005 < start.anchor, !shift.paused else { return }
        try? core.setTimeline(monoAnchor: now + 0.005, mediaAnchor: time, epoch: steeringEpoch)
    }

    /// One latency-control step (live with a target): measures the latency of what is heard
    /// (or shown) now and re-anchors the core's schedule as the controller says.
    func steer(_ status: CoreStatus) {
        if syncEnabled, !shift.paused, status.state == .buffering, status.position == nil,
            latencyTarget.withLock({ $0.takeRaise() }) > 0
        {
            // The target was raised before the first picture (a server later than the target
            // from the start): the schedule the core waits on moves there now.
            jumpToTarget()
            return
        }
        guard syncEnabled, !shift.paused, status.state == .playing, let position = status.position,
            let ast = mpd.availabilityStartTime?.timeIntervalSince1970
        else { return }
        Self.report(latencyTarget.withLock { $0.adjust(now: status.mono) }, events: events, logger: logger)
        let raised = latencyTarget.withLock { $0.takeRaise() }
        let target = targetLatency + shift.delay
        let media = drift.withLock { $0 }
        let latency = wallSeconds(
            status.mono + clock.timelineOffset(atMonotonic: status.mono) - ast - media.presentation(of: position))
        let (action, before) = controller.withLock { c in
            let before = c.rate
            if raised >= Self.raiseJump, latency < target - Self.raiseJump / 2 {
                c.jumped(now: status.mono)
                return (LatencyController.Action.jump(error: latency - target), before)
            }
            return (
                c.update(
                    now: status.mono, latency: latency, target: target,
                    baseRate: media.rate * (1 + (clock.lead?.slope ?? 0))), before
            )
        }
        do {
            switch action {
            case .hold:
                return
            case .steer(let rate):
                try core.setTimeline(monoAnchor: status.mono, mediaAnchor: position, rate: rate, epoch: steeringEpoch)
                logger.debug("steering", metadata: ["rate": "\(rate)", "error": "\(latency - target)"])
                events.send(.playbackRateChanged(rate))
            case .jump(let error):
                let mono = Monotonic.now()
                try core.setTimeline(
                    monoAnchor: mono,
                    mediaAnchor: media.position(
                        of: mono + clock.timelineOffset(atMonotonic: mono) - ast - timelineSeconds(target)),
                    epoch: steeringEpoch)
                logger.info(
                    "latency jump", metadata: ["error": "\(String(format: "%.3f", error))", "target": "\(target)"])
                events.send(.latencyJump(error: error))
                if before != 1 { events.send(.playbackRateChanged(1)) }
            }
        } catch {
            logger.warning("cannot steer", metadata: ["error": "\(error.message)"])
        }
    }

    func update(_ status: CoreStatus) {
        var newState: PlaybackState? =
            switch status.state {
            case .playing: .playing
            case .buffering: .buffering
            default: nil
            }
        if shift.paused { newState = nil }
        // The core plays on while a live buffer runs dry: with no new picture shown and no stream
        // sound heard for a while, the stream is buffering (and playing again as soon as either
        // moves). Pictures decoded and dropped as late while it catches up are not seen: the
        // screen is still frozen. (With the display off, the stream's sound tells.)
        let count = status.framesPresented + status.audioFramesPlayed
        let paused = shift.paused
        let stalled = monitor.withLock { m in
            if count != m.progress.count || (paused && m.progress.mono > 0) {  // (a pause is no stall, nor its end)
                m.progress = (status.mono, count)
                return false
            }
            return m.progress.mono > 0 && status.mono - m.progress.mono >= Self.stallAfter
        }
        if stalled, newState == .playing { newState = .buffering }
        if status.state == .playing, let position = status.position, !shift.paused {
            let due = monitor.withLock { m in
                guard status.mono - m.lastTimeUpdate >= 1 else { return false }
                m.lastTimeUpdate = status.mono
                return true
            }
            if due { events.send(.timeUpdate(drift.withLock { $0.presentation(of: position) })) }
        }
        monitor.withLock { m in
            m.samples.append((status.mono, status.framesPresented))
            m.samples.removeAll { status.mono - $0.mono > 1.0 }
            if let first = m.samples.first, status.mono - first.mono > 0.25 {
                m.fps = Double(status.framesPresented - first.frames) / (status.mono - first.mono)
            }
        }
        if let newState { setState(newState) }
    }

    func setState(_ state: PlaybackState) {
        let changed = monitor.withLock { m in
            // Ended and failed are final: a control step in flight does not undo them.
            guard m.state != state, m.state != .ended, m.state != .error else { return false }
            m.state = state
            return true
        }
        if changed { events.send(.stateChanged(state)) }
    }

    var state: PlaybackState { monitor.withLock { $0.state } }

    func status() -> PlaybackStatus {
        let core = self.core.status()
        let (state, fps) = monitor.withLock { ($0.state, $0.fps) }
        var status = PlaybackStatus(state: state)
        status.framesPerSecond = fps
        status.timeOffset = clock.localClockDifferenceMs / 1000
        status.playbackRate = controller.withLock { $0.rate }
        let target = latencyTarget.withLock { $0 }
        status.targetLatency = mpd.isLive ? target.current : nil
        status.requestedTargetLatency = mpd.isLive ? target.requested : nil
        status.liveAnchor = liveAnchor
        status.delay = shift.delay
        status.availableDelay = availableDelay
        status.storeBytes = store?.bytes ?? 0
        status.failedDownloads = feeders.reduce(0) { $0 + $1.loader.failedDownloads }
        guard let core else { return status }
        let media = drift.withLock { $0 }
        status.read(core, position: core.position.map { media.presentation(of: $0) })
        if let position = status.position {
            if mpd.isLive, let ast = mpd.availabilityStartTime {
                status.latency = wallSeconds(
                    core.mono + clock.timelineOffset(atMonotonic: core.mono) - ast.timeIntervalSince1970 - position)
            }
            let ends = feeders.compactMap { $0.pushedEnd.withLock { $0 } }
            if let end = ends.min() { status.buffer = max(0, end - position) }
        }
        return status
    }
}
