import Foundation
import Testing

@testable import MarqueeVenue

/// The venue proxy's word on when a playlist's newest segment was published
/// (``PublicationBook``), learned from upstream answers on its own clock, without a server.
@Suite struct PublicationBookTests {
    static let url = URL(string: "http://origin.test/out.m3u8")!

    /// A sliding window of six 1 s segments ending with `newest`, as ffmpeg writes it.
    static func playlist(newest: Int) -> String {
        var lines = ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:1", "#EXT-X-MEDIA-SEQUENCE:\(newest - 5)"]
        for n in (newest - 5)...newest { lines += ["#EXTINF:1.000000,", "out\(n).ts"] }
        return lines.joined(separator: "\n") + "\n"
    }

    /// Every answer tells the proxy's estimate as the middle of the ages, also one made about
    /// when the segment was published (a box's settled probe is aimed there): an interval that
    /// reaches past the answer is narrowed about its middle, not cut (cut, the middle told moved
    /// early by up to half the interval, and boxes behind one proxy moved apart in pairs).
    @Test func everyAnswerTellsTheProxysMiddleAlsoOneMadeAtThePublication() throws {
        let book = PublicationBook()
        // Segment n is published at n + 0.3 (the proxy's seconds); answers 1 ms round trips.
        for t in [100.8, 101.55, 102.1, 103.35, 104.25, 105.32] {
            book.learn(
                Self.url, text: Self.playlist(newest: Int((t - 0.3).rounded(.down))), sent: t - 0.001, received: t)
        }
        let text = Self.playlist(newest: 105)
        let late = try #require(book.age(Self.url, text: text, now: 106, arrived: 106))
        let middle = 106 - (late.least + late.most) / 2  // where the proxy places 105's publication
        let half = (late.most - late.least) / 2
        try #require(half > 0.002, "the proxy's interval: ±\(half) s")
        #expect(abs(middle - 105.3) <= half, "\(middle)")
        for step in 0...16 {
            let now = middle + Double(step) * half / 8
            let age = try #require(book.age(Self.url, text: text, now: now, arrived: now))
            #expect(age.least >= 0 && age.least <= age.most)
            #expect(
                abs(now - (age.least + age.most) / 2 - middle) < 1e-6,
                "answered \(now - middle) s after the proxy's middle: told \(now - (age.least + age.most) / 2 - middle)"
            )
        }
    }

    /// The phase told with each answer stays what it was when the newest segment was first
    /// told, whatever the proxy learns meanwhile (boxes reload as a segment is published: one
    /// that joins in between reads the same as they did), and with it the phase and the
    /// anchor's placement, so a box can read the answers together.
    @Test func thePhaseToldHoldsForASegmentsCycle() throws {
        let book = PublicationBook()
        // Segment n published at n + 0.3; answers at scattered points of the first cycles.
        for t in [100.8, 101.55, 102.1, 103.35] {
            book.learn(
                Self.url, text: Self.playlist(newest: Int((t - 0.3).rounded(.down))), sent: t - 0.001, received: t)
        }
        let first = try #require(book.age(Self.url, text: Self.playlist(newest: 103), now: 103.4, arrived: 103.4))
        let told = try #require(first.told)
        // Within 103's cycle the proxy learns more (answers just either side of 104's
        // publication narrow its estimate), and tells the same phase.
        book.learn(Self.url, text: Self.playlist(newest: 103), sent: 104.28, received: 104.29)
        book.learn(Self.url, text: Self.playlist(newest: 104), sent: 104.31, received: 104.32)
        let later = try #require(book.age(Self.url, text: Self.playlist(newest: 103), now: 104.2, arrived: 104.2))
        #expect(later.told == told)
        #expect(abs((later.least + later.most) / 2 - (first.least + first.most) / 2 - 0.8) < 1e-9, "the same middle")
        // 104's first answer tells the estimate as it stands then.
        let next = try #require(book.age(Self.url, text: Self.playlist(newest: 104), now: 104.4, arrived: 104.4))
        #expect(next.told?.placement == told.placement)
        let published = 104.4 - ((next.least + next.most) / 2)
        #expect(abs(published - 104.3) < 0.011, "104 told published at \(published)")
    }

    /// An encoder restarted on lower sequence numbers: the proxy's anchor is placed anew, and
    /// the phase told follows what it learns of the new publication (held, as told before the
    /// restart, until the old sequence numbers came again, it stayed where its first answer put it).
    @Test func aRestartedEncodersPhaseIsToldAnew() throws {
        let book = PublicationBook()
        for t in [100.8, 101.55, 102.1, 103.35] {
            book.learn(
                Self.url, text: Self.playlist(newest: Int((t - 0.3).rounded(.down))), sent: t - 0.001, received: t)
        }
        _ = try #require(book.age(Self.url, text: Self.playlist(newest: 103), now: 103.4, arrived: 103.4))
        // Restarted: segment k now published at 200.6 + k.
        let restarted = [205.65, 206.2, 207.0, 207.55, 208.1, 209.35, 210.25, 210.9]
        var asked = false
        for t in restarted {
            let newest = Int((t - 200.6).rounded(.down))
            book.learn(Self.url, text: Self.playlist(newest: newest), sent: t - 0.001, received: t)
            if !asked {  // (a box's answer right after the restart: the phase told from one answer)
                _ = book.age(Self.url, text: Self.playlist(newest: newest), now: t, arrived: t)
                asked = true
            }
        }
        let age = try #require(book.age(Self.url, text: Self.playlist(newest: 10), now: 210.95, arrived: 210.95))
        let published = 210.95 - (age.least + age.most) / 2
        #expect(abs(published - 210.6) < 0.011, "10 told published at \(published)")
    }
}
