import Foundation
import Testing

@testable import MarqueeStreaming

@Suite struct SCTE35Tests {
    /// The splice_insert sample of ANSI/SCTE 35 §14.1: event 0x4800008F, out of network,
    /// break_duration 0x00052CCF5 ticks of 90 kHz.
    @Test func specSpliceInsert() throws {
        let bytes = [UInt8](
            Data(base64Encoded: "/DAvAAAAAAAA///wFAVIAACPf+/+c2nALv4AUsz1AAAAAAAKAAhDVUVJAAABNWLbowo=")!)
        let cue = try SpliceInfo(bytes: bytes)
        guard case .spliceInsert(let insert) = cue.command else {
            Issue.record("not a splice_insert: \(cue.command)")
            return
        }
        #expect(insert.eventID == 0x4800_008F)
        #expect(insert.outOfNetwork)
        #expect(!insert.cancelled)
        #expect(abs(insert.breakDuration! - 5_426_421.0 / 90_000) < 1e-9)
        #expect(SpliceInfo.crc32MPEG2(bytes) == 0)  // a section with its CRC appended checks to 0
    }

    /// The time_signal sample of §14.2: a placement opportunity start of 0x0001A599B0 ticks.
    @Test func specTimeSignal() throws {
        let bytes = [UInt8](
            Data(base64Encoded: "/DA0AAAAAAAA///wBQb+cr0AUAAeAhxDVUVJSAAAjn/PAAGlmbAICAAAAAAsoKGKNAIAmsnRfg==")!)
        let cue = try SpliceInfo(bytes: bytes)
        #expect(cue.command == .timeSignal)
        #expect(cue.segmentations.count == 1)
        let s = try #require(cue.segmentations.first)
        #expect(s.eventID == 0x4800_008E)
        #expect(s.typeID == 0x34 && s.startsBreak)
        #expect(abs(s.duration! - 27_630_000.0 / 90_000) < 1e-9)
        let event = try #require(
            try EventScheme.event(
                scheme: EventScheme.scte35Binary, value: nil, time: 12, duration: nil, id: nil, message: bytes,
                origin: .inband))
        #expect(event.kind == .adBreakStart(creative: nil))
        #expect(event.time == 12 && abs(event.duration! - 307) < 1e-9)
    }

    @Test func encodedSpliceInsertRoundTrips() throws {
        for (out, duration, cancel) in [(true, 12.5 as Double?, false), (false, nil, false), (true, nil, true)] {
            let bytes = SpliceInfo.spliceInsertSection(
                eventID: 77, outOfNetwork: out, duration: duration, cancel: cancel)
            #expect(SpliceInfo.crc32MPEG2(bytes) == 0)
            let cue = try SpliceInfo(bytes: bytes)
            #expect(
                cue.command
                    == .spliceInsert(
                        .init(
                            eventID: 77, cancelled: cancel, outOfNetwork: cancel ? false : out, breakDuration: duration)
                    ))
        }
    }

    @Test func badCuesAreTypedErrors() {
        #expect(throws: ManifestError.self) { try SpliceInfo(bytes: [0xFC, 0x30]) }
        #expect(throws: ManifestError.self) { try SpliceInfo(bytes: [UInt8](repeating: 0, count: 20)) }
        var truncated = SpliceInfo.spliceInsertSection(eventID: 1, outOfNetwork: true, duration: 5)
        truncated.removeLast(12)
        #expect(throws: ManifestError.self) { try SpliceInfo(bytes: truncated) }
    }
}

