import Foundation
import Logging
import Marquee
import MarqueeStreaming
import MarqueeVenue
import TestSupport
import Testing

/// Two boxes behind one venue proxy on live HLS without program date-times (ffmpeg's HLS muxer,
/// 2 s segments, served as files by our origin): the proxy learns when the packager publishes
/// from every upstream answer it receives for both boxes, and tells each box with each playlist
/// (``LiveAnchor/shared(error:)``). `marquee play` first; a player in this process seconds later,
/// at another point of the segment cycle: judged by the instants both show the same picture,
/// from the later box's first picture on, and by what each says places its timeline.
///
/// Disabled since 2026-11-29 (issue 41): the boxes were a constant 1.4–8.4 ms apart (p95; bound
/// 1 ms), each picture following its box's sound, which a re-anchor under the audio lock's 20 ms
/// did not move. Now the tempo stage trims the sound onto each re-anchored schedule, the playlist
/// keeps microseconds and each answer is taken as made halfway through its round trip. Session
/// 35 (quiet machine): p95 0.49–2.31 ms over 13 runs (two variants below included), 7 within 1 ms;
/// after the first 5 s most windows' p95 are 0.1–0.7 ms. The misses: a first second 2–4 ms off
/// (the joining box's first reading of the proxy, trimmed away over 1–2 s), or a 5 s window whose
/// median is up to 2.4 ms off (the boxes' readings of one estimate at different answers; the
/// proxy's middle moves by 1–2 ms from answer to answer). Tried, not better over three runs each:
/// reading from the answer of the shortest round trip among the last eight, and the proxy telling
/// one phase while its evidence allows (fewer moves, the same skew). Earlier: a median of the last
/// five broke a lone box's first placement (`ffmpegsHLSPlaysThroughTheVenueProxy`). Session 40:
/// box A's moves came in pairs at one instant (−2.7 then +0.0 ms): the proxy cut the ages of an
/// answer made near the publication at zero, moving the middle told; now it narrows them about
/// the middle (`PublicationBookTests`), the pairs are gone, and three runs gave p95 3.54, 1.73
/// and 1.51 ms: the proxy's own estimate moves by 1–4 ms every few answers, and each box follows
/// it at its own next answer. Session 41: each box read the proxy's answers one at a time, each
/// off by how unevenly its request and answer travelled (up to 2 ms); now the proxy tells the
/// phase on its own anchor with each answer (held for a segment's cycle, moved only beyond its
/// error) and each box intersects its last 64 answers less the phase told, the proxy probes three
/// times a segment once narrower than 32 ms: 0.59, 2.90 and 4.29 ms over three runs, the misses in
/// the first seconds (the proxy's estimate still moving 5–7 ms when the second box joins).
/// Session 42: a box moved at most once a segment, and its answers come a segment apart give or
/// take a millisecond, so each followed the proxy's estimate (7 ms over 20 s) every other segment,
/// the boxes by turns 1.5–2.3 ms apart for seconds; now half a segment behind a proxy, and every
/// 5 s window after the first is 0.05–0.8 ms (p95) over five runs: 3.93, 0.78, 0.32, 2.65, 0.72 ms.
/// The misses are the joining box's first second or two: its first placement 4.6 ms off, moved at
/// its first probe 0.6 s in, trimmed onto over 2 s. Tried and not kept: each move applied at the
/// picture of the segment it was told with (the boxes then moved together, but a joining box took
/// the proxy's phase of now against the other's of a latency ago: 6.8 and 2.7 ms in the first 5 s),
/// and the proxy probing 15, then 7 times a segment (1.83, 6.80, 0.36, 2.85 ms: its estimate stays
/// about 2 ms unsure, the spread of ffmpeg's publications).
/// Session 43: the joining box's first seconds were the other box trimming onto a move of the
/// phase told (9–13 ms, as ffmpeg's publications refined the proxy's estimate) that the joining
/// box took at once; and each nudge of the proxy's anchor told the phase anew. Now the phase told
/// moves only beyond 20 ms (its error is the boxes' latency's, not their skew), is kept across
/// nudges (on the ends it was told against), and the ages are told exact once the proxy's
/// estimate is within 10 ms (a box then places the proxy's clock by its round trips alone):
/// 0.71, 0.20, 0.56, 0.16, 1.38, 0.69, 0.29, 0.34 ms over eight runs, every first second within
/// 0.6 ms; the miss a box's own placement of the proxy's clock moving 1.2 ms (each box's is
/// ±0.4–1.5 ms: its quickest round trips).
extension LivePlaybackTests {
    @Test(.disabled("issue 41: p95 0.16–1.38 ms over eight runs (bound 1 ms), one miss: a box's clock placement"))
    func twoBoxesBehindOneVenueProxyShowEachPictureTogetherFromTheFirst() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let dir = try Tools.tempDirectory("venue-edge")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let segment = 2.0
        let encoder = try Self.ffmpegLiveHLS(
            in: dir, ["-hls_time", "2", "-hls_list_size", "6", "-hls_flags", "delete_segments"])
        defer { Tools.stop(encoder) }
        let playlist = try await Self.waitForSegments(dir.appendingPathComponent("out.m3u8"), count: 3)
        try #require(!playlist.contains("PROGRAM-DATE-TIME"), "\(playlist)")
        var logger = Logger(label: "test.venue")
        logger.logLevel = .warning
        let proxy = try VenueProxy(
            configuration: VenueConfiguration(upstreams: ["127.0.0.1:\(origin.baseURL.port!)"], sharing: .never),
            logger: logger)
        _ = try await proxy.start()
        defer { Task { await proxy.stop() } }
        let url = try proxy.localURL(for: origin.baseURL.appendingPathComponent("static/out.m3u8"))

