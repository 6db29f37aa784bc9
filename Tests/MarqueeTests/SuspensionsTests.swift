import Testing

@testable import Marquee

/// The player's own freezes (``Suspensions``) and what they leave of a segment's arrival: a
/// 2 s segment starting at monotonic 100, available at its end (102), asked for then.
@Suite struct SuspensionsTests {
    /// Beats every 0.1 s, then one 4 s late: a window from when it was due to when it came.
    /// A beat a little late (a busy machine) is none.
    @Test func aBeatFarLaterThanDueIsAWindow() {
        var s = Suspensions()
        var t = 100.0
        for _ in 0..<10 {
            #expect(s.beat(at: t, every: 0.1) == nil)
            t += 0.1
        }
        #expect(s.beat(at: t + 0.3, every: 0.1) == nil, "0.3 s late: scheduling, not a freeze")
        let window = s.beat(at: t + 4.4, every: 0.1)
        #expect(
            window.map { abs($0.from - (t + 0.4)) < 1e-9 && abs($0.to - (t + 4.4)) < 1e-9 } == true,
            "\(String(describing: window))")
        #expect(abs(s.frozen(from: 0, to: 200, now: t + 4.5) - 4) < 1e-9)
        #expect(abs(s.frozen(from: t + 2.4, to: t + 10, now: t + 4.5) - 2) < 1e-9)
        #expect(s.frozen(from: t + 4.4, to: t + 10, now: t + 4.5) == 0)
    }

    /// A freeze over the segment's availability: measured 5.1 s after its start, of which 3 s
    /// (102 to 105) the player was stopped. Charged: 2.1 s, the app's 3 s target holds. The
    /// same when the arrival is measured before the control step beat again (the gap still open).
    @Test func theFreezeAfterAvailabilityIsNotCharged() {
        let measured = SegmentArrival(available: 2, need: 5.1, inHand: 5.15)
        var closed = Suspensions()
        closed.beat(at: 100.9, every: 0.1)
        closed.beat(at: 105.0, every: 0.1)
        var open = Suspensions()
        open.beat(at: 100.9, every: 0.1)
        for s in [closed, open] {
            let charged = s.discount(measured, at: 105.15)
            #expect(charged.need < 2.15 && charged.inHand < 2.2, "\(charged)")
            var target = LatencyTarget(requested: 3, follows: true)
            #expect(target.arrived(need: charged.need, inHand: charged.inHand, at: 105.15) == nil)
            #expect(target.current == 3)
            // Undiscounted, the freeze was taken for a late server.
            var fooled = LatencyTarget(requested: 3, follows: true)
            #expect(fooled.arrived(need: measured.need, inHand: measured.inHand, at: 105.15) != nil)
        }
    }

    /// A freeze that ended before the segment was available delayed nothing: a late server's
    /// arrival is charged whole and raises the target as before; so is any arrival without a freeze.
    @Test func aLateServerIsStillCharged() {
        var s = Suspensions()
        s.beat(at: 100.1, every: 0.1)
        s.beat(at: 101.5, every: 0.1)  // frozen 100.2…101.5, before the segment was available
        for t in stride(from: 101.6, through: 103.3, by: 0.1) { s.beat(at: t, every: 0.1) }
        let late = SegmentArrival(available: 2, need: 3.3, inHand: 3.35)  // 1.2 s after availability
        #expect(s.discount(late, at: 103.35) == late)
        var target = LatencyTarget(requested: 3, follows: true)
        let change = target.arrived(need: late.need, inHand: late.inHand, at: 103.35)
        #expect(change.map { $0.after > 3.7 } == true, "\(String(describing: change))")
        #expect(Suspensions().discount(late, at: 103.35) == late)
    }

    /// A freeze while the request was in flight (after it was sent, before its first byte) is
    /// the player's too: only the server's part of the wait is charged.
    @Test func aFreezeDuringTheRequestIsNotCharged() {
        var s = Suspensions()
        s.beat(at: 102.0, every: 0.1)
        s.beat(at: 112.1, every: 0.1)  // frozen 102.1…112.1
        let measured = SegmentArrival(available: 2, need: 12.2, inHand: 12.25)
        let charged = s.discount(measured, at: 112.25)
        #expect(abs(charged.need - 2.2) < 1e-9 && abs(charged.inHand - 2.25) < 1e-9, "\(charged)")
        // The window is forgotten after ``Suspensions/keep``: a need that long is no evidence anyway.
        s.beat(at: 112.1 + Suspensions.keep + 1, every: 0.1)
        #expect(s.windows.count == 1 && s.windows[0].from > 112.15, "\(s.windows)")
    }
}