@Suite struct EventMessageTests {
    @Test func version1BoxIsFoundAcrossChunksAndPlaced() throws {
        let cue = SpliceInfo.spliceInsertSection(eventID: 9, outOfNetwork: true, duration: 4)
        let emsg = EventMessageBox.version1(
            scheme: EventScheme.scte35Binary, timescale: 1000, time: 20_500, duration: 4000, id: 9, message: cue)
        // styp, emsg, moof-ish, a 100 kB mdat, a second emsg (mute), in awkward chunk sizes
        func box(_ type: String, _ body: Int) -> [UInt8] {
            withUnsafeBytes(of: UInt32(body + 8).bigEndian, Array.init) + Array(type.utf8)
                + [UInt8](repeating: 0xAB, count: body)
        }
        let mute = EventMessageBox.version1(
            scheme: EventScheme.broadcast, value: "mute", timescale: 10, time: 300, duration: 20, id: 2, message: [])
        let segment = box("styp", 12) + emsg + box("moof", 200) + box("mdat", 100_000) + mute
        var scanner = EventMessageScanner()
        var bodies: [[UInt8]] = []
        var i = 0
        for size in [1, 3, 7, 8, 500, 64_000, 100_000] where i < segment.count {
            let end = min(segment.count, i + size)
            bodies += segment[i..<end].withUnsafeBytes { scanner.feed($0) }
            i = end
        }
        #expect(bodies.count == 2)
        let events = try bodies.map { try EventMessageBox(body: $0).timedEvent(segmentStart: 0, ptsOffset: 100) }
        #expect(
            events[0]
                == TimedEvent(
                    time: 120.5, duration: 4, kind: .adBreakStart(creative: nil), id: "scte35:9", origin: .inband))
        #expect(events[1] == TimedEvent(time: 130, duration: 2, kind: .streamerMuted, id: "2", origin: .inband))
    }

    /// A segment stuffed with events: the first ``EventMessageScanner/maxEvents`` are kept,
    /// the rest skipped and counted (a hostile packager cannot flood the player with events).
    @Test func aFloodOfEventsIsCapped() {
        let one = EventMessageBox.version1(
            scheme: EventScheme.broadcast, value: "mute", timescale: 10, time: 300, duration: 20, id: 2, message: [])
        let segment = Array(repeating: one, count: 10_000).flatMap { $0 }
        var scanner = EventMessageScanner()
        let bodies = segment.withUnsafeBytes { scanner.feed($0) }
        #expect(
            bodies.count == EventMessageScanner.maxEvents && scanner.refused == 10_000 - EventMessageScanner.maxEvents)
    }

    @Test func malformedBoxesAreErrors() {
        #expect(throws: ManifestError.self) { try EventMessageBox(body: [0, 0, 0]) }
        #expect(throws: ManifestError.self) {
            try EventMessageBox(body: [2, 0, 0, 0] + [UInt8](repeating: 0, count: 40))
        }
        #expect(throws: ManifestError.self) {
            try EventMessageBox(
                body: Array(
                    EventMessageBox.version1(
                        scheme: EventScheme.broadcast, value: "louder", timescale: 1, time: 0, duration: 0, id: 1,
                        message: []
                    ).dropFirst(8))
            )
            .timedEvent(segmentStart: 0, ptsOffset: 0)
        }
    }

    @Test func manifestEventStreams() throws {
        let xml = """
            <MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT60S" \
            minBufferTime="PT2S">
              <Period start="PT10S">
                <EventStream schemeIdUri="urn:marquee:broadcast:2026" timescale="1000">
                  <Event presentationTime="5000" duration="3000" id="1">mute</Event>
                </EventStream>
                <EventStream schemeIdUri="urn:scte:scte35:2014:xml+bin" timescale="90000" \
            presentationTimeOffset="90000">
                  <Event presentationTime="1890000" id="7"><scte35:Signal \
            xmlns:scte35="http://www.scte.org/schemas/35/2016"><scte35:Binary>\
            \(Data(SpliceInfo.spliceInsertSection(eventID: 7, outOfNetwork: true, duration: 6)).base64EncodedString())\
            </scte35:Binary></scte35:Signal></Event>
                </EventStream>
                <AdaptationSet mimeType="audio/mp4"><Representation id="a" bandwidth="1" \
            codecs="mp4a.40.2"><SegmentTemplate media="a$Number$.m4s" duration="2" /></Representation></AdaptationSet>
              </Period>
            </MPD>
            """
        let mpd = try MPDParser().parse(Data(xml.utf8))
        let streams = mpd.periods[0].eventStreams
        let mute = EventScheme.events(of: streams[0], periodStart: 10)
        #expect(mute.errors.isEmpty)
        #expect(mute.events == [TimedEvent(time: 15, duration: 3, kind: .streamerMuted, id: "1", origin: .manifest)])
        let ad = EventScheme.events(of: streams[1], periodStart: 10)
        #expect(ad.errors.isEmpty)
        #expect(ad.events.count == 1)
        #expect(
            ad.events.first.map {
                abs($0.time - 30) < 1e-9 && $0.duration == 6 && $0.kind == .adBreakStart(creative: nil)
            } == true)
    }
}
