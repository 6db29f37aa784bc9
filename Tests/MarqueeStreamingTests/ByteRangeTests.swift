import Foundation
import NIOCore
import Testing

@testable import MarqueeStreaming

/// Byte ranges (HLS `EXT-X-BYTERANGE`): the answer to a ranged request parsed, then checked
/// against the range asked for, and cut to it; the range carried from the playlist to the
/// segment; a playlist numbered by its ranges.
@Suite struct ByteRangeTests {
    let url = "http://origin.test/live/out.ts"

    @Test func contentRangeParsed() {
        #expect(ContentRange.parse("bytes 100-199/1000") == ContentRange(first: 100, last: 199, total: 1000))
        #expect(ContentRange.parse(" bytes 0-0/* ") == ContentRange(first: 0, last: 0, total: nil))
        #expect(ContentRange.parse("BYTES 5-9/10") == ContentRange(first: 5, last: 9, total: 10))
        for junk in [
            "bytes */1000", "bytes 200-100/1000", "bytes 100-199/150", "items 0-9/10", "bytes 0-9", "bytes -5-9/10",
            "bytes +0-9/10",
            "bytes 0-99999999999999999999/*", "bytes 0x0-9/10", "", "bytes 0-9/10/11",
        ] {
            #expect(ContentRange.parse(junk) == nil, "\(junk)")
        }
    }

