import Foundation
import Testing

@testable import MarqueeOrigin

@Suite("MP4 box walker and tfdt rewriter")
struct RewriterTests {
    /// A moof with one traf (tfhd default-base-is-moof, tfdt v0, trun with data_offset) + mdat.
    static func fragment(tfdt: UInt32, payload: [UInt8] = [1, 2, 3, 4]) -> [UInt8] {
        var tfhdFull: [UInt8] = []
        tfhdFull.appendU32(20)
        tfhdFull.appendU32(FourCC.tfhd.value)
        tfhdFull.appendU32(0x02_0008)
        tfhdFull.appendU32(1)
        tfhdFull.appendU32(512)  // track 1, default duration 512
        var tfdtBox: [UInt8] = []
        tfdtBox.appendU32(16)
        tfdtBox.appendU32(FourCC.tfdt.value)
        tfdtBox.appendU32(0)
        tfdtBox.appendU32(tfdt)
        var trun: [UInt8] = []
        trun.appendU32(20)
        trun.appendU32(FourCC.trun.value)
        trun.appendU32(0x01)
        trun.appendU32(2)
        let trafSize = 8 + tfhdFull.count + tfdtBox.count + trun.count + 4  // + data_offset
        let moofSize = 8 + trafSize
        trun.appendU32(UInt32(moofSize + 8))  // data_offset: start of mdat payload
        var traf: [UInt8] = []
        traf.appendU32(UInt32(trafSize))
        traf.appendU32(FourCC.traf.value)
        traf += tfhdFull + tfdtBox + trun
        var out: [UInt8] = []
        out.appendU32(UInt32(moofSize))
        out.appendU32(FourCC.moof.value)
        out += traf
        out.appendU32(UInt32(8 + payload.count))
        out.appendU32(FourCC.mdat.value)
        out += payload
        return out
    }

    let rewriter = DecodeTimeRewriter(trackID: 1, trackTimescale: 1000)
    let track = InitSegmentInfo(trackID: 1, timescale: 1000, defaultSampleDuration: nil)

    @Test("a small shift keeps tfdt v0 and the size")
    func smallShift() throws {
        let input = Self.fragment(tfdt: 1000) + Self.fragment(tfdt: 2024)
        let output = try rewriter.rewrite(input, delta: 500, name: "t")
        #expect(output.count == input.count)
        let reader = MP4Reader(bytes: output, name: "t")
        let tfdts = try reader.find([.moof, .traf, .tfdt]).map { try MediaSegmentTiming.decodeTime(reader, $0) }
        #expect(tfdts == [1500, 2524])
        #expect(try MediaSegmentTiming.parse(reader, track: track).duration == 2048)
    }

