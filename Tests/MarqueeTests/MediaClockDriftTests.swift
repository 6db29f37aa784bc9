import Foundation
import Testing

@testable import Marquee

/// The drift of a media clock from its segments' dates, and the latency it lets the controller
/// hold: a model of an encoder whose media clock runs fast or slow against the wall clock that
/// dates its segments (2 s of media each, dates rounded to the millisecond as in a playlist).
@Suite struct MediaClockDriftTests {
    /// Segment k holds media [2k, 2k + 2) and is dated `k · 2 / mediaRate` (wall seconds).
    static func date(_ k: Int, mediaRate: Double) -> Double {
        (Double(k) * 2 / mediaRate * 1000).rounded() / 1000
    }

    @Test(arguments: [1.005, 0.995, 1.001, 1.0])
    func theFittedRateIsTheMediaClocks(mediaRate: Double) {
        var drift = MediaClockDrift()
        drift.rebase(at: 0)
        for k in 1...30 { drift.record(position: Double(k) * 2, start: Self.date(k, mediaRate: mediaRate)) }
        #expect(abs(drift.rate - mediaRate) < 5e-5, "rate \(drift.rate), media clock \(mediaRate)")
        // Where segment 40 will be: its date, to a millisecond.
        #expect(abs(drift.presentation(of: 80) - Self.date(40, mediaRate: mediaRate)) < 0.002)
        #expect(abs(drift.position(of: drift.presentation(of: 80)) - 80) < 1e-9)
    }

    @Test func aRebaseKeepsTheSlopeAndStartsAgainFromZero() {
        var drift = MediaClockDrift()
        drift.rebase(at: 0)
        for k in 1...20 { drift.record(position: Double(k) * 2, start: Self.date(k, mediaRate: 1.005)) }
        let rate = drift.rate
        drift.rebase(at: 1000)  // an encoder restart measured again at 1000
        #expect(drift.rate == rate)
        #expect(drift.correction(at: 1000) == 0)
        #expect(abs(drift.correction(at: 1010) - (1 / 1.005 - 1) * 10) < 1e-3)
    }

    @Test func aDateFarOffTheTimestampsIsNotDrift() {
        var drift = MediaClockDrift()
        drift.rebase(at: 0)
        for k in 1...12 { drift.record(position: Double(k) * 2, start: Double(k) * 2) }
        drift.record(position: 26, start: 26 + 30)  // an unannounced splice
        #expect(drift.samples.count == 13)
        #expect(abs(drift.correction(at: 26)) < 1e-9)
    }

    /// Closed loop: the controller measures the latency through the drift model (fed a sample
    /// per segment presented) and steers around its rate; a rate is heard 0.25 s after it is set.
    /// Without the model the latency against the dates would run away (7 ms/s at 0.5 %).
    @Test(arguments: [1.005, 0.995, 1.002, 0.999])
    func theLatencyHoldsAgainstTheDates(mediaRate: Double) {
        var controller = LatencyController()
        var drift = MediaClockDrift()
        drift.rebase(at: 0)
        let dt = 0.04
        let lag = Int(0.25 / dt)
        var position = 0.0
        var wall = 3.0  // presented media position; wall time (dates: latency 3 at start)
        var pending = [Double](repeating: 1, count: lag)
        var nextSample = 1
        var errors: [(wall: Double, error: Double)] = []
        var jumps = 0
        for _ in 0..<Int(240 / dt) {
            while Double(nextSample) * 2 <= position + 4 {  // fetched ahead of the presented position
                drift.record(position: Double(nextSample) * 2, start: Self.date(nextSample, mediaRate: mediaRate))
                nextSample += 1
            }
            errors.append((wall, wall - position / mediaRate - 3))  // against the true date of what is presented
            let measured = wall - drift.presentation(of: position)
            let action = controller.update(now: wall, latency: measured, target: 3, baseRate: drift.rate)
            if case .jump = action { jumps += 1 }
            pending.append(controller.rate)
            position += pending.removeFirst() * dt
            wall += dt
        }
        let settled = errors.filter { $0.wall > 60 }.map { abs($0.error) }
        #expect(jumps == 0)
        #expect(settled.max()! < 0.02, "latency error up to \(settled.max()!) s after the first minute")
        #expect(abs(controller.rate - mediaRate) < 0.001 || controller.steering, "settled at rate \(controller.rate)")
    }
}

extension MediaClockDriftTests {
    /// Dates rounded to the millisecond and a first timestamp a frame off now and then: no drift
    /// is read into them, so such a stream plays at exactly rate 1.
    @Test func roundingIsNotDrift() {
        var drift = MediaClockDrift()
        drift.rebase(at: 0)
        for k in 1...150 {
            let jitter = [0, 0.0005, -0.0004, 0.0333, 0][k % 5]
            drift.record(position: Double(k) * 2 + jitter, start: Double(k) * 2)
            #expect(drift.rate == 1, "rate \(drift.rate) after \(k) segments")
        }
    }
}
