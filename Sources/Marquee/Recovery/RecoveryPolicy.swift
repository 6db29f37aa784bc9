/// When to reload a stalled stream: a pure state machine fed with the time and whether playback
/// is stalled now.
///
/// A stall that lasts the current delay triggers a reload; each reload doubles the delay, from
/// `minDelay` up to `maxDelay` (10 → 20 → 40 → 80 → 90 s with the defaults), and
/// ``stableTime`` of uninterrupted playback resets it to `minDelay`.
struct RecoveryPolicy: Sendable, Equatable {
    let minDelay: Double
    let maxDelay: Double
    /// Seconds of playback without a stall after which the delay starts again at `minDelay`.
    let stableTime: Double
    /// The stall time that triggers the next reload.
    private(set) var delay: Double
    private var stalledSince: Double?
    private var playingSince: Double?

    init(minDelay: Double = 10, maxDelay: Double = 90, stableTime: Double = 30) {
        self.minDelay = minDelay
        self.maxDelay = max(minDelay, maxDelay)
        self.stableTime = stableTime
        delay = minDelay
    }

    /// When a stall that goes on triggers the next reload (monotonic seconds); nil while not stalled.
    var reloadDue: Double? { stalledSince.map { $0 + delay } }

    /// A reload has just finished at `now` (it may have taken a while, waiting on a server):
    /// a stall that goes on is counted from here, so the new session gets the whole delay.
    mutating func reloaded(now: Double) {
        if stalledSince != nil { stalledSince = now }
    }

    /// One step at monotonic time `now`; returns `true` when the stream should be reloaded now.
    mutating func update(now: Double, stalled: Bool) -> Bool {
        guard stalled else {
            stalledSince = nil
            if playingSince == nil { playingSince = now }
            if let since = playingSince, now - since >= stableTime { delay = minDelay }
            return false
        }
        playingSince = nil
        guard let since = stalledSince else {
            stalledSince = now
            return false
        }
        guard now - since >= delay else { return false }
        stalledSince = now  // the reload's own time counts as stalled until playback resumes
        delay = min(delay * 2, maxDelay)
        return true
    }
}
