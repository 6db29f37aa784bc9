/// When the player itself was not running: its process stopped (SIGSTOP, a paused VM), a driver
/// call that hung it, a CPU that gave it no time. Neither clock tells: `CLOCK_MONOTONIC` and
/// `CLOCK_BOOTTIME` both go on through a SIGSTOP. What does is a loop of the player's own that
/// wakes far later than it asked: the session's control step beats every
/// ``PlaybackSession/controlInterval`` (``beat(at:)``), and a beat more than ``threshold`` later
/// than due closes a *window*, from when the beat was due to when it came. A gap still open (no
/// beat yet since the player ran again: the feeder that measures an arrival may run before the
/// control step does) counts as well (``frozen(from:to:now:)``).
///
/// A segment's arrival is measured from its presentation start (``FeasibleLatency``): the time of
/// such a window after the segment was available (per the manifest: the feeder asks no sooner)
/// is the player's, never charged to the server (``discount(_:at:)``). What is left is what the
/// server took: to list the segment, and from the request to its bytes.
struct Suspensions: Sendable, Equatable {
    /// Seconds a beat may come later than due before the time is counted as the player's (a
    /// busy machine's scheduling is well within it; a shorter freeze costs at most this much
    /// raise of the target).
    static let threshold = 0.5
    /// Seconds of windows kept: as far back as an arrival can reach (``FeasibleLatency/plausibleNeed``).
    static let keep = FeasibleLatency.plausibleNeed + 10

    /// A stretch of monotonic time the player was not running.
    struct Window: Sendable, Equatable {
        var from: Double
        var to: Double
        var seconds: Double { to - from }
    }

    /// The windows of the last ``keep`` seconds, oldest first.
    private(set) var windows: [Window] = []
    /// The last beat: when it came and the seconds to the next one (nil before the first).
    private(set) var last: (at: Double, every: Double)?

    init() {}

    static func == (a: Self, b: Self) -> Bool {
        a.windows == b.windows && a.last?.at == b.last?.at && a.last?.every == b.last?.every
    }

    /// The loop beat at monotonic `now` and beats again in `every` seconds. Returns the window
    /// it closed, when it came more than ``threshold`` late.
    @discardableResult
    mutating func beat(at now: Double, every: Double) -> Window? {
        defer { last = (now, every) }
        windows.removeAll { $0.to < now - Self.keep }
        guard let open = openWindow(now: now) else { return nil }
        windows.append(open)
        return open
    }

    /// The beats stop (the loop ends): no gap is open until the next first beat.
    mutating func stop() { last = nil }

    /// The gap since the last beat, when it is more than ``threshold`` overdue at `now`.
    private func openWindow(now: Double) -> Window? {
        guard let last else { return nil }
        let due = last.at + last.every
        return now - due > Self.threshold ? Window(from: due, to: now) : nil
    }

    /// Seconds of monotonic `from`…`to` the player was not running, as known at `now` (a gap
    /// still open included).
    func frozen(from: Double, to: Double, now: Double) -> Double {
        guard to > from else { return 0 }
        let all = windows + (openWindow(now: now).map { [$0] } ?? [])
        return all.reduce(0) { $0 + max(0, min(to, $1.to) - max(from, $1.from)) }
    }

    /// A live segment's arrival measured at monotonic `now` (when it was whole), with the time
    /// the player was not running after the segment was available taken out.
    func discount(_ arrival: SegmentArrival, at now: Double) -> SegmentArrival {
        let start = now - arrival.inHand  // the arrival's seconds count from here (monotonic)
        let available = start + arrival.available
        var discounted = arrival
        discounted.need -= frozen(from: available, to: start + arrival.need, now: now)
        discounted.inHand -= frozen(from: available, to: now, now: now)
        return discounted
    }
}

/// A live segment fetched as soon as it was due, in seconds from its presentation start (from
/// when its listing came, for a SegmentTimeline reloaded after a miss): when the manifest said
/// it was available (the feeder asked no sooner), when its first byte came (the *need*,
/// ``FeasibleLatency``) and when it was whole in hand.
struct SegmentArrival: Sendable, Equatable {
    var available: Double
    var need: Double
    var inHand: Double
}
