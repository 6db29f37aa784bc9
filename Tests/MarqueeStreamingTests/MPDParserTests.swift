import Foundation
import Testing

@testable import MarqueeStreaming

/// `../shared/media/dashif-livesim2` beside the package (never copied into the repo).
let sharedMedia = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().appendingPathComponent("shared/media/dashif-livesim2")

func manifest(_ path: String) throws -> Data {
    try Data(contentsOf: sharedMedia.appendingPathComponent(path))
}

@Suite struct MPDParserTests {
    static let realManifests = [
        "testpic_2s/Manifest.mpd", "testpic_2s/Manifest_endNumber.mpd", "testpic_2s/Manifest_imsc1.mpd",
        "testpic_2s/Manifest_thumbs.mpd", "testpic_2s/cea608.mpd", "testpic_8s/Manifest.mpd",
        "testpic_2s_low_delay/Manifest.mpd", "testpic_alt_seg_dur_stl/Manifest.mpd", "WAVE/av/combined.mpd",
        "bbb_hevc_ac3_8s/manifest.mpd", "ads/gotland_runt_ad/manifest.mpd", "ads/train_ad/manifest.mpd",
    ]

    @Test(arguments: realManifests)
    func parsesEveryRealManifest(path: String) throws {
        let mpd = try MPDParser().parse(try manifest(path))
        #expect(mpd.type == .static)
        #expect(!mpd.periods.isEmpty)
        let reps = mpd.periods[0].adaptationSets.flatMap(\.representations)
        #expect(reps.contains { $0.kind == .video } || reps.contains { $0.kind == .audio })
        for rep in reps where rep.kind == .video || rep.kind == .audio {
            #expect(rep.segmentTemplate?.media != nil, "\(path) \(rep.id) has a media template")
        }
    }

    @Test func copesWithTheMalformedTestpicManifest() throws {
        let data = try manifest("testpic_2s/Manifest.mpd")
        #expect(throws: (any Error).self) { _ = try XMLTree.parse(data, maxBytes: 1 << 20) }  // really not well-formed
        let mpd = try MPDParser().parse(data)
        #expect(mpd.mediaPresentationDuration == 8)
        #expect(mpd.maxSegmentDuration == 2)
        let sets = mpd.periods[0].adaptationSets
        #expect(sets.map(\.contentType) == ["audio", "video"])
        let video = try #require(sets[1].representations.first)
        #expect(video.id == "V300" && video.width == 640 && video.height == 360 && video.frameRate == 30)
        #expect(video.segmentTemplate?.duration == 2 && video.segmentTemplate?.timescale == 1)
        #expect(video.segmentTemplate?.media == "$RepresentationID$/$Number$.m4s")
        #expect(sets[0].representations[0].audioSamplingRate == 48000)
    }

