import Foundation
import Testing

@testable import MarqueeStreaming

/// Inputs the fuzz targets (scripts/fuzz, README "Fuzzing") found crashing the player, each
/// now a typed error or a sound answer. The raw inputs are also in fuzz/regressions/<target>/,
/// replayed with every fuzz run.
@Suite struct FuzzRegressionTests {
    let url = URL(string: "https://cdn.example/live/index.m3u8")!

    func media(_ text: String) throws -> HLSMediaPlaylist {
        guard case .media(let p) = try HLSPlaylist.parse(text, url: url) else { throw ManifestError(.notAManifest, "not a media playlist") }
        return p
    }

    /// mpd: FoundationXML's parser trapped on an element or attribute name that is not UTF-8.
    @Test(arguments: [
        "<MPD><Se\u{FF}g/></MPD>", "<MPD a\u{FF}b=\"1\"/>", "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<MPD><Se\u{FF}\u{FF}g/></MPD>",
    ])
    func mpdNameNotUTF8(text: String) {
        // "\u{FF}" stands for the byte 0xFF, not its UTF-8 encoding.
        let bytes = Data(text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
        #expect(throws: ManifestError(.malformed, "not well-formed XML at line 0, column 0: the document is not UTF-8 text")) {
            try MPDParser().parse(bytes)
        }
    }

    /// mpd: FoundationXML's parser read a processing instruction without data (`<?x?>`) from a
    /// NULL pointer; such instructions (ignored) no longer reach it.
    @Test func mpdInstructionWithoutData() throws {
        let mpd = try MPDParser().parse(Data("<?x?>\n<MPD type=\"static\"><?a?><Period/></MPD>".utf8))
        #expect(mpd.periods.count == 1)
        #expect(throws: ManifestError.self) { try MPDParser().parse(Data("<?xml?><MPD/>".utf8)) }
    }

    /// hls: a program date-time before 1970 trapped converting its negative milliseconds to UInt64.
    @Test func hlsDateTimeBefore1970() throws {
        let p = try media("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1\n#EXT-X-PROGRAM-DATE-TIME:1176-11-23T23:27:40\n\"\n")
        #expect(throws: ManifestError.self) { try HLSPresentation.mpd(video: p, audio: nil, variant: nil) }
    }

    /// hls: a segment whose duration runs past any timeline (EXTINF 1e300) trapped the same way.
    @Test func hlsHugeDuration() throws {
        let p = try media("#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00Z\n#EXTINF:1e300\na.ts\n")
        #expect(throws: ManifestError.self) { try HLSPresentation.mpd(video: p, audio: nil, variant: nil) }
    }

    /// hls: date-times going back (an encoder restarted with its clock set back) trapped on
    /// `next − start`; such a segment now lasts its own EXTINF.
    @Test func hlsDateTimeGoingBack() throws {
        let p = try media(
            """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:04Z
            #EXTINF:2
            a.ts
            #EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:01Z
            #EXTINF:2
            b.ts
            """)
        let mpd = try HLSPresentation.mpd(video: p, audio: nil, variant: nil)
        let timeline = try #require(mpd.periods.first?.adaptationSets.first?.representations.first?.segmentTemplate?.timeline)
        #expect(timeline.map(\.d) == [2000, 2000])
    }

    /// hls: a media or discontinuity sequence number past 2^64 − 1 trapped counting on.
    @Test func hlsSequenceNumbersPastUInt64() throws {
        let last = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:18446744073709551615\n#EXTINF:2\na.ts\n"
        #expect(throws: ManifestError.self) { try media(last) }
        let discontinuity = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-DISCONTINUITY-SEQUENCE:18446744073709551615\n#EXT-X-DISCONTINUITY\n#EXTINF:2\na.ts\n"
        #expect(throws: ManifestError.self) { try media(discontinuity) }
        // EXT-X-MEDIA-SEQUENCE after the segments no longer overflows the next number.
        let late = try media("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2\na.ts\n#EXT-X-MEDIA-SEQUENCE:18446744073709551615\n")
        #expect(late.nextSequence == 1)
        #expect(try media("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:2\na.ts\n").nextSequence == 8)
    }
}
