import Foundation
import MarqueeStreaming
import Testing

@testable import MarqueeOrigin

/// The origin's live HLS: the same live timeline as its DASH, read with our own HLS parser.
@Suite("Live origin as HLS")
struct HLSOriginTests {
    @Test("master and media playlists: a sliding window of complete segments on the live timeline")
    func liveHLS() async throws {
        let origin = try await SharedOrigin.shared.get()
        let base = origin.manifestURL(asset: "generated", options: ["tsbd_20"]).deletingLastPathComponent()
        let masterURL = base.appendingPathComponent("master.m3u8")
        let master = try await fetch(masterURL)
        #expect(master.status == 200)
        #expect(master.headers["content-type"].first == "application/vnd.apple.mpegurl")
        guard
            case .multivariant(let m) = try HLSPlaylist.parse(
                String(decoding: master.body, as: UTF8.self), url: masterURL)
        else {
            Issue.record("not a multivariant playlist")
            return
        }
        #expect(m.variants.count == 1 && m.variants[0].width == 1280 && m.variants[0].audioGroup == "audio")
        #expect(m.renditions.count == 1 && m.renditions[0].kind == .audio)
        for url in [m.variants[0].uri, m.renditions[0].uri!] {
            let fetchedAt = now()
            let text = String(decoding: try await fetch(url).body, as: UTF8.self)
            let receivedAt = now()  // the playlist was written in between (a loaded box may take a while)
            guard case .media(let p) = try HLSPlaylist.parse(text, url: url) else {
                Issue.record("\(url) is not a media playlist")
                continue
            }
            #expect(p.isLive && p.targetDuration == 2)
            // 20 s window of 2 s segments, every one complete and no older than the window.
            #expect((9...10).contains(p.segments.count), "\(p.segments.count) segments")
            let last = try #require(p.segments.last)
            let first = try #require(p.segments.first)
            let lastEnd = last.programDateTime!.timeIntervalSince1970 + last.duration
            #expect(
                lastEnd <= receivedAt + 0.01 && lastEnd > fetchedAt - 2.1,
                "live edge \(lastEnd - fetchedAt) s from the request")
            // Media sequence = $Number$ = PDT / 2 s (AST 0): the DASH and HLS timelines agree.
            #expect(
                p.mediaSequence == first.sequence
                    && first.sequence == UInt64((first.programDateTime!.timeIntervalSince1970 / 2).rounded()))
            #expect(first.map?.uri.lastPathComponent == "init.mp4")
            let segment = try await fetch(last.uri)
            #expect(segment.status == 200)
            let tfdt = try firstDecodeTime(segment.body)
            let timescale: Double = url.lastPathComponent == "0.m3u8" ? 15360 : 48000
            #expect(abs(Double(tfdt.value) / timescale - last.programDateTime!.timeIntervalSince1970) < 0.001)
        }
        #expect(try await fetch(base.appendingPathComponent("nope.m3u8")).status == 404)
    }

    /// `drift_5000`: the media clock 0.5 % fast. Every segment holds 2 s of media (its `tfdt`)
    /// but is dated 1.99 s after the one before, and the newest listed has ended on the wall clock.
    @Test("drift_: segments dated on the wall clock, media in media time")
    func drift() async throws {
        let origin = try await SharedOrigin.shared.get()
        let ast = Double(Int(now()) - 600)
        let url = origin.manifestURL(asset: "generated", options: ["ast_\(Int(ast))", "tsbd_20", "drift_5000"])
            .deletingLastPathComponent()
            .appendingPathComponent("0.m3u8")
        // (The answer judged within this machine's clock read before the request and after it:
        // a CI run's loaded parallel suites read the answer 0.1 s after it was made.)
        let sentAt = now()
        let text = String(decoding: try await fetch(url).body, as: UTF8.self)
        let receivedAt = now()
        guard case .media(let p) = try HLSPlaylist.parse(text, url: url) else {
            Issue.record("not a media playlist")
            return
        }
        let dates = p.segments.compactMap { $0.programDateTime?.timeIntervalSince1970 }
        #expect(
            dates.count == p.segments.count && dates.count >= 8,
            "every segment dated: \(dates.count) of \(p.segments.count)")
        #expect(zip(dates, dates.dropFirst()).allSatisfy { abs($1 - $0 - 2 / 1.005) < 0.0015 }, "dates \(dates)")
        let last = try #require(p.segments.last)
        let lastEnd = last.programDateTime!.timeIntervalSince1970 + 2 / 1.005
        #expect(
            lastEnd <= receivedAt + 0.01 && lastEnd > sentAt - 2 / 1.005 - 0.01,
            "live edge \(lastEnd - sentAt) s from the request, \(lastEnd - receivedAt) s from the answer")
        let tfdt = try firstDecodeTime(try await fetch(last.uri).body)
        // Media time since AST runs 0.5 % ahead of the date's time since AST.
        let media = Double(tfdt.value) / 15360
        #expect(abs(media - (last.programDateTime!.timeIntervalSince1970 - ast) * 1.005) < 0.002, "tfdt \(media) s")
    }
}

@Suite("Origin bandwidth limit")
struct BandwidthLimitTests {
    @Test("bw_<kbps> paces every segment response to that rate")
    func pacedSegments() async throws {
        let origin = try await SharedOrigin.shared.get()
        let number = UInt64(now() / 2) - 3
        let limited = origin.manifestURL(asset: "generated", options: ["bw_4000"]).deletingLastPathComponent()
        let free = origin.manifestURL(asset: "generated").deletingLastPathComponent()
        let t0 = now()
        let fast = try await fetch(free.appendingPathComponent("0/\(number).m4s"))
        let t1 = now()
        let (slow, stalled) = try await measuringHeldBack {
            try await fetch(limited.appendingPathComponent("0/\(number).m4s"))
        }
        let t2 = now()
        #expect(slow.body == fast.body)
        let expected = Double(slow.body.count) * 8 / 4_000_000
        #expect(expected > 0.3, "segment too small to measure: \(slow.body.count) bytes")
        // Never faster than the limit (5 %: the first piece leaves at once). Not slower than the
        // limit by more than 15 %, plus what the same bytes cost unpaced just before (`fast`:
        // connection, request, copies), plus the time this process was not running (`stalled`:
        // beside the parallel suites a fetch took 2.31 s for 1.37 s due, the ticker's tasks
        // held back as long), plus 100 ms: the pacer sends each piece at its absolute due
        // time, so a late wake-up is caught up, not added up. (The bound was 4× + 1 s, which
        // measured the load, not the pacer.)
        let unpaced = t1 - t0
        #expect(
            t2 - t1 >= 0.95 * expected && t2 - t1 <= 1.15 * expected + unpaced + stalled + 0.1,
            "took \(t2 - t1) s at 4 Mb/s, expected \(expected) s (unpaced \(unpaced) s, process held back \(stalled) s)"
        )
    }
}