    /// A 206 is the range only when its Content-Range says exactly that range.
    @Test func partialContentChecked() throws {
        let range = ByteRange(offset: 1000, length: 500)
        #expect(range.header == "bytes=1000-1499")
        var body = try RangedBody(
            range: range, status: 206, contentRange: "bytes 1000-1499/4000", contentLength: "500", url: url)
        let out = body.take(ByteBuffer(bytes: [UInt8](repeating: 7, count: 500)))
        #expect(out.readableBytes == 500 && body.isComplete)
        try body.finish(url: url)
        _ = try RangedBody(range: range, status: 206, contentRange: "bytes 1000-1499/*", contentLength: nil, url: url)

        // A growing file not there yet (the server cut the range at its end), another range,
        // none said, a length that disagrees: failed downloads (tried again).
        for (contentRange, length) in [
            ("bytes 1000-1299/1300", nil), ("bytes 0-499/4000", nil), ("bytes 1000-1999/4000", nil), (nil, "500"),
            ("bytes */1300", nil),
            ("bytes 1000-1499/4000", "4000"),
        ] as [(String?, String?)] {
            #expect(throws: FetchError.self, "\(contentRange ?? "none")") {
                try RangedBody(range: range, status: 206, contentRange: contentRange, contentLength: length, url: url)
            }
        }
        #expect(throws: FetchError.self) {
            try RangedBody(range: range, status: 204, contentRange: nil, contentLength: nil, url: url)
        }
        // A 206 cut short.
        var short = try RangedBody(
            range: range, status: 206, contentRange: "bytes 1000-1499/4000", contentLength: nil, url: url)
        _ = short.take(ByteBuffer(bytes: [UInt8](repeating: 1, count: 300)))
        #expect(throws: FetchError.self) { try short.finish(url: url) }
    }

    /// A 200 (a server or proxy that ignores Range) is the whole resource: the range is cut from
    /// it, across chunks, and the rest is not wanted; one that does not hold it fails.
    @Test func wholeBodySliced() throws {
        let resource = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let range = ByteRange(offset: 2_500, length: 3_000)
        var body = try RangedBody(range: range, status: 200, contentRange: nil, contentLength: "10000", url: url)
        var out: [UInt8] = []
        var chunks = 0
        for start in stride(from: 0, to: resource.count, by: 1_024) where !body.isComplete {
            out += body.take(ByteBuffer(bytes: resource[start..<min(start + 1_024, resource.count)])).readableBytesView
            chunks += 1
        }
        #expect(out == Array(resource[2_500..<5_500]))
        #expect(chunks == 6, "read up to the range's end only")
        try body.finish(url: url)

        // Its Content-Length says it ends before the range does: failed at the head.
        #expect(throws: FetchError.self) {
            try RangedBody(range: range, status: 200, contentRange: nil, contentLength: "5000", url: url)
        }
        // No length said, and the body ends before the range does.
        var shorter = try RangedBody(range: range, status: 200, contentRange: nil, contentLength: nil, url: url)
        _ = shorter.take(ByteBuffer(bytes: resource[0..<5_000]))
        #expect(!shorter.isComplete)
        #expect(throws: FetchError.self) { try shorter.finish(url: url) }
    }

    /// A range over the bound (or empty) is refused without a request.
    @Test func oversizeRangeRefused() async throws {
        #expect(ByteRange(offset: 0, length: ByteRange.maxLength).problem == nil)
        #expect(ByteRange(offset: 0, length: ByteRange.maxLength + 1).problem != nil)
        #expect(ByteRange(offset: 0, length: 0).problem != nil)
        #expect(ByteRange(offset: -1, length: 10).problem != nil)
        #expect(ByteRange(offset: .max - 5, length: 10).problem != nil)
        // Port 9 (discard): nothing listens; a request would fail as .network, not .tooLarge.
        let fetcher = HTTPFetcher()
        let nowhere = URL(string: "http://127.0.0.1:9/out.ts")!
        do {
            _ = try await fetcher.get(nowhere, range: ByteRange(offset: 0, length: ByteRange.maxLength + 1))
            Issue.record("an oversize range was asked for")
        } catch {
            #expect(error.code == .tooLarge)
        }
        do {
            _ = try await fetcher.get(nowhere, maxBytes: 4 << 20, range: ByteRange(offset: 0, length: 5 << 20))
            Issue.record("a range over the caller's bound was asked for")
        } catch {
            #expect(error.code == .tooLarge)
        }
    }

    /// ffmpeg's live `single_file` playlist: ranges of one growing file, the init section a range
    /// of it too (fMP4); each segment refers to its own range.
    @Test func rangesCarriedToTheSegments() throws {
        let text = """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:1
            #EXT-X-MEDIA-SEQUENCE:0
            #EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00.000Z
            #EXT-X-MAP:URI="out.m4s",BYTERANGE="1336@0"
            #EXTINF:1.000000,
            #EXT-X-BYTERANGE:255535@252541
            out.m4s
            #EXTINF:1.000000,
            #EXT-X-BYTERANGE:264433
            out.m4s
            """
        guard
            case .media(let playlist) = try HLSPlaylist.parse(
                text, url: URL(string: "http://origin.test/static/out.m3u8")!)
        else {
            Issue.record("not a media playlist")
            return
        }
        let mpd = try HLSPresentation.mpd(video: playlist, audio: nil, variant: nil)
        let set = mpd.periods[0].adaptationSets[0]
        let timeline = try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: set, representation: set.representations[0],
            manifestURL: URL(string: "http://origin.test/static/out.m3u8")!,
            liveEdge: 1_795_428_002)
        #expect(timeline.initializationURL?.lastPathComponent == "out.m4s")
        #expect(timeline.initializationRange == ByteRange(offset: 0, length: 1336))
        let first = try #require(timeline.segment(number: 0))
        let second = try #require(timeline.segment(after: first))
        #expect(first.url.lastPathComponent == "out.m4s" && first.range == ByteRange(offset: 252_541, length: 255_535))
        #expect(second.range == ByteRange(offset: 252_541 + 255_535, length: 264_433))
    }

    func live(_ ranges: [(Int, Int)], sequence: UInt64 = 0) throws -> HLSMediaPlaylist {
        var text = "#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXT-X-MEDIA-SEQUENCE:\(sequence)\n"
        for (offset, length) in ranges { text += "#EXTINF:1.0,\n#EXT-X-BYTERANGE:\(length)@\(offset)\nout.ts\n" }
        guard case .media(let p) = try HLSPlaylist.parse(text, url: URL(string: "http://origin.test/static/out.m3u8")!)
        else {
            throw ManifestError(.notAManifest, "not a media playlist")
        }
        return p
    }

    /// ffmpeg 5.1's `single_file` keeps EXT-X-MEDIA-SEQUENCE at 0 as its window slides: the
    /// segments are numbered by their ranges, so a reload lists the new ones as new.
    @Test func playlistNumberedByItsRanges() throws {
        let sizes = (0..<20).map { 1000 + $0 * 10 }
        let offsets = sizes.indices.map { sizes[..<$0].reduce(0, +) }
        let window = { (from: Int) in (from..<from + 5).map { (offsets[$0], sizes[$0]) } }
        var numbering = HLSRangeNumbering()
        #expect(try numbering.renumber(live(window(0))).segments.map(\.sequence) == [0, 1, 2, 3, 4])
        #expect(try numbering.renumber(live(window(2))).segments.map(\.sequence) == [2, 3, 4, 5, 6])
        #expect(try numbering.renumber(live(window(3))).mediaSequence == 3)
        // Reloads missed for longer than the window: numbered on after the highest given.
        #expect(try numbering.renumber(live(window(12))).segments.map(\.sequence) == [8, 9, 10, 11, 12])
        #expect(try numbering.renumber(live(window(13))).segments.map(\.sequence) == [9, 10, 11, 12, 13])
        // An older window (a stale answer): its segments keep the numbers they have.
        #expect(try numbering.renumber(live(window(11))).segments.map(\.sequence) == [7, 8, 9, 10, 11])
        // One that would number before 0: left as it is.
        var early = HLSRangeNumbering()
        #expect(try early.renumber(live(window(3))).segments.map(\.sequence) == [0, 1, 2, 3, 4])
        #expect(try early.renumber(live(window(1))).segments.map(\.sequence) == [0, 1, 2, 3, 4])

        // A playlist numbered right keeps its numbers.
        var right = HLSRangeNumbering()
        for from in [0, 1, 3, 4, 15] {
            let p = try live(window(from), sequence: UInt64(100 + from))
            #expect(right.renumber(p) == p)
        }
        // Not live, or not all ranges: untouched.
        var done = try live(window(0))
        done.endList = true
        var fresh = HLSRangeNumbering()
        #expect(fresh.renumber(done) == done)
    }
}
