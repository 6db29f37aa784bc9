import Foundation
import Testing

@testable import MarqueeStreaming

/// Inputs the fuzz targets (scripts/fuzz, docs/testing.md "Fuzzing") found crashing the player, each
/// now a typed error or a sound answer. The raw inputs are also in fuzz/regressions/<target>/,
/// replayed with every fuzz run.
@Suite struct FuzzRegressionTests {
    let url = URL(string: "https://cdn.example/live/index.m3u8")!

    func media(_ text: String) throws -> HLSMediaPlaylist {
        guard case .media(let p) = try HLSPlaylist.parse(text, url: url) else {
            throw ManifestError(.notAManifest, "not a media playlist")
        }
        return p
    }

    /// mpd: FoundationXML's parser trapped on an element or attribute name that is not UTF-8.
    @Test(arguments: [
        "<MPD><Se\u{FF}g/></MPD>", "<MPD a\u{FF}b=\"1\"/>",
        "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<MPD><Se\u{FF}\u{FF}g/></MPD>",
    ])
    func mpdNameNotUTF8(text: String) {
        // "\u{FF}" stands for the byte 0xFF, not its UTF-8 encoding.
        let bytes = Data(text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
        #expect(
            throws: ManifestError(.malformed, "not well-formed XML at line 0, column 0: the document is not UTF-8 text")
        ) {
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

    /// mpd: libxml2 also hands FoundationXML an instruction without data when its target is
    /// followed by neither white space nor `?>` (`<?a?r…`, `<?<?x?>`), and for an XML
    /// declaration after the start (a 10-minute fuzz run): instructions no longer reach it, so
    /// one that ends is ignored whatever its target, one that never ends is malformed.
    @Test(arguments: [
        "<?<?x?>\n<MPD type=\"static\"><?a?riodod/></MPD>", "<MPD type=\"static\"><?a<Period/></MPD>", "<MPD><?a",
    ])
    func mpdInstructionUnterminated(text: String) {
        #expect(throws: ManifestError.self) { try MPDParser().parse(Data(text.utf8)) }
    }

    @Test(arguments: [
        "<MPD type=\"static\"><?a?r?><Period/></MPD>", "<MPD type=\"static\"><??><Period/></MPD>",
        "<MPD type=\"static\"><Period/><?xml version=\"1.0\"?></MPD>", "<?<?x?>\n<MPD type=\"static\"><Period/></MPD>",
    ])
    func mpdInstructionsOfAnyShapeAreIgnored(text: String) throws {
        #expect(try MPDParser().parse(Data(text.utf8)).periods.count == 1)
    }

    /// The fuzz run's input itself (a declaration inside a start tag, after the start): a typed
    /// error.
    @Test(arguments: ["declaration-after-start", "instruction-inside-a-tag"])
    func mpdInstructionsFoundByFuzzing(_ name: String) throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        let input = try Data(contentsOf: root.appendingPathComponent("fuzz/regressions/mpd/\(name)"))
        #expect(throws: ManifestError.self) { try MPDParser().parse(input) }
    }

    @Test func mpdInstructionsInCommentsAndCDATA() throws {
        let text = """
            <?xml version="1.0"?><MPD type="static"><!-- <?a?b --><?pi data?><Period><EventStream \
            schemeIdUri="x"><Event><![CDATA[<?c?d]]></Event></EventStream></Period></MPD>
            """
        let mpd = try MPDParser().parse(Data(text.utf8))
        #expect(mpd.periods.count == 1)
    }

    /// Hostile numbers in an MPD reached the timeline's arithmetic, which trapped: `S@r` of
    /// Int.max (`r + 1`), `$Time$`/`$Number$` past UInt64 (`time += d`, `number += 1`,
    /// `startNumber + index`, `index × duration`), a negative `@bandwidth` in `$Bandwidth$`, and
    /// a repeat count over Int (`Int(...)` of a huge Double). Each timeline now stops where its
    /// numbers end, at most ``RepresentationTimeline/maxEntries`` long.
    @Test(arguments: [
        #"<S t="0" d="2" r="9223372036854775807"/>"#,
        #"<S t="18446744073709551610" d="4" r="5"/>"#,
        #"""
        <S t="0" d="18446744073709551615"/><S t="5" d="18446744073709551615" r="-1"/>\#
        <S t="18446744073709551615" d="1"/>
        """#,
        #"<S t="0" d="1" r="-1"/>"#,
    ])
    func mpdTimelineAtTheEdgeOfItsNumbers(timeline: String) throws {
        let text = """
            <MPD type="dynamic" availabilityStartTime="1970-01-01T00:00:00Z"><Period start="PT0S"><AdaptationSet>
            <Representation id="v" bandwidth="-5"><SegmentTemplate timescale="4294967295" \
            startNumber="18446744073709551613"
             media="$Bandwidth$/$Number$/$Time$.m4s"><SegmentTimeline>\(timeline)</SegmentTimeline></SegmentTemplate>\
            </Representation>
            </AdaptationSet></Period></MPD>
            """
        let mpd = try MPDParser().parse(Data(text.utf8))
        let set = mpd.periods[0].adaptationSets[0]
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let t = try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: set, representation: set.representations[0], manifestURL: url,
            liveEdge: 1_800_000_000)
        var segment = t.liveEdgeSegment(at: now) ?? t.segment(containing: 0)
        for _ in 0..<3 {
            guard let s = segment else { break }
            #expect(s.url.absoluteString.hasPrefix("https://cdn.example/live/0/"))
            segment = t.segment(after: s)
        }
        #expect(t.segment(number: .max) == nil)
    }

    /// The same with `@duration` addressing: numbers and times past UInt64 are no segment.
    @Test func mpdNumberAddressingPastItsNumbers() throws {
        let text = """
            <MPD type="static" mediaPresentationDuration="PT1000000000S"><Period><AdaptationSet>
            <Representation id="v" bandwidth="1"><SegmentTemplate timescale="1" duration="18446744073709551615"
             startNumber="18446744073709551614" presentationTimeOffset="18446744073709551615" \
            media="$Time$"/></Representation>
            </AdaptationSet></Period></MPD>
            """
        let mpd = try MPDParser().parse(Data(text.utf8))
        let set = mpd.periods[0].adaptationSets[0]
        let t = try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: set, representation: set.representations[0], manifestURL: url)
        #expect(t.segment(containing: 1e300) == nil)
        #expect(t.segment(number: .max) == nil)
        if let first = t.segment(containing: 0) { #expect(t.segment(after: first) == nil) }
    }

    /// hls: a program date-time before 1970 trapped converting its negative milliseconds to UInt64.
    @Test func hlsDateTimeBefore1970() throws {
        let p = try media(
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1\n#EXT-X-PROGRAM-DATE-TIME:1176-11-23T23:27:40\n\"\n")
        #expect(throws: ManifestError.self) { try HLSPresentation.mpd(video: p, audio: nil, variant: nil) }
    }

    /// hls: byte ranges whose end (offset + length) is past Int.max trapped adding them up
    /// (the next range without an offset continues from that end).
    @Test(arguments: [
        "#EXT-X-BYTERANGE:9223372036854775807@1", "#EXT-X-BYTERANGE:1@9223372036854775807",
        "#EXT-X-BYTERANGE:1125899906842625",
    ])
    func hlsByteRangePastAnyResource(range: String) {
        #expect(throws: ManifestError.self) {
            try media(
                """
                #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n\(range)\nbig.m4s\n#EXT-X-BYTERANGE:500\n#EXTINF:2,\n\
                big.m4s\n
                """
            )
        }
    }

    /// hls: a segment whose duration runs past any timeline (EXTINF 1e300) trapped the same way.
    @Test func hlsHugeDuration() throws {
        let p = try media(
            "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00Z\n#EXTINF:1e300\na.ts\n")
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
        let timeline = try #require(
            mpd.periods.first?.adaptationSets.first?.representations.first?.segmentTemplate?.timeline)
        #expect(timeline.map(\.d) == [2_000_000, 2_000_000])  // (microseconds)
    }

    /// hls: a media or discontinuity sequence number past 2^64 − 1 trapped counting on.
    @Test func hlsSequenceNumbersPastUInt64() throws {
        let last = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:18446744073709551615\n#EXTINF:2\na.ts\n"
        #expect(throws: ManifestError.self) { try media(last) }
        let discontinuity = """
            #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-DISCONTINUITY-SEQUENCE:18446744073709551615\n\
            #EXT-X-DISCONTINUITY\n#EXTINF:2\na.ts\n
            """
        #expect(throws: ManifestError.self) { try media(discontinuity) }
        // EXT-X-MEDIA-SEQUENCE after the segments no longer overflows the next number.
        let late = try media(
            "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2\na.ts\n#EXT-X-MEDIA-SEQUENCE:18446744073709551615\n")
        #expect(late.nextSequence == 1)
        #expect(
            try media("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MEDIA-SEQUENCE:7\n#EXTINF:2\na.ts\n").nextSequence == 8)
    }

    /// misc: a `$%$` template token (an empty name and format) was split into no parts and indexed.
    @Test func templateTokenOfAPercentSign() {
        let e = SegmentTemplateExpander.expand("V$%$", representationID: "v1", bandwidth: 1, number: 7, time: 0)
        #expect(e == "V$%$")
    }

    /// misc: a box whose 64-bit largesize is over Int.max trapped converting it to Int.
    @Test func fragmentTimeLargesize() {
        let initSegment: [UInt8] = [0, 0, 0, 1, 0xF4, 0, 5, 0x80, 0x80, 0x80, 0x0A, 0xEA, 0xB0, 0xA7, 0xE8, 0xCF]
        #expect(FragmentTime.firstDecodeTime(segment: [UInt8](), initSegment: initSegment) == nil)
        let moov: [UInt8] = [0, 0, 0, 1] + Array("moov".utf8) + [UInt8](repeating: 0xFF, count: 8)
        #expect(FragmentTime.firstDecodeTime(segment: moov, initSegment: moov) == nil)
    }

    /// A server's Date header with numbers past the grammar's digits overflowed the date arithmetic.
    @Test func httpDateOutOfRange() {
        #expect(HTTPDate.parse("Sun, 06 Nov 9223372036854775807 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 9223372036854775807:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, -6 Nov 1994 08:49:37 GMT") == nil)
        #expect(HTTPDate.parse("Sun, 06 Nov 1994 08:49:37 GMT") == Date(timeIntervalSince1970: 784_111_777))
    }

    /// A padding width no number has (`%09999999999d`) is held to 32 digits, not allocated.
    @Test func templateWidthIsBounded() {
        let e = SegmentTemplateExpander.expand(
            "$Number%09999999999d$", representationID: "v1", bandwidth: 1, number: 7, time: 0)
        #expect(e == String(repeating: "0", count: 31) + "7")
    }
}
