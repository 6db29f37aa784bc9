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

/// Stall recovery's decisions from the sessions' progress readings, and without a session.
@Suite struct StallWatchTests {
    @Test func aStallIsReloadedAfterTheDelayAndRecoveredWhenPicturesCome() {
        var watch = StallWatch(policy: RecoveryPolicy(minDelay: 2, maxDelay: 8), now: 0)
        var presented = 0
        var reloads: [Double] = []
        var recovered: [Double] = []
        // Playing for 5 s (readings every 0.1 s), stalled for 7 s, then playing again.
        for i in 0..<150 {
            let t = Double(i) / 10
            if t < 5 || t >= 12 { presented += 3 }
            let step = watch.step(now: t, presented: presented, onBackup: false, mainRetryInterval: 30)
            if step.reload != nil { reloads.append(t) }
            if step.recovered { recovered.append(t) }
            #expect(!step.probeMain)
        }
        // Stalled from about 5.5 s (half a second without progress): reloads 2 s later, then 4 s later.
        #expect(reloads.count == 2 && abs(reloads[0] - 7.5) < 0.15 && abs(reloads[1] - 11.5) < 0.15, "\(reloads)")
        #expect(recovered.count == 1 && abs(recovered[0] - 12) < 0.05, "\(recovered)")
    }

    @Test func withoutASessionTheRecoveryClockAloneReloads() {
        var watch = StallWatch(policy: RecoveryPolicy(minDelay: 10, maxDelay: 90), now: 0)
        // A reload failed at 0: no session, no readings. The supervisor sleeps until reloadDue.
        var step = watch.step(now: 0, presented: nil, onBackup: false, mainRetryInterval: 30)
        #expect(step.reload == nil)
        var times: [Double] = []
        var now = 0.0
        for _ in 0..<3 {
            guard let due = watch.reloadDue else {
                Issue.record("no reload due while stalled")
                return
            }
            now = due
            step = watch.step(now: now, presented: nil, onBackup: false, mainRetryInterval: 30)
            if step.reload != nil { times.append(now) }
        }
        #expect(times == [10, 30, 70])  // 10, then 20 and 40 later
    }

    @Test func aBackupProbesTheMainSourceOnItsInterval() {
        var watch = StallWatch(policy: RecoveryPolicy(), now: 0)
        var probes: [Double] = []
        var t = 0.0
        var presented = 0
        while t < 35 {
            presented += 3
            if watch.step(now: t, presented: presented, onBackup: true, mainRetryInterval: 10).probeMain {
                probes.append(t)
            }
            t += 0.25
        }
        #expect(probes == [10, 20, 30])
    }

    @Test func aSlowReloadGivesTheNewSessionTheWholeDelay() {
        var watch = StallWatch(policy: RecoveryPolicy(minDelay: 1, maxDelay: 2), now: 0)
        _ = watch.step(now: 0, presented: 10, onBackup: false, mainRetryInterval: 60)
        _ = watch.step(now: 1, presented: 10, onBackup: false, mainRetryInterval: 60)  // stalled
        #expect(watch.step(now: 2.1, presented: 10, onBackup: false, mainRetryInterval: 60).reload == 2)
        // The reload waited 5 s on a hung server before the backup answered.
        watch.reloaded(now: 7.1)
        #expect(
            watch.step(now: 7.2, presented: 10, onBackup: false, mainRetryInterval: 60).reload == nil,
            "reloaded again at once")
        #expect(watch.step(now: 7.8, presented: 10, onBackup: false, mainRetryInterval: 60).reload == nil)
        // Stalled again from 7.8 s (0.5 s without a picture from the new session), reloaded 2 s later.
        #expect(watch.step(now: 9.7, presented: 10, onBackup: false, mainRetryInterval: 60).reload == nil)
        #expect(
            watch.step(now: 9.9, presented: 10, onBackup: false, mainRetryInterval: 60).reload == 2,
            "the stall went on for the delay")
    }
}
