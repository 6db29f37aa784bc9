import Foundation
import MarqueeBridge
import MarqueeStreaming

/// Time shift: the user delay (live, as far as the store or the server's window reaches), pause
/// and resume, on-demand seeks, and the schedule re-anchored on the target plus the delay.
extension PlaybackSession {
    /// Seconds behind the latency target the kept segments reach back (live; 0 without a store):
    /// how far ``setDelay(_:)`` can go now.
    var availableDelay: Double {
        guard let store, let ast = mpd.availabilityStartTime,
            let since = store.continuousSince(tracks: plans.map(\.coreTrack))
        else { return 0 }
        let live = clock.now().timeIntervalSince(ast) - targetLatency
        return max(0, min(maxDelay, live - since))
    }

    /// The presentation time at the latency target (live), nil on demand.
    var livePosition: Double? {
        guard mpd.isLive, let ast = mpd.availabilityStartTime else { return nil }
        return clock.now().timeIntervalSince(ast) - targetLatency
    }

    /// How far behind the latency target the server's own window (DVR: `timeShiftBufferDepth`,
    /// an HLS playlist's length) still reaches, less a segment of margin; 0 without one.
    var windowDelay: Double {
        guard mpd.isLive, let depth = mpd.timeShiftBufferDepth else { return 0 }
        let target = targetLatency
        return max(0, depth - target - 2 * (mpd.maxSegmentDuration ?? 2))
    }

    /// What can be presented (presentation times): live, from what the store or the server's
    /// window still holds to the latency target; on demand, the whole presentation.
    var seekableRange: ClosedRange<Double>? {
        if let live = livePosition { return (live - max(availableDelay, windowDelay))...live }
        guard let duration = mpd.mediaPresentationDuration else { return nil }
        return 0...duration
    }

    /// Sets the user delay (live): clamped to what the store or the server's window reaches
    /// (``availableDelay``, ``windowDelay``); returns the delay applied. A change of more than
    /// the jump threshold jumps (the feeders restart from the store, or the server); a smaller
    /// one is steered by rate.
    @discardableResult
    func setDelay(_ seconds: Double) -> Double {
        guard mpd.isLive, store != nil || windowDelay > 0 else { return 0 }
        let delay = max(0, min(seconds, max(availableDelay, windowDelay)))
        let old = shift.delay
        let jump = abs(delay - old) >= controllerJumpThreshold || !syncEnabled
        shift.set(delay: delay, reposition: jump)
        if jump { jumpToTarget() }
        return delay
    }

    /// Stops presenting (live: keeps collecting into the store; the picture stays).
    func pausePresentation() {
        let position = core.status()?.position
        guard let position else { return }
        pause.withLock { $0 = (Monotonic.now(), position) }
        shift.set(delay: shift.delay, paused: true, reposition: true)
        for plan in plans { for track in plan.coreTracks { try? core.resetTrack(track) } }
        setState(.paused)
    }

    /// Resumes from the paused position (live: as a delay, as far as the store reaches).
    func resumePresentation() {
        guard
            let paused = pause.withLock({ p in
                defer { p = nil }
                return p
            })
        else { return }
        if mpd.isLive, let ast = mpd.availabilityStartTime {
            let live = clock.now().timeIntervalSince(ast) - targetLatency
            let delay = max(0, min(live - paused.position, max(availableDelay, windowDelay)))
            shift.set(delay: delay, paused: false, reposition: true)
            jumpToTarget()
        } else {
            shift.set(delay: 0, paused: false, reposition: true, anchor: paused.position)
            try? core.setTimeline(
                monoAnchor: Monotonic.now() + 0.25, mediaAnchor: paused.position, epoch: steeringEpoch)
        }
        setState(.buffering)
    }

    var isPaused: Bool { shift.paused }

    /// On demand: restarts presentation at `position` (live seeks through ``setDelay(_:)``).
    func seekOnDemand(to position: Double) {
        shift.set(delay: 0, paused: shift.paused, reposition: true, anchor: position)
        if !shift.paused {
            try? core.setTimeline(monoAnchor: Monotonic.now() + 0.25, mediaAnchor: position, epoch: steeringEpoch)
        }
    }

    /// Wall seconds of `timeline` seconds of the presentation timeline: the same but for a live
    /// edge that runs off the server's clock (``LiveEdgeRate``), whose timeline gains its drift.
    /// Latency is wall time: from when the edge had it to when it is shown.
    func wallSeconds(_ timeline: Double) -> Double { timeline / (1 + (clock.lead?.slope ?? 0)) }
    func timelineSeconds(_ wall: Double) -> Double { wall * (1 + (clock.lead?.slope ?? 0)) }

    private var controllerJumpThreshold: Double { controller.withLock { $0.options.jumpThreshold } }

    /// Re-anchors the schedule on the latency target plus the delay, now.
    func jumpToTarget() {
        guard let ast = mpd.availabilityStartTime?.timeIntervalSince1970 else { return }
        let mono = Monotonic.now()
        let latency = targetLatency + shift.delay
        let media = drift.withLock { $0 }
        try? core.setTimeline(
            monoAnchor: mono,
            mediaAnchor: media.position(
                of: mono + clock.timelineOffset(atMonotonic: mono) - ast - timelineSeconds(latency)),
            epoch: steeringEpoch)
        controller.withLock { $0.reset() }
    }
}
