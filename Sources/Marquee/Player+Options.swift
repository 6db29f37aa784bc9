import MarqueeStreaming

/// Changing the options while playing: the whole set, the latency target, a remote config.
extension Player {
    /// Changes the latency target (seconds behind live, 0 < seconds ≤ 300) while playing: the
    /// controller steers to it by rate, or jumps when it is more than
    /// a second (the jump threshold) away. When the stream's segments arrive too late for it,
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
        let target = config.settings["advanced.sync.targetLatency"].map { _ in
            PlayerOptions(config: config).targetLatency
        }
        if let target, target > 0 { try setTargetLatency(target) }
        sink.send(.configApplied(targetLatency: target))
    }

    /// Changes the options. What can change while playing does at once: the latency target,
    /// mute, the recovery delays and the main-source retry interval; the sources take effect at
    /// the next (re)load; outputs, fit, rotation, poster, decoders, headers, mixing and the
    /// delay store at the next ``play()`` after ``stop()``. Throws what ``init(options:router:logger:)``
    /// throws for invalid options (nothing changes then).
    public func updateOptions(_ new: PlayerOptions) throws(PlayerError) {
        let validated = try new.validated(requiringSources: inner.withLock { $0.requiresSources })
        let old = inner.withLock { inner in
            defer { inner.options = validated }
            return inner.options
        }
        if validated.targetLatency != old.targetLatency, validated.targetLatency > 0 {
            try setTargetLatency(validated.targetLatency)
        }
        if validated.muted != old.muted { try setVolume(muted: validated.muted) }
    }
}
