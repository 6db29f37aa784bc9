import MarqueeStreaming
import Testing

@testable import Marquee

@Suite struct MixTimelineTests {
    func timeline(_ events: [TimedEvent]) -> MixTimeline {
        var t = MixTimeline(defaultAdDuration: 30)
        for e in events { t.insert(e) }
        return t
    }

    @Test func stateFollowsMediaTimeNotArrivalOrder() {
        let events = [
            TimedEvent(time: 10, duration: 5, kind: .streamerMuted, id: "m1"),
            TimedEvent(time: 20, duration: 8, kind: .adBreakStart(creative: "ad.mp4"), id: "a1"),
            TimedEvent(time: 40, kind: .streamerMuted, id: "m2"),
            TimedEvent(time: 44, kind: .streamerUnmuted, id: "u2"),
        ]
        let forward = timeline(events)
        let backward = timeline(events.reversed())
        for t in stride(from: 0.0, through: 50, by: 0.25) {
            #expect(forward.state(at: t) == backward.state(at: t))
        }
        let s = forward
        #expect(!s.state(at: 9.99).streamerMuted)
        #expect(s.state(at: 10).streamerMuted && s.state(at: 12).muteStart == 10)
        #expect(!s.state(at: 15).streamerMuted)  // the duration ended it
        #expect(s.state(at: 19.9).adBreak == nil)
        #expect(s.state(at: 20).adBreak == AdBreak(id: "a1", start: 20, end: 28, creative: "ad.mp4"))
        #expect(s.state(at: 28).adBreak == nil)
        #expect(s.state(at: 43).streamerMuted && !s.state(at: 44).streamerMuted)
        // Jumping back undoes, forward applies: the state is a function of t alone.
        #expect(s.state(at: 21).gains(hasMusic: true) == MixGains(stream: 0, music: 0, ad: 1))
        #expect(s.state(at: 11).gains(hasMusic: true) == MixGains(stream: 0, music: 1, ad: 0))
        #expect(s.state(at: 11).gains(hasMusic: false) == MixGains(stream: 1, music: 0, ad: 0))
        #expect(s.state(at: 30).gains(hasMusic: true) == MixGains(stream: 1, music: 0, ad: 0))
    }

    @Test func adInsideAMuteReturnsToMusic() {
        let s = timeline([
            TimedEvent(time: 10, kind: .streamerMuted),
            TimedEvent(time: 12, duration: 3, kind: .adBreakStart(creative: nil), id: "a"),
        ])
        #expect(s.state(at: 13).gains(hasMusic: true) == MixGains(stream: 0, music: 0, ad: 1))
        #expect(s.state(at: 15).gains(hasMusic: true) == MixGains(stream: 0, music: 1, ad: 0))
        #expect(s.state(at: 15).muteStart == 10)
    }

    @Test func endCueCancelAndDefaultDuration() {
        var s = timeline([
            TimedEvent(time: 10, kind: .adBreakStart(creative: nil), id: "scte35:1"),
            TimedEvent(time: 14, kind: .adBreakEnd, id: "scte35:1"),
            TimedEvent(time: 50, kind: .adBreakStart(creative: nil), id: "scte35:2"),
        ])
        #expect(s.state(at: 13.9).adBreak != nil && s.state(at: 14).adBreak == nil)
        #expect(s.state(at: 79.9).adBreak?.end == 80)  // 30 s default
        #expect(s.changes(after: 0, through: 100) == [10, 14, 40, 50, 80])
        let cancelled = s.insert(TimedEvent(time: 49, kind: .adBreakCancel, id: "scte35:2"))
        #expect(cancelled)
        #expect(s.state(at: 60).adBreak == nil)
    }

    @Test func repeatsAreIgnoredAndOldEventsForgotten() {
        var s = MixTimeline()
        let mute = TimedEvent(time: 10, duration: 5, kind: .streamerMuted, id: "1", origin: .manifest)
        let first = s.insert(mute)
        let again = s.insert(mute)  // the manifest repeats it on every refresh
        let other = s.insert(TimedEvent(time: 3, kind: .other(scheme: "urn:x", value: nil)))
        #expect(first && !again && !other)
        s.insert(TimedEvent(time: 100, kind: .streamerMuted, id: "2"))
        s.insert(TimedEvent(time: 200, kind: .adBreakStart(creative: nil), id: "3"))
        let before = (0..<40).map { s.state(at: 150 + Double($0) * 5) }
        s.forget(before: 150)
        #expect(s.events.count == 2)  // the open mute at 100 still decides what plays at 150
        #expect((0..<40).map { s.state(at: 150 + Double($0) * 5) } == before)
    }
}
