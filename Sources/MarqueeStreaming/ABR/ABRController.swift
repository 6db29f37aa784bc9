import Foundation

/// Adaptive bitrate: picks the rendition to fetch next from a throughput estimate and the
/// buffer level. Pure (no clock, no I/O): the scheduler reports downloads and asks.
///
/// - Throughput: two EWMAs over download samples (half-lives 2 s and 8 s of download time,
///   weighted by it) and the latest sample; the estimate is the smallest, so a drop is believed
///   at once and a rise only once it lasts. Samples of transfers paced by the encoder
///   (low-latency chunked delivery of a segment still being made) say nothing about the link
///   and are ignored, unless they prove it faster than thought.
/// - Rule: below ``Options/bufferSafe`` seconds of buffer, the highest rendition whose bitrate
///   fits in ``Options/safety`` × the estimate; above it a BOLA-like buffer rule may go higher,
///   never above what the estimate could sustain for the buffer ahead.
/// - Abandonment: a download that will not finish before the buffer runs out is dropped and
///   retried lower (``shouldAbandon(bytes:of:elapsed:buffer:)``).
package struct ABRController: Sendable {
    package struct Options: Sendable, Hashable {
        /// Fraction of the estimate a rendition may use.
        package var safety = 0.85
        /// Buffer (s) under which only throughput decides.
        package var bufferSafe = 6.0
        /// Buffer (s) at which the buffer rule reaches the top rendition.
        package var bufferTarget = 18.0
        /// Caps (a board profile's limits): renditions above them are never chosen.
        package var maxHeight: Int?
        package var maxFrameRate: Double?
        package init() {}
    }

    package struct Rendition: Sendable, Equatable {
        package var id: String
        package var bandwidth: Int
        package var height: Int?
        package var frameRate: Double?
        package init(id: String, bandwidth: Int, height: Int? = nil, frameRate: Double? = nil) {
            (self.id, self.bandwidth, self.height, self.frameRate) = (id, bandwidth, height, frameRate)
        }
    }

    package let options: Options
    /// Usable renditions, lowest bandwidth first (caps applied; never empty).
    package let renditions: [Rendition]
    /// A rendition pinned by the user (`selectedQuality`), nil: automatic.
    package var pinned: String?
    private var fast = EWMA(halfLife: 2), slow = EWMA(halfLife: 8)
    private var last: Double?

    /// `renditions` in any order; those above the caps are dropped (all but the lowest when
    /// every one is).
    package init(renditions: [Rendition], options: Options = Options()) {
        let sorted = renditions.sorted { $0.bandwidth < $1.bandwidth }
        let capped = sorted.filter { r in
            (options.maxHeight.map { max in (r.height ?? 0) <= max } ?? true)
                && (options.maxFrameRate.map { max in (r.frameRate ?? 0) <= max + 0.01 } ?? true)
        }
        self.renditions = capped.isEmpty ? Array(sorted.prefix(1)) : capped
        self.options = options
    }

    /// Bits per second the link is believed to carry, nil before any sample.
    package var estimate: Double? {
        guard let f = fast.value, let s = slow.value, let l = last else { return nil }
        return min(f, s, l)
    }

    /// Reports a finished download: `bytes` in `seconds`. `paced`: the server sent it as it was
    /// produced (low-latency chunks), so its rate is a lower bound of the link's. `weight`: how
    /// much the sample counts in the averages (default: its download time); a player passes the
    /// segment's media duration, so each segment counts alike however fast it came (as dash.js's
    /// per-segment window does) and a link that recovers is believed within a few segments.
    package mutating func downloaded(bytes: Int, seconds: Double, paced: Bool = false, weight: Double? = nil) {
        guard bytes > 0, seconds > 0 else { return }
        let bps = Double(bytes) * 8 / max(seconds, 0.0005)
        if paced, let e = estimate, bps <= e { return }  // says nothing new about the link
        let w = weight ?? seconds
        fast.add(bps, weight: w)
        slow.add(bps, weight: w)
        last = bps
    }

    /// The rendition to fetch next with `buffer` seconds buffered ahead. `segmentDuration`
    /// (live, a small buffer): the segment must also arrive before the buffer runs out (less
    /// 0.25 s), not only on average, e.g. with 1 s buffered a 2 s segment may use 3/8 of the
    /// link.
    package func choose(buffer: Double, segmentDuration: Double? = nil) -> Rendition {
        if let pinned, let r = renditions.first(where: { $0.id == pinned }) { return r }
        guard let estimate else { return renditions[0] }
        var budget = options.safety * estimate
        if let d = segmentDuration, d > 0, buffer < options.bufferSafe {
            budget = min(budget, options.safety * estimate * max(0, buffer - 0.25) / d)
        }
        let fits = renditions.last { Double($0.bandwidth) <= budget } ?? renditions[0]
        guard buffer > options.bufferSafe, renditions.count > 1 else { return fits }
        // BOLA-like: the buffer level maps linearly onto log-utility from bufferSafe (lowest) to
        // bufferTarget (highest); never more than the estimate sustains over the buffer held.
        let low = log(Double(renditions[0].bandwidth))
        let high = log(Double(renditions.last!.bandwidth))
        let x = min(1, (buffer - options.bufferSafe) / (options.bufferTarget - options.bufferSafe))
        let wanted = exp(low + x * (high - low))
        let byBuffer = renditions.last { Double($0.bandwidth) <= wanted * 1.0001 } ?? renditions[0]
        let sustainable = estimate * (1 + buffer / max(options.bufferTarget, 1))
        let capped =
            renditions.last { Double($0.bandwidth) <= sustainable && $0.bandwidth <= byBuffer.bandwidth }
            ?? renditions[0]
        return capped.bandwidth > fits.bandwidth ? capped : fits
    }

    /// Whether a download should be dropped: `bytes` of `total` (expected) received after
    /// `elapsed` seconds will not complete before the `buffer` runs dry (with a margin), and a
    /// lower rendition exists. Not judged in the first 0.5 s (dash.js's grace time): the first
    /// chunk's time says more about a busy box than about the link.
    package func shouldAbandon(bytes: Int, of total: Int, elapsed: Double, buffer: Double) -> Bool {
        guard elapsed > 0.5, bytes < total, renditions.count > 1 else { return false }
        let rate = Double(max(bytes, 1)) / elapsed
        let remaining = Double(total - bytes) / rate
        return remaining > max(0, buffer - 0.5)
    }
}

/// An exponentially weighted moving average with a half-life in units of weight (seconds of
/// download), corrected for its zero start (as Shaka's and dash.js's estimators are).
struct EWMA: Sendable {
    let alpha: Double
    private var estimate = 0.0
    private var totalWeight = 0.0

    init(halfLife: Double) { alpha = exp(log(0.5) / halfLife) }

    mutating func add(_ value: Double, weight: Double) {
        let a = pow(alpha, weight)
        estimate = value * (1 - a) + a * estimate
        totalWeight += weight
    }

    var value: Double? { totalWeight > 0 ? estimate / (1 - pow(alpha, totalWeight)) : nil }
}
