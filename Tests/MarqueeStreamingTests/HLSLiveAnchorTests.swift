import Foundation
import Testing

@testable import MarqueeStreaming

/// Live HLS without `EXT-X-PROGRAM-DATE-TIME`: playlists and the times they were answered in,
/// segment start times out.
@Suite struct HLSLiveAnchorTests {
    static let t0 = 1_800_000_000.0

    /// A live media playlist as a packager writes it: segments `first…` with `durations`,
    /// `EXT-X-DISCONTINUITY` before the indices in `discontinuities`.
    static func playlist(
        first: UInt64, durations: [Double], target: Int = 1, discontinuities: Set<Int> = [], extra: [String] = []
    ) throws -> HLSMediaPlaylist {
        var lines =
            ["#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-TARGETDURATION:\(target)", "#EXT-X-MEDIA-SEQUENCE:\(first)"] + extra
        for (i, d) in durations.enumerated() {
            if discontinuities.contains(i) { lines.append("#EXT-X-DISCONTINUITY") }
            lines += [String(format: "#EXTINF:%.6f,", d), "out\(first + UInt64(i)).ts"]
        }
        guard
            case .media(let p) = try HLSPlaylist.parse(
                lines.joined(separator: "\n") + "\n", url: URL(string: "http://origin.test/out.m3u8")!)
        else {
            throw ManifestError(.notAManifest, "not a media playlist")
        }
        return p
    }

    /// A sliding window of `count` one-second segments ending with `last`.
    static func window(last: UInt64, count: UInt64 = 6) throws -> HLSMediaPlaylist {
        try playlist(first: last + 1 - count, durations: Array(repeating: 1, count: Int(count)))
    }

    static func starts(_ p: HLSMediaPlaylist) -> [UInt64: Double] {
        Dictionary(uniqueKeysWithValues: p.segments.map { ($0.sequence, $0.programDateTime!.timeIntervalSince1970) })
    }

