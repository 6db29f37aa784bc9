import Foundation
import Testing

@testable import MarqueeStreaming

@Suite struct ClockSyncTests {
    func sample(_ offset: Double, rtt: Double) -> ServerClock {
        ServerClock(offset: offset, source: "t", roundTrip: rtt)
    }

    @Test func slowAnswersAreRejectedAndTheMedianKept() throws {
        // Four prompt answers around 100.000 s and one that waited 80 ms in a queue (its
        // midpoint is 40 ms off).
        let taken = [
            sample(100.0004, rtt: 0.0011), sample(99.9998, rtt: 0.0009), sample(100.040, rtt: 0.080),
            sample(100.0001, rtt: 0.0010), sample(100.0010, rtt: 0.0030),
        ]
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

@Suite struct SNTPPacketTests {
    @Test func timestampsRoundTripAndRepliesEchoTheRequest() throws {
        let t = 1_795_330_524.123456
        #expect(abs(SNTP.unix(SNTP.timestamp(t)) - t) < 1e-6)
        #expect(SNTP.timestamp(0) >> 32 == 2_208_988_800)
        let request = SNTP.request(transmit: SNTP.timestamp(t))
        #expect(request.count == 48 && request[0] & 7 == 3)
        let reply = try #require(SNTP.reply(to: request, received: t + 10, transmitted: t + 10.001))
        #expect(Array(reply[24..<32]) == Array(request[40..<48]), "originate = our transmit")
        let parsed = try #require(SNTP.parseReply(reply))
        #expect(abs(parsed.received - (t + 10)) < 1e-6 && abs(parsed.transmitted - (t + 10.001)) < 1e-6)
        // Not answers: a request, a short packet, a kiss-of-death (stratum 0).
        #expect(SNTP.parseReply(request) == nil)
        #expect(SNTP.parseReply(Array(reply.prefix(40))) == nil)
        var kiss = reply
        kiss[1] = 0
        #expect(SNTP.parseReply(kiss) == nil)
        #expect(SNTP.reply(to: reply, received: t, transmitted: t) == nil, "a server does not answer a server")
    }
}
