import MarqueeBridge
import MarqueeStreaming

/// The sound: volume and mute, and events placed on the timeline (a mute, an ad break).
extension Player {
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
        if muted != nil { applyCaptions() }  // (auto: drawn while muted)
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
}
