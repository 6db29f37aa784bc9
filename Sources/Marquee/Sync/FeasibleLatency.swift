/// The smallest latency target a live stream can be played at without late media, measured
/// from when its segments really arrive (not from what the manifest promises): servers publish
/// late (a packager writes a segment when the next keyframe comes, an `availabilityStartTime`
/// rounded down, a slow origin), and a target below that drops pictures forever.
///
/// Each segment fetched as soon as it was due gives a *need*: seconds from its presentation
/// start to the first byte of it arriving (when its server had it; the download time after
/// that is the link's, which adaptive bitrate answers, not the target) plus ``margin``, or, when
/// it was whole sooner than that margin allows, seconds to it being in hand plus
/// ``inHandMargin`` (decoding its first pictures, the output's delay): a segment handed over
/// whole at once (a venue proxy that checks a peer's bytes before it answers, a small segment)
/// has no download left after its first byte. The feasible latency is the largest need of the
/// last ``window`` seconds. The session raises its target to it at once
/// (never below the app's target) and lowers it again, not below the app's target, once the
/// needs of a whole window allow ``lowerStep`` less. A raise adds ``headroom`` and is at least
/// ``raiseStep``: the needs of a SegmentTimeline vary with the phase of the manifest reload
/// that lists each segment, and a raise a few hundredths short of the next need would be
/// followed by another, too small to jump, slewed away by rate for half a minute.
struct FeasibleLatency: Sendable, Equatable {
    /// Seconds of measurements kept.
    static let window = 60.0
    /// Seconds added to a segment's first byte (the download at a rendition the link carries,
    /// decoding the first frames, the output's delay).
    static let margin = 0.5
    /// Seconds added to a segment's being in hand, whole (decoding its first frames, the
    /// output's delay).
    static let inHandMargin = 0.2
    /// Seconds a raised target is given above the feasible latency.
    static let headroom = 0.2
    /// A raise is at least this large (seconds): the session makes it by a jump
    /// (``PlaybackSession/raiseJump``), never by a long slew.
    static let raiseStep = 0.25
    /// The target comes down only when it can come down at least this much.
    static let lowerStep = 0.25
    /// Needs larger than this are not evidence about the server (a stall, a catch-up).
    static let plausibleNeed = 30.0

    /// The target each segment needed (margin included), by monotonic second.
    private var samples: [(at: Double, latency: Double)] = []
    /// Monotonic second of the first measurement (a window must have passed before lowering).
    private var since: Double?

    init() {}

    static func == (a: Self, b: Self) -> Bool {
        a.since == b.since && a.samples.map(\.at) == b.samples.map(\.at)
            && a.samples.map(\.latency) == b.samples.map(\.latency)
    }

    /// A segment's first byte came `need` seconds after its presentation start, at monotonic
    /// `now`, and it was whole `inHand` seconds after it (nil: not known).
    mutating func record(need: Double, inHand: Double? = nil, at now: Double) {
        guard need.isFinite, need > 0, need < Self.plausibleNeed else { return }
        var latency = need + Self.margin
        if let inHand, inHand.isFinite, inHand >= need { latency = min(latency, inHand + Self.inHandMargin) }
        record(latency: latency, at: now)
    }

    /// A segment needed a target of `latency` seconds (its margin included), at monotonic `now`.
    mutating func record(latency: Double, at now: Double) {
        samples.removeAll { $0.at < now - Self.window }
        samples.append((now, latency))
        if since == nil { since = now }
    }

    /// The smallest target that would have had every segment of the window in time, nil without
    /// measurements.
    func minimum(now: Double) -> Double? {
        samples.filter { $0.at >= now - Self.window }.map(\.latency).max()
    }

    /// ``minimum(now:)`` rounded up to the hundredth of a second, as targets are set.
    func minimumTarget(now: Double) -> Double? {
        minimum(now: now).map { ($0 * 100).rounded(.up) / 100 }
    }

    /// The target to play at now, given the app's `requested` target and the `current` one: up
    /// to the feasible latency at once, down toward it (not below `requested`) only after a
    /// whole window of measurements allows it.
    func target(requested: Double, current: Double, now: Double) -> Double {
        guard requested > 0, let feasible = minimumTarget(now: now) else { return requested }
        // Raised with ``headroom``: a need a little larger than the last does not raise it again.
        if requested >= current {
            return feasible > requested + 0.01 ? max(feasible + Self.headroom, requested + Self.raiseStep) : requested
        }  // the app asked for more
        if feasible > current + 0.01 { return max(feasible + Self.headroom, current + Self.raiseStep) }
        let lower = max(requested, feasible)
        if let since, now - since >= Self.window, lower <= current - Self.lowerStep { return lower }
        return current
    }
}
