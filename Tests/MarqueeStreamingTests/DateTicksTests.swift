import Foundation
import Testing

@testable import MarqueeStreaming

/// ``DateTicks`` against a simulated server whose clock runs `truth` seconds ahead of the
/// monotonic clock, answering each request halfway through its round trip with the whole second
/// its clock read then.
@Suite struct DateTicksTests {
    let truth = 1_795_330_524.371_9  // server Unix seconds − monotonic seconds

    /// An answer to a request sent at `sent` with round trip `rtt`, stamped halfway.
    func answer(_ ticks: inout DateTicks, sent: Double, rtt: Double, stale: Double = 0) {
        let stamped = sent + rtt / 2 + truth - stale
        ticks.add(date: Date(timeIntervalSince1970: stamped.rounded(.down)), sent: sent, headReceived: sent + rtt)
    }

    @Test func oneAnswerLeavesItsSecondAndTheTruthInside() throws {
        var ticks = DateTicks()
        answer(&ticks, sent: 100.25, rtt: 0.004)
        let clock = try #require(ticks.clock(source: "t"))
        #expect(abs(clock.roundTrip! - 1.004) < 1e-6, "\(clock)")  // (offsets near 1.8e9 s: 0.2 µs steps)
        let i = try #require(ticks.interval)
        #expect(i.low <= truth && truth <= i.high)
    }

    @Test func answersTimedAtTheTicksNarrowItToTheRoundTrip() throws {
        var ticks = DateTicks()
        var now = 100.25
        answer(&ticks, sent: now, rtt: 0.004)
        var count = 1
        // Each probe sent when the next tick, as placed so far, comes halfway through its trip,
        // until what is left is within 2 ms of the round trip (it cannot be cut finer): each
        // halves it, less the round trip, and the oldest widen by their age (`drift`).
        while let width = ticks.interval.map({ $0.high - $0.low }), width > 0.006, count < 20 {
            now = try #require(ticks.nextProbe(after: now + 0.004, roundTrip: 0.004))
            answer(&ticks, sent: now, rtt: 0.004)
            count += 1
        }
        let i = try #require(ticks.interval)
        #expect(i.high - i.low <= 0.006 && count <= 12, "\(count) answers: \(i.high - i.low) s wide")
        #expect(i.low <= truth && truth <= i.high, "\(i.low)…\(i.high) against \(truth)")
        #expect(i.agreeing == count)
    }

    @Test func answersAtAFixedCadenceLeaveMostOfTheSecond() throws {
        // A manifest reloaded every 2 s exactly: each answer at the same point of the server's
        // second tells nothing new (what the probes are for).
        var ticks = DateTicks()
        for k in 0..<20 { answer(&ticks, sent: 100.25 + 2 * Double(k), rtt: 0.004) }
        let i = try #require(ticks.interval)
        #expect(i.high - i.low > 0.9)
    }

    @Test func aStaleAnswerIsOutvoted() throws {
        var ticks = DateTicks()
        var now = 100.25
        answer(&ticks, sent: now, rtt: 0.004)
        for k in 0..<12 {
            now = try #require(ticks.nextProbe(after: now + 0.004, roundTrip: 0.004))
            // The fourth from a cache that stamped it 5 s before.
            answer(&ticks, sent: now, rtt: 0.004, stale: k == 3 ? 5 : 0)
        }
        let i = try #require(ticks.interval)
        #expect(i.low <= truth && truth <= i.high && i.high - i.low < 0.01, "\(i)")
        #expect(i.agreeing == 12)
    }

    @Test func oddInputIsIgnored() {
        var ticks = DateTicks()
        ticks.add(date: Date(timeIntervalSince1970: .nan), sent: 1, headReceived: 2)
        ticks.add(date: Date(timeIntervalSince1970: 5), sent: 2, headReceived: 1)
        #expect(ticks.interval == nil && ticks.nextProbe(after: 0, roundTrip: 0.01) == nil)
        for k in 0..<100 { answer(&ticks, sent: Double(k) * 1.37, rtt: 0.01) }
        #expect(ticks.bounds.count == DateTicks.kept)
    }
}
