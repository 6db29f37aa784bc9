import Foundation
import MarqueeStreaming
import Testing

@testable import Marquee

/// The latency controller against a model of the pipeline: latency changes by `(1 − rate) × dt`
/// per step, and a new rate is heard only 0.25 s after it is set (the tempo stage's ring plus
/// the device buffer), as in the core.
@Suite struct LatencyControllerTests {
    struct Run {
        var errors: [Double] = []  // latency − target after each 40 ms step
        var rates: [Double] = []  // rate in effect (heard)
        var actions: [LatencyController.Action] = []
    }

    func simulate(error start: Double, seconds: Double, options: SyncOptions = SyncOptions()) -> Run {
        var controller = LatencyController(options: options)
        let dt = 0.04
        let lag = Int(0.25 / dt)
        var latency = 3 + start
        var pending = [Double](repeating: 1, count: lag)
        var run = Run()
        for step in 0..<Int(seconds / dt) {
            let action = controller.update(now: Double(step) * dt, latency: latency, target: 3)
            run.actions.append(action)
            if case .jump(let e) = action {
                latency -= e
                pending = pending.map { _ in 1 }
            }
            pending.append(controller.rate)
            let heard = pending.removeFirst()
            latency -= (heard - 1) * dt
            run.errors.append(latency - 3)
            run.rates.append(heard)
        }
        return run
    }

    @Test(arguments: [0.6, -0.6, 0.15, -0.05])
    func convergesWithinTheRateBoundsWithoutOvershoot(error: Double) {
        let run = simulate(error: error, seconds: 60)
        #expect(run.rates.allSatisfy { $0 >= 0.97 && $0 <= 1.03 })
        // Never crosses to the other side by more than the dead band's exit (5 ms).
        let overshoot = run.errors.map { $0 * (error > 0 ? -1 : 1) }.max()!
        #expect(overshoot < 0.005, "overshoot \(overshoot) s")
        #expect(abs(run.errors.last!) < 0.020, "settled at \(run.errors.last!) s")
        #expect(run.rates.last == 1, "a settled stream plays at rate 1, not \(run.rates.last!)")
        // Catch-up at full speed while far: 0.6 s takes at least 0.3/0.03 = 10 s at the bound.
        if abs(error) > 0.3 { #expect(run.errors[Int(5 / 0.04)] * (error > 0 ? 1 : -1) > 0.3) }
    }

    @Test func insideTheDeadBandNothingMoves() {
        let run = simulate(error: 0.015, seconds: 5)
        #expect(run.actions.allSatisfy { $0 == .hold })
        #expect(run.rates.allSatisfy { $0 == 1 })
    }

    @Test func largeErrorsJump() {
        var c = LatencyController()
        #expect(c.update(now: 0, latency: 4.5, target: 3) == .jump(error: 1.5))
        // While the jump takes effect the old position is still measured: no second jump.
        #expect(c.update(now: 0.5, latency: 4.4, target: 3) == .hold)
        #expect(c.update(now: 1.1, latency: 1.2, target: 3) == .jump(error: -1.8))
        #expect(c.rate == 1 && !c.steering)
        // Just under the threshold: steered at the bound, not jumped.
        #expect(c.update(now: 2.2, latency: 3.9, target: 3) == .steer(rate: 1.03))
        #expect(c.update(now: 2.3, latency: .nan, target: 3) == .hold)
    }

    @Test func gainAndBoundsAreHonoured() {
        var c = LatencyController(options: SyncOptions(minRate: 0.99, maxRate: 1.01, gain: 0.5))
        #expect(c.update(now: 0, latency: 3.01 + 0.02, target: 3) == .steer(rate: 1.01))
        #expect(c.update(now: 1, latency: 2.9, target: 3) == .steer(rate: 0.99))
        #expect(c.update(now: 2, latency: 2.99, target: 3) == .steer(rate: 0.995))
        #expect(c.update(now: 3, latency: 3.004, target: 3) == .steer(rate: 1))
    }

    @Test func invalidSyncOptionsAreTypedErrors() {
        for bad in [
            SyncOptions(minRate: 1.1), SyncOptions(maxRate: 0.9), SyncOptions(gain: 0),
            SyncOptions(jumpThreshold: 0.01),
        ] {
            var options = PlayerOptions(sources: [URL(string: "http://127.0.0.1/a.mpd")!])
            options.sync = bad
            #expect(throws: PlayerError.self) { _ = try Player(options: options) }
        }
    }

    @Test func serviceDescriptionSetsTargetAndNarrowsRates() {
        var mpd = MPD()
        mpd.type = .dynamic
        var sd = ServiceDescription()
        sd.latencyTarget = 5000
        sd.latencyMax = 4000
        sd.playbackRateMin = 0.98
        sd.playbackRateMax = 1.05
        mpd.serviceDescription = sd
        let url = URL(string: "http://127.0.0.1/a.mpd")!
        let fromManifest = PlaybackSession.syncSettings(options: PlayerOptions(sources: [url]), mpd: mpd)
        #expect(fromManifest.target == 4, "the manifest's 5 s clamped to its max 4 s")
        #expect(fromManifest.sync.minRate == 0.98 && fromManifest.sync.maxRate == 1.03)
        let explicit = PlaybackSession.syncSettings(options: PlayerOptions(sources: [url], targetLatency: 6), mpd: mpd)
        #expect(explicit.target == 6, "an explicit target wins")
    }

    /// Live HLS without program date-times (placed by its answer time): the default target is
    /// the RFC 8216 hold-back, three target durations; an explicit one wins.
    @Test func hlsWithoutDateTimesHoldsBackThreeTargetDurations() throws {
        let url = URL(string: "http://127.0.0.1/out.m3u8")!
        let text =
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:9\n#EXTINF:2.0,\n9.ts\n#EXTINF:2.0,\n10.ts\n"
        guard case .media(let playlist) = try HLSPlaylist.parse(text, url: url) else {
            throw ManifestError(.notAManifest, "media playlist expected")
        }
        var anchor = HLSLiveAnchor()
        let mpd = try HLSPresentation.mpd(
            video: anchor.place(playlist, answeredAt: 1_800_000_000), audio: nil, variant: nil)
        #expect(PlaybackSession.syncSettings(options: PlayerOptions(sources: [url]), mpd: mpd).target == 6)
        #expect(
            PlaybackSession.syncSettings(options: PlayerOptions(sources: [url], targetLatency: 4), mpd: mpd).target == 4
        )
    }
}
