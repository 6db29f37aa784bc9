import MarqueeStreaming

/// The rate of a live edge that runs off the server's clock: a packager whose timeline follows
/// its encoder's media clock (a DASH SegmentTimeline of the encoder's timestamps, HLS whose
/// program date-times are the first date plus the durations, as ffmpeg writes them), while the
/// encoder's clock runs 0.1–0.5 % fast or slow against the wall. Each segment is then listed
/// when the encoder has produced it, on the wall clock: the timeline's newest end runs ahead of
/// (or behind) the server's clock by 5 ms every second at 0.5 %, 18 s an hour. Held by the
/// server's clock, a box would trail a fast edge out of the time-shift window, or run dry
/// against a slow one every few segments.
///
/// Samples are taken when a segment is first listed: a manifest answered at server time `t`
/// (seconds since the availability start) lists a segment ending at `end` that the answer just
/// before (at most ``maximumBracket`` earlier) did not: the edge's *lead* there is `end − t`
/// (within half the bracket). A least-squares line through the leads of the last ``window``
/// seconds, each weighted by how narrowly its bracket placed it (a loaded box's slow answers
/// bracket wider), gives the lead at any time; a slope under ``minimumSlope`` or under four
/// standard errors is no drift. Once a slope has been significant the line is *active*: the
/// presentation timeline is read as the server's clock plus the lead (``SharedServerClock/lead``),
/// so latency, availability and the latency controller all follow the edge.
///
/// A pure value (times in seconds since the availability start, on the server's clock).
struct LiveEdgeRate: Sendable, Equatable {
    static let window = 600.0
    /// Samples must span this many seconds (and be at least ``minimumSamples``) for a slope.
    static let minimumSpan = 30.0
    static let minimumSamples = 12
    /// Leads change by at least this much per second before it is drift (0.03 %).
    static let minimumSlope = 3e-4
    /// No encoder drifts more than 2 %: a larger slope is taken as 2 %.
    static let maximumSlope = 0.02
    /// The longest bracket (seconds between the answer that did not list a segment and the one
    /// that did) a sample is taken from.
    static let maximumBracket = 0.35

    struct Sample: Sendable, Equatable {
        var time: Double
        var lead: Double
        /// The inverse of the sample's variance: its time is anywhere in its bracket
        /// (variance bracket² / 12), plus ``jitter``.
        var weight = 1.0
    }

    /// Seconds of error a sample has besides its bracket (the answer's way back, the host's
    /// scheduling).
    static let jitter = 0.005

    private(set) var samples: [Sample] = []
    /// Lead per second (0.005: the edge gains 5 ms a second on the server's clock).
    private(set) var slope = 0.0
    /// Whether the edge was found to drift: the line is then used (and stays in use).
    private(set) var isActive = false
    private var meanTime = 0.0
    private var meanLead = 0.0
    /// The fitted slope, significant or not (0 with fewer than three samples over 4 s).
    private var roughSlope = 0.0

    init() {}

    /// The segment ending at `end` was listed in an answer at `listedAt` and not in the one at
    /// `notListedAt` (server seconds since the availability start).
    mutating func record(end: Double, listedAt: Double, notListedAt: Double) {
        let bracket = listedAt - notListedAt
        guard end.isFinite, listedAt.isFinite, bracket >= 0, bracket <= Self.maximumBracket else { return }
        let time = listedAt - bracket / 2
        let lead = end - time
        // A segment listed far off the line (a packager's hiccup, a clock step) is not drift.
        if samples.count >= Self.minimumSamples, abs(lead - line(at: time)) > 1 { return }
        samples.append(Sample(time: time, lead: lead, weight: 1 / (bracket * bracket / 12 + Self.jitter * Self.jitter)))
        samples.removeAll { time - $0.time > Self.window }
        fit()
    }

    /// The edge's lead over the server's clock at `time`: the fitted line once active, else 0.
    func lead(at time: Double) -> Double {
        isActive ? line(at: time) : 0
    }

    /// The line to apply to the server's clock (nil until the edge was found to drift).
    var clockLead: SharedServerClock.Lead? {
        isActive ? SharedServerClock.Lead(reference: meanTime, lead: meanLead, slope: slope) : nil
    }

    /// For an edge already known to be off the clock (listed ahead of it): the least-squares
    /// line of the samples, significant or not, once there are six spanning ten seconds (a rough
    /// slope follows a drift better than none); once there are enough for a slope
    /// (``minimumSamples`` over ``minimumSpan``) and it is not significant, the mean lead alone
    /// (an edge that is off the clock but does not drift: every box then reads the same offset,
    /// not a slope made of noise).
    var roughLead: SharedServerClock.Lead? {
        guard samples.count >= 6, let first = samples.first, let last = samples.last, last.time - first.time >= 10
        else { return nil }
        if isActive { return clockLead }
        let settled = samples.count >= Self.minimumSamples && last.time - first.time >= Self.minimumSpan
        return SharedServerClock.Lead(reference: meanTime, lead: meanLead, slope: settled ? 0 : roughSlope)
    }

    /// When (server seconds since the availability start) a segment ending at `end` is expected
    /// to be listed: where the samples' line (significant or not) meets it, else by the last
    /// sample's lead.
    func expectedListing(of end: Double) -> Double? {
        guard let last = samples.last else { return nil }
        guard samples.count >= 3 else { return end - last.lead }
        // end − (meanLead + s × (t − meanTime)) = t
        let s = isActive ? slope : roughSlope
        return (end - meanLead + s * meanTime) / (1 + s)
    }

    /// The fitted line (the slope 0 until significant) at `time`.
    private func line(at time: Double) -> Double {
        meanLead + slope * (time - meanTime)
    }

    /// Weighted least squares (``Sample/weight``): the weighted means, the slope, and its
    /// standard error from the weighted residuals.
    private mutating func fit() {
        let n = Double(samples.count)
        let total = samples.reduce(0) { $0 + $1.weight }
        guard n > 0, total > 0 else { return }
        meanTime = samples.reduce(0) { $0 + $1.weight * $1.time } / total
        meanLead = samples.reduce(0) { $0 + $1.weight * $1.lead } / total
        guard samples.count >= 3, let first = samples.first, let last = samples.last, last.time - first.time >= 4 else {
            return
        }
        var sxy = 0.0
        var sxx = 0.0
        for s in samples {
            sxy += s.weight * (s.time - meanTime) * (s.lead - meanLead)
            sxx += s.weight * (s.time - meanTime) * (s.time - meanTime)
        }
        guard sxx > 0 else { return }
        let fitted = sxy / sxx
        roughSlope = min(Self.maximumSlope, max(-Self.maximumSlope, fitted))
        guard samples.count >= Self.minimumSamples, last.time - first.time >= Self.minimumSpan else { return }
        let residuals = samples.reduce(0) { sum, s in
            let r = s.lead - meanLead - fitted * (s.time - meanTime)
            return sum + s.weight * r * r
        }
        let standardError = (residuals / (n - 2) / sxx).squareRoot()
        if abs(fitted) >= max(Self.minimumSlope, 4 * standardError) {
            slope = min(Self.maximumSlope, max(-Self.maximumSlope, fitted))
            isActive = true
        } else {
            slope = 0
        }
    }
}