        // Box B first (its QoE record on its output), box A later by no whole number of segments.
        let (lateBy, together) = (7.3, 30.0)
        let (boxB, dirB, outB) = try Self.startBox(
            marquee, url, name: "venue-edge-boxB", seconds: lateBy + together + 2)
        defer { Tools.stop(boxB) }
        try await Task.sleep(for: .milliseconds(Int(lateBy * 1000)))
        var anchor: LiveAnchor?
        let run = try await Self.play(
            url, seconds: together, audio: { _ in .null }, target: 3 * segment,
            during: { anchor = $0.status.liveAnchor })
        while boxB.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(boxB.terminationStatus == 0)
        let framesA = run.frames
        let framesB = try FramesFile.read(dirB.appendingPathComponent("frames.tsv"))
        try #require(framesA.count > 600 && framesB.count > 600, "\(framesA.count), \(framesB.count) pictures")

        // The same picture (by pts) on both, from A's first picture on.
        let first = framesA[0].wallTime
        let skew = Self.skews(framesA, framesB)
        try #require(skew.count > 600, "\(skew.count) pictures shown by both")
        let p95 = Stats.percentile(skew.map { abs($0.1) }, 95)
        let firstSecond = Stats.median(skew.filter { $0.0 < 1 }.map { abs($0.1) })
        #expect(
            p95 <= 0.001,
            "skew p95 \(p95 * 1000) ms from A's first picture (its first second: \(firstSecond * 1000) ms)")

        // Each plays every picture in order at a steady latency (a picture's making: ffmpeg
        // stamps its wall clock in the pts).
        let wrap = Double(TransportStreamTimestamps.wrap) / 90_000
        let made = { (f: PresentedFrame) in f.pts + ((f.wallTime - f.pts) / wrap).rounded() * wrap }
        let a = try Self.expectSteadyPlayback(
            framesA, made: made, target: 3 * segment, segment: segment, box: "venue A", settledAfter: 3)
        // (B, the first box behind the proxy, learns the publication by itself in its first
        // seconds, as a box alone does: judged steady once A started.)
        let b = try Self.expectSteadyPlayback(
            framesB, made: made, target: 3 * segment, segment: segment, box: "venue B", settledAfter: lateBy)

        // Both say the venue placed them: A's status, B's QoE record.
        let sharedError = anchor.flatMap { if case .shared(let error) = $0 { error } else { nil } }
        #expect(sharedError != nil, "A's anchor: \(String(describing: anchor))")
        let qoeLine = try #require(
            try String(contentsOf: outB, encoding: .utf8).split(separator: "\n").last { $0.hasPrefix("qoe: ") })
        let qoe = try #require(
            try JSONSerialization.jsonObject(with: Data(qoeLine.dropFirst(5).utf8)) as? [String: Any])
        #expect(qoe["liveAnchor"] as? String == "shared", "box B's QoE record: \(qoeLine)")
        let moves = run.timed.compactMap { timed -> String? in
            guard case .liveEdgeLearned(let moved, let error) = timed.event else { return nil }
            return String(format: "%.1f s: %+.4f s ± %.4f", timed.time - first, moved, error)
        }
        func windows(_ skew: [(Double, Double)]) -> String {
            stride(from: 0.0, to: together, by: 5).map { from in
                let window = skew.filter { $0.0 >= from && $0.0 < from + 5 }.map(\.1)
                return String(
                    format: "%.2f (p95 %.2f)", Stats.median(window) * 1000,
                    Stats.percentile(window.map(abs), 95) * 1000)
            }.joined(separator: ", ")
        }
        print(
            """
            venue edge: skew (B − A, ms) by 5 s from A's first picture: on the boxes' server clocks \
            \(windows(skew)); on this machine's \(windows(Self.skews(framesA, framesB, clock: \.monoTime)))
            """)
        print(
            String(
                format: """
                    venue edge, ffmpeg HLS without PDT (2 s segments), two boxes %.1f s apart behind one proxy: skew \
                    p95 %.2f ms from A's first picture (first second %.2f ms); latency A %.3f s, B %.3f s; A's \
                    anchor %@; its moves %@
                    """,
                lateBy, p95 * 1000, firstSecond * 1000, Stats.median(a), Stats.median(b),
                String(describing: anchor), moves.joined(separator: ", ")))
    }
}
