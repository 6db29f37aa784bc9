import Foundation
import Testing

@testable import Marquee

/// ``LiveEdgeRate`` against simulated listings: an encoder whose clock runs `ppm` fast lists the
/// segment ending at media time `e` at server time `e / rate` (+ the packager's delay), and
/// each probe brackets that moment between two answers 50 ms apart, the moment falling anywhere
/// in the bracket.
@Suite struct LiveEdgeRateTests {
    /// Feeds `seconds` of 2-second segments from server time 600 on; `late` returns extra delay
    /// for segment k, `bracket` the width of its probe's bracket. Returns the estimator and the server time reached.
    func listings(
        ppm: Double, seconds: Double, delay: Double = 0.03, seed: UInt64 = 1, late: (Int) -> Double = { _ in 0 },
        check: (LiveEdgeRate, Double) -> Void = { _, _ in }, bracket: (Int) -> Double = { _ in 0.05 }
    ) -> (LiveEdgeRate, Double) {
        let rate = 1 + ppm / 1_000_000
        var edge = LiveEdgeRate()
        var random = Mutator(state: seed, tokens: [])  // (FuzzSmokeTests' seeded SplitMix64)
        var end = (600 * rate / 2).rounded(.up) * 2
        var k = 0
        var time = 600.0
        while time < 600 + seconds {
            time = end / rate + delay + late(k)
            let wide = bracket(k)
            let before = time - (Double(random.next() >> 11) / Double(UInt64(1) << 53)) * wide
            edge.record(end: end, listedAt: before + wide, notListedAt: before)
            check(edge, time)
            end += 2
            k += 1
        }
        return (edge, time)
    }

    @Test func anEdgeOnTheClockIsNoDrift() {
        for seed in UInt64(1)...5 {
            var everActive = false
            let (edge, _) = listings(ppm: 0, seconds: 900, seed: seed) { _ in
                0
            } check: { e, _ in
                everActive = everActive || e.isActive
            }
            #expect(!everActive && edge.slope == 0 && edge.clockLead == nil, "seed \(seed): slope \(edge.slope)")
        }
    }

    @Test(arguments: [5000.0, -5000.0, 1000.0, -1000.0])
    func aDriftingEdgeIsMeasured(ppm: Double) throws {
        var activeAt: Double?
        let (edge, end) = listings(ppm: ppm, seconds: 600) { _ in
            0
        } check: { e, t in
            if e.isActive, activeAt == nil { activeAt = t - 600 }
        }
        let found = try #require(activeAt, "\(ppm) ppm: never found")
        // 0.5 % within a minute, 0.1 % within three.
        #expect(found < (abs(ppm) >= 5000 ? 60 : 180), "\(ppm) ppm: found after \(found) s")
        let rate = 1 + ppm / 1_000_000
        #expect(abs(edge.slope - (rate - 1)) < abs(rate - 1) * 0.03, "\(ppm) ppm: slope \(edge.slope)")
        // The lead now (the listing's newest end minus the server time; the packager lists
        // 30 ms after the encoder made it), within a few ms.
        let truth = (rate - 1) * (end - 0.03) - 0.03
        #expect(abs(edge.lead(at: end) - truth) < 0.005, "\(ppm) ppm: lead \(edge.lead(at: end)), truth \(truth)")
        let next = ((end - 0.03) * rate / 2).rounded() * 2 + 2
        let expected = try #require(edge.expectedListing(of: next))
        #expect(
            abs(expected - (next / rate + 0.03)) < 0.01,
            "\(ppm) ppm: expected at \(expected), listed at \(next / rate + 0.03)")
    }

    /// A loaded box: every other probe's answers came slowly, bracketing the listing within
    /// 0.3 s instead of 0.05. The narrow brackets count for more: 90 s in, the lead followed is
    /// within 12 ms of the truth (measured over these seeds: 9.2 ms at worst; every sample
    /// counted alike, 21.8 ms).
    @Test(arguments: [5000.0, -5000.0])
    func wideBracketsCountLess(ppm: Double) throws {
        let rate = 1 + ppm / 1_000_000
        var worst = 0.0
        for seed in UInt64(1)...8 {
            let (edge, end) = listings(ppm: ppm, seconds: 90, seed: seed, bracket: { $0 % 2 == 0 ? 0.3 : 0.05 })
            try #require(edge.isActive, "\(ppm) ppm, seed \(seed): not found in 90 s")
            let truth = (rate - 1) * (end - 0.03) - 0.03
            worst = max(worst, abs(edge.lead(at: end) - truth))
        }
        #expect(worst < 0.012, "\(ppm) ppm: the lead 90 s in off by up to \(worst * 1000) ms")
    }

    @Test func aSegmentListedLateIsNotDrift() {
        // The 40th segment is listed 3 s late (a packager's hiccup), the rest on time.
        var everActive = false
        let (edge, _) = listings(ppm: 0, seconds: 300, late: { $0 == 40 ? 3 : 0 }) { e, _ in
            everActive = everActive || e.isActive
        }
        #expect(!everActive && edge.samples.allSatisfy { $0.lead > -1 })
    }

    /// Listed 0.8 s ahead of the clock, without drift: once a slope could be told, the lead
    /// followed is the mean offset, slope 0.
    @Test func anEdgeAheadWithoutDriftIsAnOffset() throws {
        let (edge, _) = listings(ppm: 0, seconds: 120, delay: -0.8) { _ in 0 }
        #expect(!edge.isActive)
        let lead = try #require(edge.roughLead)
        #expect(lead.slope == 0 && abs(lead.lead - 0.8) < 0.01, "\(lead)")
    }

    @Test func aWideBracketIsNoSample() {
        var edge = LiveEdgeRate()
        edge.record(end: 700, listedAt: 700, notListedAt: 699)
        edge.record(end: 702, listedAt: 702, notListedAt: 702.5)
        #expect(edge.samples.isEmpty)
    }
}
