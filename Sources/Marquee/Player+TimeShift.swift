import Foundation
import MarqueeStreaming

/// Time shift: the user delay, DVR seeking, pause and resume, standby.
extension Player {
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
}