    @Test("a shift past 32 bits makes tfdt v1 and fixes moof/traf sizes and data_offset, per moof")
    func growth() throws {
        let input = Self.fragment(tfdt: 0, payload: [9, 8, 7]) + Self.fragment(tfdt: 1024, payload: [6, 5])
        let delta = Int64(1) << 40
        let output = try rewriter.rewrite(input, delta: delta, name: "t")
        #expect(output.count == input.count + 8)
        let reader = MP4Reader(bytes: output, name: "t")
        let tfdts = try reader.find([.moof, .traf, .tfdt])
        #expect(
            try tfdts.map { try MediaSegmentTiming.decodeTime(reader, $0) } == [UInt64(delta), UInt64(delta) + 1024])
        #expect(try tfdts.map { try reader.fullBoxHeader($0).version } == [1, 1])
        // data_offset still points at each mdat's payload.
        let top = try reader.boxes(in: 0..<output.count)
        for (moof, mdat, first) in [(top[0], top[1], UInt8(9)), (top[2], top[3], UInt8(6))] {
            let trun = try #require(
                try reader.find([.moof, .traf, .trun]).first { $0.start > moof.start && $0.start < moof.end })
            let offset = Int(try reader.u32(trun.contentStart + 8))
            #expect(moof.start + offset == mdat.contentStart)
            #expect(output[moof.start + offset] == first)
        }
    }

    @Test("malformed boxes are typed errors, never crashes")
    func malformed() {
        let good = Self.fragment(tfdt: 0)
        for cut in [3, 9, 30, 50, good.count - 3] {
            let truncated = Array(good.prefix(cut))
            #expect(throws: OriginError.self) { _ = try rewriter.rewrite(truncated, delta: 1 << 40, name: "cut") }
            #expect(throws: OriginError.self) {
                _ = try MediaSegmentTiming.parse(MP4Reader(bytes: truncated, name: "cut"), track: track)
            }
        }
        var huge = good
        huge.putU32(0xFFFF_FFF0, at: 0)  // moof claims more than the file holds
        #expect(throws: OriginError.self) { _ = try rewriter.rewrite(huge, delta: 1, name: "huge") }
        var samples = good
        samples.putU32(0x101, at: 8 + 8 + 20 + 16 + 8)  // trun: data_offset + per-sample durations
        samples.putU32(0x7FFF_FFFF, at: 8 + 8 + 20 + 16 + 12)  // trun sample_count
        #expect(throws: OriginError.self) {
            _ = try MediaSegmentTiming.parse(MP4Reader(bytes: samples, name: "samples"), track: track)
        }
    }

    @Test("live timeline: number/time addressing and availability windows")
    func timeline() {
        let segments = (0..<4).map {
            LoopSegment(
                file: "\($0)", baseMediaDecodeTime: UInt64($0) * 2000, offset: UInt64($0) * 2000, duration: 2000)
        }
        let rep = LoopRepresentation(
            representation: .init(id: "v", bandwidth: 1), initFile: "", track: track,
            segments: segments, loopTicks: 8000, nominalDuration: 2000)
        var options = LiveOptions()
        options.startNumber = 10
        let timeline = LiveTimeline(representation: rep, options: options)
        #expect(timeline.segment(number: 9) == nil)
        #expect(timeline.segment(number: 15) == LiveSegment(index: 5, mediaTime: 10_000, duration: 2000, vodIndex: 1))
        #expect(timeline.segment(time: 10_000)?.index == 5)
        #expect(timeline.segment(time: 10_001) == nil)
        let early = timeline.availability(numberedIndex: 5, now: 11.9)
        #expect(early != .available && early != .expired)
        #expect(timeline.availability(numberedIndex: 5, now: 12) == .available)
        #expect(timeline.availability(numberedIndex: 5, now: 71.9) == .available)
        #expect(timeline.availability(numberedIndex: 5, now: 72) == .expired)
        let listed = timeline.listedSegments(now: 13)
        #expect(listed.first?.mediaTime == 0 && listed.last?.mediaTime == 10_000)
        #expect(LiveManifestWriter.compress(listed).count == 1)
    }

    /// AAC audio segments are not all their nominal 2 s (1024-sample frames: 93 or 94 of them).
    /// What an HLS playlist lists (complete by its media) is served by number at that instant.
    @Test("live timeline: a segment shorter than its nominal duration is served once listed")
    func unevenSegmentsAreServedOnceListed() {
        let durations: [UInt64] = [1984, 2005, 1984, 2027]  // ms: the loop is 8 s, as 4 × 2 s
        var offset: UInt64 = 0
        let segments = durations.enumerated().map { k, d in
            defer { offset += d }
            return LoopSegment(file: "\(k)", baseMediaDecodeTime: offset, offset: offset, duration: d)
        }
        let rep = LoopRepresentation(
            representation: .init(id: "a", bandwidth: 1), initFile: "", track: track,
            segments: segments, loopTicks: 8000, nominalDuration: 2000)
        let timeline = LiveTimeline(representation: rep, options: LiveOptions())
        var checked = 0
        for ms in stride(from: 4000, to: 20_000, by: 1) {
            let now = Double(ms) / 1000
            for segment in timeline.listedSegments(now: now)
            where Double(segment.mediaTime + segment.duration) / 1000 <= now {
                #expect(
                    timeline.availability(numberedIndex: segment.index, now: now) == .available,
                    "\(segment) at \(now)")
                checked += 1
            }
        }
        #expect(checked > 10_000)
        // Nor does it leave before its nominal end has been in the past the buffer's depth.
        #expect(timeline.availability(numberedIndex: 1, now: 4.0 + 59.999) == .available)
    }

    @Test(
        """
        every timeline entry is served for at least its own duration after it is listed (WAVE's audio overlaps its \
        loop point)
        """
    )
    func listedEntriesOutliveTheirListing() {
        // WAVE's AAC: 93184 ticks, then 4 × 95232 at 48 kHz in an 8 s loop: the last segment
        // ends 1.877 s past the loop point, 64 ms before the next loop's first one. Listed by
        // their ends, both were the timeline's oldest pair at once, and the second one left
        // the buffer 64 ms after the first (a loaded client's fetch of it was answered 410).
        let wave = InitSegmentInfo(trackID: 1, timescale: 48000, defaultSampleDuration: nil)
        let offsets: [UInt64] = [0, 93184, 188416, 283648, 378880]
        let segments = offsets.enumerated().map { i, offset in
            LoopSegment(file: "\(i)", baseMediaDecodeTime: offset, offset: offset, duration: i == 0 ? 93184 : 95232)
        }
        let rep = LoopRepresentation(
            representation: .init(id: "aac", bandwidth: 1), initFile: "", track: wave,
            segments: segments, loopTicks: 384_000, nominalDuration: 76800)
        var options = LiveOptions()
        options.timeShiftBufferDepth = 20
        let timeline = LiveTimeline(representation: rep, options: options)
        // Every 10 ms over two loops, well after the start.
        for step in 0..<1600 {
            let now = 1000 + Double(step) * 0.01
            let listed = timeline.listedSegments(now: now)
            #expect(!listed.isEmpty)
            for segment in listed {
                let lasts = Double(segment.duration) / 48000
                #expect(
                    timeline.availability(timed: segment, now: now + lasts - 0.001) == .available,
                    "listed at \(now): t=\(segment.mediaTime) gone within its \(lasts) s")
            }
            // Still the whole buffer: nothing older than tsbd listed, nothing newer than tsbd left out.
            let first = Double(listed[0].mediaTime) / 48000
            #expect(first > now - 20 - 0.001 && first <= now - 20 + 95232.0 / 48000, "\(now): first \(first)")
        }
    }
}