    @Test func segmentTimelineOfTheWaveAsset() throws {
        let mpd = try MPDParser().parse(try manifest("WAVE/av/combined.mpd"))
        let audioSet = try #require(mpd.periods[0].adaptationSets.first { $0.contentType == "audio" })
        let audio = audioSet.representations[0]
        #expect(
            audio.segmentTemplate?.timeline == [
                SegmentTimelineEntry(t: 0, d: 93184), SegmentTimelineEntry(d: 95232, r: 3),
            ])
        let timeline = try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: audioSet, representation: audio,
            manifestURL: URL(string: "http://o/WAVE/av/combined.mpd")!)
        let seg = try #require(timeline.segment(containing: 2.0))
        #expect(seg.time == 93184 && seg.url.absoluteString == "http://o/WAVE/av/aac/93184.m4s")
        let next = try #require(timeline.segment(after: seg))
        #expect(next.time == 188416 && abs(next.start - 188416.0 / 48000) < 1e-9)
        #expect(timeline.initializationURL?.absoluteString == "http://o/WAVE/av/aac/init.mp4")
    }

    @Test func refusesDoctypeOversizeAndNonMPD() {
        let evil = Data(
            """
            <?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]><MPD type="static"><Period/></MPD>
            """.utf8)
        #expect { try MPDParser().parse(evil) } throws: { ($0 as? ManifestError)?.code == .doctypeRefused }
        let big = Data(repeating: UInt8(ascii: " "), count: 2048)
        #expect { try MPDParser(maxBytes: 1024).parse(big) } throws: { ($0 as? ManifestError)?.code == .tooLarge }
        #expect { try MPDParser().parse(Data("<html><body/></html>".utf8)) } throws: {
            ($0 as? ManifestError)?.code == .notAManifest
        }
        #expect { try MPDParser().parse(Data("garbage <<<".utf8)) } throws: {
            ($0 as? ManifestError)?.code == .malformed
        }
        let badNumber = Data(
            #"""
            <MPD type="static"><Period><AdaptationSet><SegmentTemplate \#
            timescale="abc"/></AdaptationSet></Period></MPD>
            """#
            .utf8)
        #expect { try MPDParser().parse(badNumber) } throws: { error in
            guard let e = error as? ManifestError else { return false }
            return e.code == .invalidValue && e.message.contains("timescale")
        }
        let liveWithoutAST = Data(#"<MPD type="dynamic"><Period/></MPD>"#.utf8)
        #expect { try MPDParser().parse(liveWithoutAST) } throws: { ($0 as? ManifestError)?.code == .invalidValue }
    }

    /// Trees an attacker shapes: 200,000 nested elements (this killed the process with a stack
    /// overflow), a million siblings, a 1 MiB attribute. Each is a typed error naming the limit.
    @Test func refusesHostileTrees() {
        func refused(_ xml: String, _ words: String) {
            #expect { try MPDParser(maxBytes: 16 << 20).parse(Data(xml.utf8)) } throws: { error in
                guard let e = error as? ManifestError else { return false }
                return e.code == .malformed && e.message.contains(words)
            }
        }
        let depth = 200_000
        refused(
            #"<MPD type="static">"# + String(repeating: "<Period>", count: depth)
                + String(repeating: "</Period>", count: depth) + "</MPD>", "deeper than 64")
        refused(
            #"<MPD type="static"><Period>"# + String(repeating: "<EventStream/>", count: 1_000_000) + "</Period></MPD>",
            "more than 200000 elements")
        refused(
            #"<MPD type="static" id=""# + String(repeating: "a", count: 1 << 20) + #""><Period/></MPD>"#,
            "attribute id of <MPD> is longer")
        // Limits a real manifest is far from: one 16 deep still parses.
        let fine =
            #"<MPD type="static" mediaPresentationDuration="PT10S"><Period>"# + String(repeating: "<X>", count: 16)
            + String(repeating: "</X>", count: 16)
                + #"""
                <AdaptationSet mimeType="audio/mp4"><Representation id="a" bandwidth="1"><SegmentTemplate \#
                media="a$Number$.m4s" duration="2" timescale="1"/></Representation></AdaptationSet></Period></MPD>
                """#
        #expect(throws: Never.self) { try MPDParser().parse(Data(fine.utf8)) }
    }

    /// The shape ffmpeg's dash muxer writes for a live stream (`-f dash -streaming 1`).
    static let ffmpegLive = """
        <?xml version="1.0" encoding="utf-8"?>
        <MPD xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance"
        \txmlns="urn:mpeg:dash:schema:mpd:2011" xmlns:xlink="http://www.w3.org/1999/xlink"
        \txsi:schemaLocation="urn:mpeg:DASH:schema:MPD:2011 \
        http://standards.iso.org/ittf/PubliclyAvailableStandards/MPEG-DASH_schema_files/DASH-MPD.xsd"
        \tprofiles="urn:mpeg:dash:profile:isoff-live:2011" type="dynamic" minimumUpdatePeriod="PT500S"
        \tsuggestedPresentationDelay="PT4S" availabilityStartTime="2026-11-22T03:20:00.250Z"
        \tpublishTime="2026-11-22T03:21:00Z" timeShiftBufferDepth="PT30.0S" maxSegmentDuration="PT2.0S" \
        minBufferTime="PT4.0S">
        \t<ProgramInformation></ProgramInformation>
        \t<ServiceDescription id="0"><Latency target="3000" min="2000" max="6000"/><PlaybackRate min="0.97" \
        max="1.03"/></ServiceDescription>
        \t<Period id="0" start="PT0.0S">
        \t\t<AdaptationSet id="0" contentType="video" startWithSAP="1" segmentAlignment="true" \
        bitstreamSwitching="true" frameRate="30/1" maxWidth="1280" maxHeight="720" par="16:9">
        \t\t\t<Representation id="0" mimeType="video/mp4" codecs="avc1.64001f" bandwidth="3000000" width="1280" \
        height="720" sar="1:1">
        \t\t\t\t<SegmentTemplate timescale="15360" initialization="init-stream$RepresentationID$.m4s" \
        media="chunk-stream$RepresentationID$-$Number%05d$.m4s" startNumber="1">
        \t\t\t\t\t<SegmentTimeline>
        \t\t\t\t\t\t<S t="0" d="30720" r="2" />
        \t\t\t\t\t\t<S d="29696" />
        \t\t\t\t\t</SegmentTimeline>
        \t\t\t\t</SegmentTemplate>
        \t\t\t</Representation>
        \t\t</AdaptationSet>
        \t</Period>
        \t<UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-xsdate:2014" value="http://127.0.0.1:8080/time"/>
        </MPD>
        """

    @Test func ffmpegLiveManifest() throws {
        let mpd = try MPDParser().parse(Data(Self.ffmpegLive.utf8))
        #expect(mpd.isLive && mpd.timeShiftBufferDepth == 30 && mpd.suggestedPresentationDelay == 4)
        #expect(mpd.availabilityStartTime == XSDateTime.date("2026-11-22T03:20:00Z")!.addingTimeInterval(0.25))
        #expect(mpd.serviceDescription?.latencyTarget == 3000 && mpd.serviceDescription?.playbackRateMax == 1.03)
        #expect(mpd.utcTimings.first?.scheme == .httpXSDate)
        let set = mpd.periods[0].adaptationSets[0]
        let rep = set.representations[0]
        #expect(rep.kind == .video && rep.frameRate == 30)
        let timeline = try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: set, representation: rep,
            manifestURL: URL(string: "http://h/live/out.mpd")!)
        #expect(timeline.initializationURL?.absoluteString == "http://h/live/init-stream0.m4s")
        let last = try #require(timeline.lastListedSegment)
        #expect(last.number == 4 && last.time == 92160 && last.url.lastPathComponent == "chunk-stream0-00004.m4s")
        // The live edge: segment 4 ends at 121856/15360 = 7.933 s after AST.
        let ast = mpd.availabilityStartTime!
        #expect(timeline.liveEdgeSegment(at: ast.addingTimeInterval(7.95))?.number == 4)
        #expect(timeline.liveEdgeSegment(at: ast.addingTimeInterval(7.9))?.number == 3)
        #expect(timeline.availabilityStart(of: last) == ast.addingTimeInterval(121856.0 / 15360))
    }

    @Test func numberTemplateLiveMath() throws {
        let text = """
            <MPD type="dynamic" availabilityStartTime="1970-01-01T00:00:00Z"><Period start="PT0S">
            <AdaptationSet contentType="audio"><SegmentTemplate timescale="48000" duration="96000" startNumber="0"
              presentationTimeOffset="0" media="$RepresentationID$/$Number$.m4s" \
            initialization="$RepresentationID$/init.mp4"/>
            <Representation id="a" bandwidth="1"/></AdaptationSet></Period></MPD>
            """
        let mpd = try MPDParser().parse(Data(text.utf8))
        let set = mpd.periods[0].adaptationSets[0]
        let timeline = try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: set, representation: set.representations[0],
            manifestURL: URL(string: "http://h/x.mpd")!)
        let now = Date(timeIntervalSince1970: 1_800_000_001.5)
        let edge = try #require(timeline.liveEdgeSegment(at: now))
        #expect(edge.number == 899_999_999 && edge.end == 1_800_000_000)
        let at = try #require(timeline.segment(containing: 1_800_000_001.5 - 3))
        #expect(at.number == 899_999_999 && at.time == 899_999_999 * 96000)
        #expect(timeline.ptsOffset == 0)
    }

    @Test func durationsDatesAndTemplates() {
        #expect(ISO8601Duration.seconds("PT0H0M8.000S") == 8)
        #expect(ISO8601Duration.seconds("P1DT1H1M1.5S") == 90061.5)
        #expect(
            ISO8601Duration.seconds("PT") == nil && ISO8601Duration.seconds("5S") == nil
                && ISO8601Duration.seconds("PT5X") == nil)
        #expect(ISO8601Duration.string(2.5) == "PT2.5S")
        #expect(abs(XSDateTime.date("1970-01-02T00:00:01+01:00")!.timeIntervalSince1970 - (86_401 - 3600)) < 1e-6)
        #expect(XSDateTime.date("2026-11-22T03:20:00") == XSDateTime.date("2026-11-22T03:20:00Z"))
        #expect(XSDateTime.date("2026-13-22T03:20:00Z") == nil)
        let d = Date(timeIntervalSince1970: 1_795_000_000.123)
        #expect(XSDateTime.string(d) == "2026-11-18T11:06:40.123Z")
        #expect(HTTPDate.parse(HTTPDate.string(d)) == Date(timeIntervalSince1970: 1_795_000_000))
        #expect(HTTPDate.string(Date(timeIntervalSince1970: 784_111_777)) == "Sun, 06 Nov 1994 08:49:37 GMT")
        let e = SegmentTemplateExpander.expand(
            "$RepresentationID$/$Number%05d$-$Time$-$Bandwidth$$$.m4s", representationID: "v1", bandwidth: 300,
            number: 42, time: 7)
        #expect(e == "v1/00042-7-300$.m4s")
    }
}
