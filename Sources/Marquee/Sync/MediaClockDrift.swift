/// How far a stream's media clock has drifted from its presentation timeline: an encoder whose
/// capture clock runs fast or slow (0.1–0.5 % is common) against the wall clock that dates its
/// segments (HLS `EXT-X-PROGRAM-DATE-TIME` written by the packager).
///
/// The player places media by measuring one segment's first timestamp against that segment's
/// start (``TrackFeeder``); every later segment is then where its timestamps say. With a
/// drifting media clock, segment *k*'s timestamps say `start₀ + (pts_k − pts₀)` while its date
/// says `start_k`: the difference grows by the drift, 5 ms per second of a 0.5 % drift, 18 s an
/// hour. Held at a latency measured in media time, a box would slide away from the live edge
/// until it fell out of the playlist (fast clock) or ran dry every few minutes (slow clock).
///
/// Each segment's first timestamp gives a sample: the core's position of that timestamp and
/// how far its dated start is from it. A least-squares line through the samples of the last
/// ``window`` seconds gives the correction at any position, and its slope the stream's real
/// rate: the latency controller measures the latency of `position + correction(position)` and
/// steers around ``rate`` (not 1), so the latency holds without a standing error.
///
/// A pure value, fed by the video feeder; no drift (our origin, a packager whose dates follow
/// its timestamps) gives a correction of 0 and a rate of 1 to within the samples' millisecond
/// rounding.
struct MediaClockDrift: Sendable, Equatable {
    /// Samples older than this (seconds of position before the newest) are forgotten.
    static let window = 600.0
    /// A slope is fitted once the samples span this many seconds; before, the last fitted
    /// slope is kept (0 at first).
    static let minimumSpan = 4.0
    /// A fitted slope smaller than this, or than four standard errors of the fit (the dates'
    /// millisecond rounding, a first timestamp a frame off now and then), is taken for 0: a
    /// stream without drift plays at exactly rate 1 (bit-exact sound), never at a rate made of
    /// noise.
    static let minimumSlope = 1e-4
    /// A fitted slope is held within ±2 % (no encoder drifts more; a larger one is a bad date).
    static let maximumSlope = 0.02

    /// (core position of a segment's first timestamp, its dated start minus that position).
    private(set) var samples: [Sample] = []
    /// Presentation seconds per media second, minus 1.
    private(set) var slope = 0.0
    private var intercept = 0.0

    struct Sample: Sendable, Equatable {
        var position: Double
        var drift: Double
    }

    init() {}

    /// Seconds of media per second of presentation (wall) time: the rate the media must play
    /// at to keep pace with the wall clock (1.005 for a media clock 0.5 % fast).
    var rate: Double { 1 / (1 + slope) }

    /// The timestamps were measured again (the first segment, a discontinuity, a restart): the
    /// segment starting at `position` is where its date says, so the drift starts again from
    /// 0 there. The slope, a property of the encoder's clock, is kept.
    mutating func rebase(at position: Double) {
        samples = [Sample(position: position, drift: 0)]
        fit()
    }

    /// One segment: its first timestamp is at core position `position` and its date says it
    /// starts at `start`.
    mutating func record(position: Double, start: Double) {
        guard position.isFinite, start.isFinite else { return }
        let drift = start - position
        // A date that disagrees wildly with the timestamps (an unannounced splice, a bad date)
        // is not drift: it is left out of the fit.
        if let last = samples.last,
            abs(drift - last.drift) > max(1, abs(position - last.position) * Self.maximumSlope * 2)
        {
            return
        }
        samples.append(Sample(position: position, drift: drift))
        if let newest = samples.last?.position { samples.removeAll { newest - $0.position > Self.window } }
        fit()
    }

    /// Presentation time minus core position at `position`.
    func correction(at position: Double) -> Double {
        samples.isEmpty ? 0 : intercept + slope * position
    }

    /// The presentation time of core position `position`.
    func presentation(of position: Double) -> Double {
        position + correction(at: position)
    }

    /// The core position whose presentation time is `time`.
    func position(of time: Double) -> Double {
        samples.isEmpty ? time : (time - intercept) / (1 + slope)
    }

    private mutating func fit() {
        guard !samples.isEmpty else { return }
        let n = Double(samples.count)
        let meanP = samples.reduce(0) { $0 + $1.position } / n
        let meanD = samples.reduce(0) { $0 + $1.drift } / n
        let span = (samples.last?.position ?? 0) - (samples.first?.position ?? 0)
        if span >= Self.minimumSpan {
            var sxy = 0.0
            var sxx = 0.0
            for s in samples {
                sxy += (s.position - meanP) * (s.drift - meanD)
                sxx += (s.position - meanP) * (s.position - meanP)
            }
            if sxx > 0, samples.count >= 3 {
                let fitted = sxy / sxx
                let residuals = samples.reduce(0) { sum, s in
                    let r = s.drift - meanD - fitted * (s.position - meanP)
                    return sum + r * r
                }
                let standardError = (residuals / (n - 2) / sxx).squareRoot()
                let significant = abs(fitted) >= max(Self.minimumSlope, 4 * standardError)
                slope = significant ? min(Self.maximumSlope, max(-Self.maximumSlope, fitted)) : 0
            }
        }
        intercept = meanD - slope * meanP
    }
}