    @Test func theFirstAnswerEndsTheListing() throws {
        var anchor = HLSLiveAnchor()
        let placed = anchor.place(try Self.window(last: 105), answeredAt: Self.t0)
        #expect(placed.programDateTimeEstimated)
        #expect(
            placed.segments.map { $0.programDateTime!.timeIntervalSince1970 }
                == (0..<6).map { Self.t0 - 6 + Double($0) })
        #expect(anchor.starts[105] == Self.t0 - 1)
    }

    @Test func partsListedAfterTheLastSegmentAreOfTheListing() throws {
        var p = try Self.window(last: 105)
        p.pendingParts = (0..<2).map {
            HLSPart(uri: URL(string: "http://origin.test/p\($0).ts")!, duration: 0.25, independent: $0 == 0)
        }
        var anchor = HLSLiveAnchor()
        #expect(Self.starts(anchor.place(p, answeredAt: Self.t0))[105] == Self.t0 - 1.5)
    }

    /// A reload whose window slid keeps the starts of the segments still listed and places the
    /// new ones after them, however late or early (up to 1 s) each answer comes.
    @Test func reloadsKeepTheStartsWhateverTheAnswerTime() throws {
        var anchor = HLSLiveAnchor()
        _ = anchor.place(try Self.window(last: 105), answeredAt: Self.t0)
        let jitter: [Double] = [0.4, -1, 1, 0.05, -0.7, 0.9, -0.2, 1, 1, 1, -1, -1, -1, 0]
        for (k, late) in jitter.enumerated() {
            let last = 106 + UInt64(k)
            let placed = Self.starts(
                anchor.place(try Self.window(last: last), answeredAt: Self.t0 + Double(k + 1) + late))
            for (sequence, start) in placed {
                #expect(
                    abs(start - (Self.t0 - 1 + Double(sequence) - 105)) < 1e-6, "segment \(sequence) of reload \(k)")
            }
        }
        #expect(anchor.residuals.count == HLSLiveAnchor.reloadsBeforeNudge)
    }

    @Test func anUnchangedReloadChangesNothing() throws {
        var anchor = HLSLiveAnchor()
        let first = Self.starts(anchor.place(try Self.window(last: 105), answeredAt: Self.t0))
        #expect(Self.starts(anchor.place(try Self.window(last: 105), answeredAt: Self.t0 + 0.5)) == first)
    }

    /// EXTINF durations add across discontinuities: the segments keep one mapping.
    @Test func discontinuitiesDoNotBreakTheMapping() throws {
        let durations = [2, 2, 1.5, 2, 0.7, 2]
        var anchor = HLSLiveAnchor()
        let p = try Self.playlist(first: 40, durations: durations, target: 2, discontinuities: [2, 4])
        #expect(p.segments[4].discontinuity && p.segments[4].discontinuitySequence == 2)
        let first = Self.starts(anchor.place(p, answeredAt: Self.t0))
        let expected = durations.indices.map { i in Self.t0 - durations[i...].reduce(0, +) }
        #expect(durations.indices.allSatisfy { abs(first[40 + UInt64($0)]! - expected[$0]) < 1e-6 })
        // The window slides past the first discontinuity; another comes.
        let next = try Self.playlist(first: 43, durations: [2, 0.7, 2, 1.8, 2], target: 2, discontinuities: [1, 3])
        let again = Self.starts(anchor.place(next, answeredAt: Self.t0 + 3.9))
        #expect(again[43] == first[43] && again[44] == first[44] && again[45] == first[45])
        #expect(abs(again[46]! - Self.t0) < 1e-6 && abs(again[47]! - (Self.t0 + 1.8)) < 1e-6)
    }

    @Test func aStaleAnswerKeepsTheMapping() throws {
        var anchor = HLSLiveAnchor()
        _ = anchor.place(try Self.window(last: 105), answeredAt: Self.t0)
        let newer = Self.starts(anchor.place(try Self.window(last: 107), answeredAt: Self.t0 + 2))
        let stale = Self.starts(anchor.place(try Self.window(last: 104), answeredAt: Self.t0 + 2.5))
        #expect(stale.allSatisfy { newer[$0.key] == nil || newer[$0.key] == $0.value } && stale[99] == Self.t0 - 7)
    }

    /// An encoder restarted on new sequence numbers, or reloads missed for longer than the
    /// window: the listing that follows is placed by its own answer time.
    @Test func noSegmentInCommonAnchorsAfresh() throws {
        var anchor = HLSLiveAnchor()
        _ = anchor.place(try Self.window(last: 105), answeredAt: Self.t0)
        let restarted = Self.starts(
            anchor.place(try Self.playlist(first: 0, durations: [1, 1]), answeredAt: Self.t0 + 30))
        #expect(restarted == [0: Self.t0 + 28, 1: Self.t0 + 29])
        #expect(anchor.residuals.isEmpty)
    }

    /// The answer of a reload lands anywhere in the segment cycle (the packager writes the
    /// playlist once a segment; reloads are not in step with it): thousands of them, with the
    /// mapping exact, move nothing.
    @Test func noNudgeWithoutDrift() throws {
        var anchor = HLSLiveAnchor()
        var random = SplitMix(seed: 7)
        let trueEdge = Self.t0 - 0.6  // the first answer came 0.6 s after the listing's end
        _ = anchor.place(try Self.window(last: 105), answeredAt: Self.t0)
        for k in 1...3000 {
            let placed = anchor.place(
                try Self.window(last: 105 + UInt64(k)), answeredAt: trueEdge + Double(k) + random.next() * 0.99)
            #expect(abs(Self.starts(placed)[105 + UInt64(k)]! - (Self.t0 - 1 + Double(k))) < 1e-6)
        }
    }

    /// EXTINF written 1.000 for segments 1.01 s long (an encoder clock 1 % slow, or durations
    /// rounded): unchecked, the listing's end would drift 10 ms a segment behind the answers.
    /// Nudged, it stays within the band; no start given is moved and starts only go forward.
    @Test func driftIsNudgedOutSlowlyAndStartsNeverGoBack() throws {
        var anchor = HLSLiveAnchor()
        var random = SplitMix(seed: 11)
        _ = anchor.place(try Self.window(last: 105), answeredAt: Self.t0)
        var given = anchor.starts
        var previousNew = anchor.starts[105]!
        var worst = 0.0
        for k in 1...3000 {
            let answered = Self.t0 + Double(k) * 1.01 + random.next() * 0.9
            let placed = Self.starts(anchor.place(try Self.window(last: 105 + UInt64(k)), answeredAt: answered))
            for (sequence, start) in placed where given[sequence] != nil {
                #expect(start == given[sequence], "segment \(sequence) moved")
            }
            let new = placed[105 + UInt64(k)]!
            #expect(
                new - previousNew >= 1 - HLSLiveAnchor.maxNudge - 1e-9
                    && new - previousNew <= 1 + HLSLiveAnchor.maxNudge + 1e-9)
            given.merge(placed) { old, _ in old }
            previousNew = new
            if k > 1000 { worst = max(worst, abs(answered - (new + 1))) }
        }
        let band = 1 + HLSLiveAnchor.tolerance
        #expect(worst < band + 1, "residual up to \(worst) s")  // band + the answers' own spread
    }

    /// Video and audio renditions answered together, the audio playlist not yet updated with
    /// the segment the video one lists: placed alike, not a segment apart. Whichever comes first.
    @Test func renditionsSegmentedAlikeArePlacedAlike() throws {
        let audio = try Self.playlist(first: 99, durations: [1.002, 0.998, 1.002, 0.998, 1.002, 0.998])
        for videoFirst in [true, false] {
            var video = HLSLiveAnchor()
            var sound = HLSLiveAnchor()
            let (v, a): ([UInt64: Double], [UInt64: Double])
            if videoFirst {
                v = Self.starts(video.place(try Self.window(last: 105), answeredAt: Self.t0))
                a = Self.starts(sound.place(audio, answeredAt: Self.t0 + 0.01, sibling: video))
            } else {
                a = Self.starts(sound.place(audio, answeredAt: Self.t0))
                v = Self.starts(video.place(try Self.window(last: 105), answeredAt: Self.t0 + 0.01, sibling: sound))
            }
            #expect(
                (100...104).allSatisfy { abs(v[$0]! - a[$0]!) < 0.003 },
                "video \(v.sorted { $0.key < $1.key }), audio \(a.sorted { $0.key < $1.key })")
        }
    }

    /// A sibling segmented otherwise (4 s audio segments numbered alike by chance): each is
    /// placed by its own answer.
    @Test func aRenditionSegmentedOtherwiseIsPlacedByItsOwnAnswer() throws {
        var video = HLSLiveAnchor()
        var sound = HLSLiveAnchor()
        _ = video.place(try Self.window(last: 105), answeredAt: Self.t0)
        let audio = try Self.playlist(first: 102, durations: [4, 4, 4], target: 4)
        #expect(Self.starts(sound.place(audio, answeredAt: Self.t0, sibling: video))[104] == Self.t0 - 4)
    }

    @Test func whatIsPlaced() throws {
        #expect(try HLSLiveAnchor.isNeeded(for: try Self.window(last: 5)))
        let dated = try Self.playlist(
            first: 0, durations: [1], extra: ["#EXT-X-PROGRAM-DATE-TIME:2026-11-22T10:00:00.000Z"])
        #expect(try !HLSLiveAnchor.isNeeded(for: dated))
        #expect(
            try !HLSLiveAnchor.isNeeded(
                for: try Self.playlist(first: 0, durations: [1], extra: ["#EXT-X-PLAYLIST-TYPE:VOD", "#EXT-X-ENDLIST"]))
        )
        let fmp4 = try Self.playlist(first: 0, durations: [1], extra: ["#EXT-X-MAP:URI=\"init.mp4\""])
        #expect(try HLSLiveAnchor.isNeeded(for: fmp4))  // placed by its first tfdt
    }

    // MARK: the presentation

    /// Placed playlists become a dynamic presentation whose timeline is the anchor's starts, with
    /// the RFC 8216 hold-back as its latency target: three target durations, or HOLD-BACK /
    /// PART-HOLD-BACK when the server gives them.
    @Test func thePresentationOfAPlacedPlaylist() throws {
        var anchor = HLSLiveAnchor()
        let placed = anchor.place(try Self.playlist(first: 7, durations: [2, 2, 1.96], target: 2), answeredAt: Self.t0)
        let mpd = try HLSPresentation.mpd(video: placed, audio: nil, variant: nil)
        #expect(mpd.isLive && mpd.serviceDescription?.latencyTarget == 6000)
        let entries = try #require(
            mpd.periods.first?.adaptationSets.first?.representations.first?.segmentTemplate?.timeline)
        #expect(
            entries.map(\.t)
                == [Self.t0 - 5.96, Self.t0 - 3.96, Self.t0 - 1.96].map { UInt64(($0 * 1_000_000).rounded()) })
        #expect(entries.map(\.d) == [2_000_000, 2_000_000, 1_960_000])

        let holdBack = try Self.playlist(
            first: 7, durations: [2, 2], target: 2, extra: ["#EXT-X-SERVER-CONTROL:HOLD-BACK=4.5"])
        #expect(
            try HLSPresentation.mpd(video: anchor.place(holdBack, answeredAt: Self.t0 + 2), audio: nil, variant: nil)
                .serviceDescription?.latencyTarget == 4500)
        var parts = try Self.playlist(
            first: 7, durations: [2, 2], target: 2,
            extra: ["#EXT-X-SERVER-CONTROL:HOLD-BACK=6,PART-HOLD-BACK=1.25", "#EXT-X-PART-INF:PART-TARGET=0.4"])
        parts.pendingParts = [HLSPart(uri: URL(string: "http://origin.test/p.ts")!, duration: 0.4, independent: true)]
        #expect(
            try HLSPresentation.mpd(video: anchor.place(parts, answeredAt: Self.t0 + 2), audio: nil, variant: nil)
                .serviceDescription?.latencyTarget == 1250)
        // Placed by its program date-time, without SERVER-CONTROL: the player's default stands.
        let dated = try Self.playlist(
            first: 0, durations: [2], target: 2, extra: ["#EXT-X-PROGRAM-DATE-TIME:2026-11-22T10:00:00.000Z"])
        #expect(try HLSPresentation.mpd(video: dated, audio: nil, variant: nil).serviceDescription == nil)
    }
}

/// A small deterministic generator (SplitMix64) for answer times in [0, 1).
struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> Double {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return Double((z ^ (z >> 31)) >> 11) / Double(1 << 53)
    }
}
