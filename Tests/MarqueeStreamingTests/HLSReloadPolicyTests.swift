import Foundation
import Testing

@testable import MarqueeStreaming

@Suite struct HLSReloadPolicyTests {
    func playlist(sequence: UInt64, count: Int, target: Double = 2, parts: Int = 0, partTarget: Double? = nil)
        -> HLSMediaPlaylist
    {
        var p = HLSMediaPlaylist()
        p.targetDuration = target
        p.mediaSequence = sequence
        p.partTarget = partTarget
        p.segments = (0..<count).map { i in
            HLSSegment(
                uri: URL(string: "http://x/\(i).m4s")!, duration: target, sequence: sequence + UInt64(i),
                discontinuitySequence: 0, discontinuity: false)
        }
        p.pendingParts = (0..<parts).map {
            HLSPart(uri: URL(string: "http://x/p\($0).m4s")!, duration: 0.2, independent: false)
        }
        return p
    }

    @Test func rfc8216Intervals() {
        var policy = HLSReloadPolicy()
        #expect(policy.loaded(playlist(sequence: 10, count: 5), now: 0) == .changed(after: 2))
        #expect(policy.loaded(playlist(sequence: 11, count: 5), now: 2) == .changed(after: 2))  // one new segment
        #expect(policy.loaded(playlist(sequence: 11, count: 5), now: 4) == .unchanged(after: 1))  // half the target
        #expect(policy.loaded(playlist(sequence: 11, count: 5), now: 5) == .unchanged(after: 1))
        #expect(policy.loaded(playlist(sequence: 11, count: 5), now: 8) == .unchanged(after: 1))  // 6 s < 3.5 × 2
        // reported once…
        #expect(policy.loaded(playlist(sequence: 11, count: 5), now: 9) == .stuck(after: 1, for: 7))
        // …and reloading goes on
        #expect(policy.loaded(playlist(sequence: 11, count: 5), now: 10) == .unchanged(after: 1))
        #expect(policy.loaded(playlist(sequence: 12, count: 5), now: 30) == .changed(after: 2))  // back: a new episode
        #expect(policy.loaded(playlist(sequence: 0, count: 3), now: 32) == .reset(after: 2))  // the encoder restarted
    }

    @Test func lowLatencyPartsCountAsChanges() {
        var policy = HLSReloadPolicy()
        _ = policy.loaded(playlist(sequence: 5, count: 3, parts: 1, partTarget: 0.2), now: 0)
        #expect(
            policy.loaded(playlist(sequence: 5, count: 3, parts: 2, partTarget: 0.2), now: 0.2) == .changed(after: 0.2))
        #expect(
            policy.loaded(playlist(sequence: 5, count: 3, parts: 2, partTarget: 0.2), now: 0.4)
                == .unchanged(after: 0.1))
    }
}
