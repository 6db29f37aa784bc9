import Foundation
import Testing

@testable import MarqueeStreaming

@Suite struct ClockSyncTests {
    func sample(_ offset: Double, rtt: Double) -> ServerClock { ServerClock(offset: offset, source: "t", roundTrip: rtt) }

    @Test func slowAnswersAreRejectedAndTheMedianKept() throws {
        // Four prompt answers around 100.000 s and one that waited 80 ms in a queue (its
        // midpoint is 40 ms off).
        let taken = [sample(100.0004, rtt: 0.0011), sample(99.9998, rtt: 0.0009), sample(100.040, rtt: 0.080),
                     sample(100.0001, rtt: 0.0010), sample(100.0010, rtt: 0.0030)]
        let clock = try #require(ClockSync.combine(taken))
        #expect(abs(clock.offset - 100.0004) < 1e-9, "median of the four prompt ones, got \(clock.offset)")
        #expect(clock.roundTrip == 0.0009)
        // The best-RTT-only rule would have taken 99.9998; one slow sample alone is still used.
        #expect(ClockSync.combine([sample(5, rtt: 0.2)])?.offset == 5)
        #expect(ClockSync.combine([]) == nil)
    }

    @Test func sharedClockIsReplaceable() {
        let shared = SharedServerClock(ServerClock(offset: 10, source: "a"))
        shared.current = ServerClock(offset: 20, source: "b")
        #expect(shared.offset == 20)
        #expect(abs(shared.now().timeIntervalSince1970 - (Monotonic.now() + 20)) < 0.01)
    }
}
