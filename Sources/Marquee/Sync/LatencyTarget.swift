/// The latency target of a live session, one value with one lock: what the app asked for, what
/// is in use (raised while the stream's segments arrive too late for the app's,
/// ``FeasibleLatency``), the arrivals measured, and the raise the next control step is to make
/// by a jump. The session, its feeders (which read ``current``) and the edge watch share it;
/// every change is made here, and the caller reports what a change returns.
struct LatencyTarget: Sendable, Equatable {
    /// Seconds behind live the app asked for (options, manifest, `setTargetLatency`).
    private(set) var requested: Double
    /// Seconds behind live the session holds now.
    private(set) var current: Double
    /// Whether the target follows the arrivals (live with sync on); else it is the app's.
    let follows: Bool
    /// When segments really arrive, against their presentation times.
    private(set) var feasible = FeasibleLatency()
    /// Arrivals count from this monotonic second (``restart(at:after:)``).
    private(set) var arrivalsFrom = -Double.infinity
    /// Seconds the target was raised by since the last control step took it
    /// (``takeRaise()``): a large raise is made by a jump (the picture held once, rather than
    /// late pictures dropped while the rate catches up).
    private(set) var raisedBy = 0.0

    /// A change of the target in use: from `before` to `after` seconds, the app asking `requested`.
    struct Change: Sendable, Equatable {
        var before: Double
        var after: Double
        var requested: Double
    }

    init(requested: Double, follows: Bool) {
        self.requested = requested
        self.current = requested
        self.follows = follows
    }

    /// A target that starts at `learned` (seconds, when above `requested`): what an earlier
    /// session of the same stream was raised to (a playlist's next turn of a live item). It
    /// holds as if that session's latest need had just been measured at monotonic `now`, so it
    /// comes down as the arrivals of a whole window allow, and only then.
    init(requested: Double, follows: Bool, learned: Double?, now: Double) {
        self.init(requested: requested, follows: follows)
        guard follows, let learned, learned > requested + 0.01 else { return }
        feasible.record(latency: learned - FeasibleLatency.headroom, at: now)
        current = learned
    }

    /// A segment's first byte came `need` seconds after its presentation start, and it was
    /// whole `inHand` seconds after it (nil: not known), at monotonic `now`: the target moves as
    /// ``FeasibleLatency`` says (nil: it stays).
    mutating func arrived(need: Double, inHand: Double? = nil, at now: Double) -> Change? {
        guard follows, now >= arrivalsFrom else { return nil }
        feasible.record(need: need, inHand: inHand, at: now)
        return adjust(now: now)
    }

    /// The target in use as ``FeasibleLatency`` says at monotonic `now` (nil: unchanged). A
    /// raise is added to ``raisedBy``.
    mutating func adjust(now: Double) -> Change? {
        let before = current
        current = feasible.target(requested: requested, current: current, now: now)
        guard current != before else { return nil }
        if current > before { raisedBy += current - before }
        return Change(before: before, after: current, requested: requested)
    }

    /// The app asks for `seconds`: in use at once, or the feasible latency when the segments
    /// arrive too late for it.
    mutating func request(_ seconds: Double, now: Double) {
        requested = seconds
        current = follows ? max(seconds, feasible.minimumTarget(now: now) ?? 0) : seconds
    }

    /// The raise since the last step, taken (``raisedBy`` back to zero).
    mutating func takeRaise() -> Double {
        defer { raisedBy = 0 }
        return raisedBy
    }

    /// The timeline's clock moved: the arrivals measured were on the old clock and start again
    /// `after` seconds from monotonic `now`; the target comes back to the app's (nil: it was).
    mutating func restart(at now: Double, after: Double) -> Change? {
        arrivalsFrom = now + after
        feasible = FeasibleLatency()
        let before = current
        current = requested
        return before == requested ? nil : Change(before: before, after: requested, requested: requested)
    }
}
