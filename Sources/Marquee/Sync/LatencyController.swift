/// How the latency controller steers (``PlayerOptions/sync``).
public struct SyncOptions: Sendable, Equatable {
    /// Slowest playback rate used to add latency. Default 0.97.
    public var minRate: Double = 0.97
    /// Fastest playback rate used to catch up. Default 1.03.
    public var maxRate: Double = 1.03
    /// Rate per second of latency error: `rate = 1 + gain × (latency − target)` (ExoPlayer's
    /// 0.1). Default 0.1.
    package var gain: Double = 0.1
    /// Steering starts when the error exceeds this (seconds) and stops once it is under a
    /// quarter of it. Default 0.020.
    package var deadBand: Double = 0.020
    /// Errors larger than this (seconds) are corrected at once by a jump instead of by rate:
    /// forward by dropping late media, back by holding the picture. Default 1.
    package var jumpThreshold: Double = 1.0
    /// Seconds between server-clock measurements while playing live. After a measurement that
    /// moved the clock less than 2 ms the next waits twice as long (up to 10 × this); a larger
    /// move brings it back to this. Default 30.
    package var resyncInterval: Double = 30

    /// Options with the given values (an app changes ``PlayerOptions/sync``'s rates in place);
    /// rates are playback-rate factors, `deadBand`,
    /// `jumpThreshold` and `resyncInterval` are seconds. ``Player/init(options:router:logger:)``
    /// checks them: rates within 0.5…1 and 1…2, gain 0 < g ≤ 10, dead band 0.001…1 s, jump
    /// threshold above the dead band and ≤ 300 s, resync interval 1…86400 s.
    package init(
        minRate: Double = 0.97, maxRate: Double = 1.03, gain: Double = 0.1, deadBand: Double = 0.020,
        jumpThreshold: Double = 1.0,
        resyncInterval: Double = 30
    ) {
        self.resyncInterval = resyncInterval
        self.minRate = minRate
        self.maxRate = maxRate
        self.gain = gain
        self.deadBand = deadBand
        self.jumpThreshold = jumpThreshold
    }

    func validated() throws(PlayerError) -> SyncOptions {
        guard minRate >= 0.5, minRate <= 1, maxRate >= 1, maxRate <= 2 else {
            throw PlayerError(.invalidOptions, "sync rates \(minRate)…\(maxRate) must lie in 0.5…1 and 1…2")
        }
        guard resyncInterval >= 1, resyncInterval <= 86_400 else {
            throw PlayerError(.invalidOptions, "sync resyncInterval \(resyncInterval) s is outside 1…86400")
        }
        guard gain > 0, gain <= 10, deadBand >= 0.001, deadBand <= 1, jumpThreshold > deadBand, jumpThreshold <= 300
        else {
            throw PlayerError(
                .invalidOptions,
                "sync gain \(gain), deadBand \(deadBand) s or jumpThreshold \(jumpThreshold) s out of range")
        }
        return self
    }
}

/// Keeps the presented position at the target latency: a pure state machine, fed with
/// measurements, answering with what the core's schedule should become.
///
/// The error is `latency − target` (positive: behind, too far from live). Small errors are
/// steered by playback rate `base × (1 + gain × error)`, `base` the rate that holds the latency
/// (1, or a drifting media clock's ``MediaClockDrift/rate``), clamped to `[minRate, maxRate]`
/// (the audio is time-stretched, pitch kept); steering starts outside ``SyncOptions/deadBand``
/// and stops inside a quarter of it, so a settled stream without drift plays at exactly rate 1
/// (bit-exact audio). Off rate 1 (a drift measured, the tempo stage running anyway) the band is
/// a quarter as wide: it starts outside a quarter and stops inside a sixteenth. An
/// error beyond ``SyncOptions/jumpThreshold`` is removed by a jump. The rate only ever pulls
/// the error toward zero and shrinks with it, so convergence after a rebuffer or a target
/// change does not overshoot.
struct LatencyController: Sendable, Equatable {
    enum Action: Sendable, Equatable {
        /// Nothing to change.
        case hold
        /// Re-anchor the schedule at the presented position with this rate.
        case steer(rate: Double)
        /// Re-anchor the schedule at the target position, rate 1.
        case jump(error: Double)
    }

    var options: SyncOptions
    /// The rate the schedule runs at now.
    private(set) var rate: Double = 1
    private(set) var steering = false
    /// The base rate of the last step (``update(now:latency:target:baseRate:)``).
    private(set) var baseRate: Double = 1
    /// After a jump, measurements are ignored until then (monotonic seconds): the pipeline
    /// drops or waits its way to the new position first.
    private(set) var settleUntil = -Double.infinity

    /// How long a jump is given to take effect.
    static let settleTime = 1.0

    /// Rates closer than this to the current one are not worth re-anchoring the schedule for.
    static let rateStep = 0.0005

    init(options: SyncOptions = SyncOptions()) {
        self.options = options
    }

    /// One control step at monotonic time `now`. `latency` is the measured latency (server
    /// time − presented media time), `target` the wanted one, both in seconds. `baseRate`: the
    /// rate that holds the latency with no error (the stream's media clock against the wall
    /// clock, ``MediaClockDrift/rate``; 1 without drift): settled, the schedule runs at it, and
    /// steering scales it by `1 + gain × error`.
    mutating func update(now: Double, latency: Double, target: Double, baseRate: Double = 1) -> Action {
        let error = latency - target
        guard error.isFinite, now >= settleUntil else { return .hold }
        if abs(error) > options.jumpThreshold {
            steering = false
            rate = 1
            settleUntil = now + Self.settleTime
            return .jump(error: error)
        }
        let base = min(
            options.maxRate, max(options.minRate, baseRate.isFinite ? (baseRate * 10_000).rounded() / 10_000 : 1))
        // A new base rate (a drift measured): what built up before it is steered out too.
        let newBase = abs(base - self.baseRate) >= Self.rateStep
        self.baseRate = base
        // Off rate 1 already (a drifting stream: the tempo stage runs anyway), the band is a
        // quarter as wide: a drift estimate that moves a little at each refit is followed, not
        // left to build up to the full band.
        let band = base == 1 ? options.deadBand : options.deadBand / 4
        if !steering, abs(error) > band || (newBase && abs(error) > options.deadBand / 4) {
            steering = true
        } else if steering, abs(error) < band / 4 {
            steering = false
        }
        var wanted = base
        if steering {
            wanted = min(options.maxRate, max(options.minRate, base * (1 + options.gain * error)))
            wanted = (wanted * 10_000).rounded() / 10_000
            // Never the base rate while steering (no correction), never the wrong way.
            wanted =
                error > 0
                ? min(options.maxRate, max(wanted, base + Self.rateStep))
                : max(options.minRate, min(wanted, base - Self.rateStep))
        }
        let changed = wanted == 1 ? rate != 1 : abs(wanted - rate) >= Self.rateStep
        guard changed else { return .hold }
        rate = wanted
        return .steer(rate: wanted)
    }

    /// A jump was made at monotonic `now` without the controller asking (the target was
    /// raised): rate 1, and measurements wait for it to take effect.
    mutating func jumped(now: Double) {
        steering = false
        rate = 1
        settleUntil = now + Self.settleTime
    }

    /// Forget the steering state (after a jump done elsewhere, a reload).
    mutating func reset() {
        steering = false
        rate = 1
        settleUntil = -.infinity
    }
}
