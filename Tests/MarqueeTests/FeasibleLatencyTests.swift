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
}
