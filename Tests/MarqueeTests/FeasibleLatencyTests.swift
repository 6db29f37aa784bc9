import Testing

@testable import Marquee

@Suite struct FeasibleLatencyTests {
    @Test func raisesAtOnceAndComesDownOnlyAfterAWholeWindow() {
        var f = FeasibleLatency()
        #expect(f.target(requested: 3, current: 3, now: 0) == 3, "no evidence: the app's target")
        // Segments in hand 2.1 s after their start: 3 s is feasible, nothing moves.
        for t in 0..<10 { f.record(need: 2.1, at: Double(t)) }
        #expect(f.target(requested: 3, current: 3, now: 10) == 3)
        // Then 3.4 s late: raised at once to 3.4 + margin + headroom.
        f.record(need: 3.4, at: 11)
        #expect(abs(f.target(requested: 3, current: 3, now: 11) - 4.1) < 1e-9)
        // Back to 2.1 s: held while the late one is in the window, then down to the app's.
        for t in 12..<70 { f.record(need: 2.1, at: Double(t)) }
        #expect(abs(f.target(requested: 3, current: 4.1, now: 70) - 4.1) < 1e-9)
        #expect(f.target(requested: 3, current: 4.1, now: 72) == 3)
        // Implausible needs (a stall, a catch-up) are no evidence.
        f.record(need: 45, at: 73)
        #expect(f.target(requested: 3, current: 3, now: 73) == 3)
        // The app asking for more than feasible gets it.
        #expect(f.target(requested: 6, current: 3, now: 73) == 6)
    }

    /// A segment handed over whole at once after a late first byte (a venue proxy that checked
    /// a peer's bytes, after a lying peer's detour) needs only its decoding after it: in hand
    /// 2.63 s after its start plays at 3 s; the same first byte with a download after it (a
    /// link that took 0.4 s more) is given the first byte's margin.
    @Test func aSegmentWholeAtOnceNeedsLessThanTheFirstBytesMargin() {
        var f = FeasibleLatency()
        f.record(need: 2.59, inHand: 2.63, at: 0)
        #expect(f.target(requested: 3, current: 3, now: 0) == 3)
        #expect(abs(f.minimum(now: 0)! - (2.63 + FeasibleLatency.inHandMargin)) < 1e-9)
        f.record(need: 2.59, inHand: 3.2, at: 1)
        #expect(abs(f.minimum(now: 1)! - (2.59 + FeasibleLatency.margin)) < 1e-9)
        #expect(
            abs(f.target(requested: 3, current: 3, now: 1) - (2.59 + FeasibleLatency.margin + FeasibleLatency.headroom))
                < 1e-9)
        // An in-hand time before the first byte is no measure: the first byte's margin.
        var g = FeasibleLatency()
        g.record(need: 2.9, inHand: 2.0, at: 0)
        #expect(abs(g.minimum(now: 0)! - 3.4) < 1e-9)
    }

    /// A need a little beyond the raised target (a SegmentTimeline listed by a later reload)
    /// raises it by a whole step, which the session jumps, not by the few hundredths a rate
    /// would take half a minute to slew.
    @Test func aRaiseIsAtLeastAStep() {
        var f = FeasibleLatency()
        f.record(need: 3.25, at: 0)
        let first = f.target(requested: 3, current: 3, now: 0)
        #expect(abs(first - 3.95) < 1e-9)
        f.record(need: 3.46875, at: 2)  // 0.02 s beyond the first raise (its headroom, 0.2 s, within it)
        let second = f.target(requested: 3, current: first, now: 2)
        #expect(second - first >= PlaybackSession.raiseJump - 1e-9, "raised \(first) → \(second)")
        // A need within the headroom moves nothing.
        f.record(need: 3.625, at: 4)
        #expect(f.target(requested: 3, current: second, now: 4) == second)
        // Barely late from the start: the first raise is a step too.
        var g = FeasibleLatency()
        g.record(need: 2.5625, at: 0)
        let barely = g.target(requested: 3, current: 3, now: 0)
        #expect(barely >= 3.25 - 1e-9 && barely < 3.3, "raised to \(barely)")
    }
}

@Suite struct LatencyTargetTests {
    /// The one latency target of a session: a late arrival raises it (once, the raise kept for
    /// the next control step's jump), the app's request stays above what is feasible, a timeline
    /// that moved forgets the arrivals measured on the old clock and ignores the next two
    /// segments' worth, and without sync the target is the app's alone.
    @Test func arrivalsRequestsAndARestart() {
        var t = LatencyTarget(requested: 3, follows: true)
        #expect(t.arrived(need: 2.0, at: 0) == nil && t.current == 3)
        let raise = t.arrived(need: 3.4, at: 1)
        #expect(raise == LatencyTarget.Change(before: 3, after: t.current, requested: 3) && abs(t.current - 4.1) < 1e-9)
        #expect(abs(t.takeRaise() - 1.1) < 1e-9 && t.takeRaise() == 0, "the raise is taken once")
        // The app asks for less than is feasible: it gets the feasible latency (3.9, no headroom).
        t.request(2, now: 2)
        #expect(t.requested == 2 && abs(t.current - 3.9) < 1e-9)
        t.request(6, now: 2)
        #expect(t.current == 6)
        // The timeline moved: back to the app's, and arrivals in the next 4 s are no evidence.
        t.request(3, now: 3)
        #expect(t.restart(at: 10, after: 4) == LatencyTarget.Change(before: 3.9, after: 3, requested: 3))
        #expect(t.arrived(need: 5, at: 12) == nil && t.current == 3)
        #expect(t.arrived(need: 5, at: 14.5) != nil && t.current > 5)
        #expect(t.restart(at: 20, after: 4) != nil && t.restart(at: 21, after: 4) == nil, "nothing to report twice")
        // Sync off: the app's target, whatever arrives.
        var off = LatencyTarget(requested: 3, follows: false)
        #expect(off.arrived(need: 9, at: 0) == nil && off.current == 3)
        off.request(1, now: 0)
        #expect(off.current == 1)
    }
}

@Suite struct LearnedLatencyTargetTests {
    /// A session of a stream an earlier one had to raise (a late server) starts at that raise:
    /// no lower until a whole window of arrivals allows it, no higher on a need it covers; one
    /// that was not raised (or without sync) starts at the app's target.
    @Test func aLearnedTargetHoldsForAWindowThenComesDown() {
        var t = LatencyTarget(requested: 3, follows: true, learned: 4.37, now: 0)
        #expect(abs(t.current - 4.37) < 1e-9 && t.requested == 3)
        #expect(t.arrived(need: 3.6, at: 2) == nil, "a need it covers changes nothing: \(t.current)")
        #expect(t.adjust(now: 30) == nil && abs(t.current - 4.37) < 1e-9, "held within the window")
        // A window of needs of 1.5 s: down to the app's 3 s once the learned need is out of it.
        for second in stride(from: 31.0, through: 95, by: 2) { _ = t.arrived(need: 1.5, at: second) }
        #expect(t.current == 3, "came down to \(t.current)")
        #expect(LatencyTarget(requested: 3, follows: true, learned: 3, now: 0).current == 3)
        #expect(LatencyTarget(requested: 3, follows: false, learned: 5, now: 0).current == 3)
    }
}
