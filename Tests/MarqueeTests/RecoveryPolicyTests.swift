import Testing

@testable import Marquee

@Suite struct RecoveryPolicyTests {
    /// Times (s from the stall's start) at which a stall that never ends is reloaded.
    func reloads(_ policy: inout RecoveryPolicy, from start: Double, until end: Double) -> [Double] {
        var out: [Double] = []
        var t = start
        while t <= end {
            if policy.update(now: t, stalled: true) { out.append(t - start) }
            t += 0.5
        }
        return out
    }

    @Test func backsOffFromMinToMaxThenResetsAfterStablePlayback() {
        var policy = RecoveryPolicy()
        // 10, then +20, +40, +80, then +90 each.
        let first = reloads(&policy, from: 0, until: 400)
        #expect(first == [10, 30, 70, 150, 240, 330])
        // Playback resumes: 29 s is not yet stable, the next stall still waits 90 s.
        for t in stride(from: 500.0, through: 529, by: 1) { _ = policy.update(now: t, stalled: false) }
        let second = reloads(&policy, from: 530, until: 625)
        #expect(second == [90])
        // 30 s of playback: back to 10 s.
        for t in stride(from: 700.0, through: 730, by: 1) { _ = policy.update(now: t, stalled: false) }
        #expect(policy.delay == 10)
        let third = reloads(&policy, from: 800, until: 815)
        #expect(third == [10])
    }

    @Test func configuredDelaysAndABriefStallDoNothing() {
        var policy = RecoveryPolicy(minDelay: 2, maxDelay: 5)
        let times = reloads(&policy, from: 0, until: 20)
        #expect(times == [2, 6, 11, 16])
        var fresh = RecoveryPolicy()
        _ = fresh.update(now: 0, stalled: true)
        let early = fresh.update(now: 9.5, stalled: true)
        let resumed = fresh.update(now: 9.6, stalled: false)
        let again = fresh.update(now: 15, stalled: true)
        #expect(!early && !resumed, "recovered before the delay")
        #expect(!again, "a new stall starts its own clock")
    }
}
