import Foundation
import Marquee
import MarqueeStreaming
import TestSupport
import Testing

/// Live HLS whose segments are byte ranges of one growing file: ffmpeg's HLS muxer with
/// `-hls_flags single_file` (MPEG-TS `out.ts`), served by our origin's static directory, which
/// answers `Range` with a 206. (Its fMP4 `out.m4s`, the init section a range of it too, is
/// fetched range by range as meant, but no picture is presented yet: not tested here.)
/// Each segment was the whole growing file, decoded from its start (measured: 712 pictures
/// presented in 25 s, 5,378 decoded and dropped, 7 gaps over 100 ms); ffmpeg 5.1 also keeps
/// `EXT-X-MEDIA-SEQUENCE` at 0 as the window slides. Now each range is fetched alone
/// (`Range: bytes=a-b`, the 206's `Content-Range` checked) and decoded once, the segments
/// numbered by their ranges.
extension LivePlaybackTests {
    /// A short list (5 segments of 1 s) and a long one (30), MPEG-TS. Two boxes: a player in
    /// this process (frames, sound, counts) and `marquee play` (exits 0, still playing at its end).
    @Test(arguments: [5, 30])
    func ffmpegsByteRangeHLSPlaysRangeByRange(listSize: Int) async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let dir = try Tools.tempDirectory("ffranges")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let encoder = try Self.ffmpegLiveHLS(
            in: dir, ["-hls_time", "1", "-hls_list_size", "\(listSize)", "-hls_flags", "single_file"])
        defer { Tools.stop(encoder) }
        let playlist = try await Self.waitForSegments(dir.appendingPathComponent("out.m3u8"), count: 3)
        try #require(playlist.contains("#EXT-X-BYTERANGE:") && !playlist.contains("PROGRAM-DATE-TIME"), "\(playlist)")
        let url = origin.baseURL.appendingPathComponent("static/out.m3u8")

        let dirB = try Tools.tempDirectory("ffranges-boxB")
        let boxB = Process()
        boxB.executableURL = marquee
        boxB.arguments = [
            "play", url.absoluteString, "--audio", "null", "--video", "frames:\(dirB.path)", "--duration", "25",
        ]
        boxB.standardOutput = FileHandle.nullDevice
        // (Its log, to tell a late re-anchor from a stall when its pictures have a hole.)
        let logB = dirB.appendingPathComponent("log")
        _ = FileManager.default.createFile(atPath: logB.path, contents: nil)
        let logHandle = try FileHandle(forWritingTo: logB)
        defer { try? logHandle.close() }
        boxB.standardError = logHandle
        try boxB.run()
        defer { Tools.stop(boxB) }
        let startedB = Date().timeIntervalSince1970

        var status: PlaybackStatus?
        let run = try await Self.play(
            url, seconds: 25, audio: { .wav("\($0.path)/out.wav") }, during: { status = $0.status })
        let stopped = Date().timeIntervalSince1970
        while boxB.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(boxB.terminationStatus == 0)
        let name = "MPEG-TS list \(listSize)"

        let movesA = run.timed.compactMap { timed -> String? in
            guard case .liveEdgeLearned(let moved, let error) = timed.event else { return nil }
            return String(format: "%.1f s: moved %.4f s ± %.4f", timed.time - startedB, moved, error)
        }
        let a = try Self.expectRangeByRange(
            run.frames, until: stopped, box: "\(name) A", log: "its re-anchors: \(movesA)")
        let framesB = try FramesFile.read(dirB.appendingPathComponent("frames.tsv"))
        let notices = (try? String(contentsOf: logB, encoding: .utf8))?.split(separator: "\n")
            .filter { !$0.contains(" info ") || $0.contains("jump") || $0.contains("late") }.joined(separator: "\n")
        let b = try Self.expectRangeByRange(
            framesB, until: startedB + 25, box: "\(name) B", log: "its log's notices:\n\(notices ?? "none")")

        // Each range decoded once: no picture out of the decoder but those presented (and the
        // few queued to be shown when the count was read), and those the learned live edge's
        // re-anchor skipped forward over (dropped as late: 30 a second of it).
        let counts = try #require(status)
        // No date-times: the edge was learned from the playlist (the status says so, with its error).
        #expect(
            { if case .learned(let error) = counts.liveAnchor { error <= 0.002 } else { false } }(),
            "\(name): anchor \(String(describing: counts.liveAnchor))")
        let unshown = counts.framesDecoded - counts.framesPresented - counts.framesDropped
        let skipped = run.events.reduce(0.0) { sum, event in
            if case .liveEdgeLearned(let moved, _) = event { sum + max(0, moved) } else { sum }
        }
        #expect(
            counts.framesDropped <= Int((skipped * 30).rounded(.up)) + 1 && unshown <= 10,
            """
            \(name): \(counts.framesDecoded) decoded, \(counts.framesPresented) presented, \(counts.framesDropped) \
            dropped (the live edge moved forward \(skipped) s)
            """
        )

        // Sound from its start to the end, without a silent 10 ms.
        Self.expectHeard440(run.dir.appendingPathComponent("out.wav"))
        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        let first = try #require(pcm.firstSound())
        let rms = ToneAnalysis.windowRMS(
            pcm.channel(0)[first...].dropLast(pcm.sampleRate / 2), window: pcm.sampleRate / 100)
        let silent = rms.filter { $0 < 300 }.count
        #expect(silent == 0 && Double(rms.count) / 100 > 18, "\(name): \(silent) silent 10 ms of \(rms.count)")
        #expect(!run.events.contains(.stateChanged(.ended)), "a live stream never ends")
        print(
            String(
                format: """
                    ffmpeg byte-range HLS %@: A %.1f %% of the pictures due, longest gap %.0f ms, latency %.3f s (%.1f \
                    ms spread), %d decoded / %d presented / %d dropped; B %.1f %%, longest gap %.0f ms, latency \
                    %.3f s; A's edge learned: %@
                    """,
                name, a.presented * 100, a.gap * 1000, Stats.median(a.latency),
                (a.latency.max()! - a.latency.min()!) * 1000,
                counts.framesDecoded, counts.framesPresented, counts.framesDropped, b.presented * 100, b.gap * 1000,
                Stats.median(b.latency), movesA.joined(separator: ", ")))
    }

    /// Pictures in order, ≥ 95 % of those due from the first to `until` (wall clock), no gap
    /// over 100 ms (between pictures shown, and in their pts) but the one re-anchor when the box
    /// learns when the packager publishes (no program date-times: ``PlayerEvent/liveEdgeLearned(moved:error:)``,
    /// at most a segment, in the first seconds), still coming at the end, and a latency (wall
    /// clock − pts, the encoder's clock) that holds within 100 ms once the first 12 s and that
    /// re-anchor are past.
    static func expectRangeByRange(_ frames: [PresentedFrame], until: Double, box: String, log: String = "") throws -> (
        presented: Double, gap: Double, latency: [Double]
    ) {
        try #require(frames.count > 300, "\(box): \(frames.count) pictures")
        let steps = zip(frames, frames.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { $0 > 0 }, "\(box): pictures in order")
        let gaps = zip(frames, frames.dropFirst()).map { max($1.wallTime - $0.wallTime, $1.pts - $0.pts) }
        let large = gaps.indices.filter { gaps[$0] > 0.1 }
        let anchored = large.first.map { frames[$0 + 1].wallTime } ?? frames[0].wallTime
        #expect(
            large.count <= 1 && large.allSatisfy { gaps[$0] <= 1.05 } && anchored < frames[0].wallTime + 15,
            """
            \(box): gaps over 100 ms \(large.map { gaps[$0] }) s, the first \(anchored - frames[0].wallTime) s in; \
            \(log)
            """)
        let gap = gaps.enumerated().filter { !large.contains($0.offset) }.map(\.element).max() ?? 0
        let due = ((until - frames[0].wallTime) * 30).rounded()
        let presented = Double(frames.count) / due
        #expect(presented >= 0.95, "\(box): \(frames.count) pictures of \(due) due")
        #expect(
            until - frames.last!.wallTime < 1,
            "\(box): the last picture \(until - frames.last!.wallTime) s before the end")
        // MPEG-TS pts: the 33-bit clock unwrapped.
        let wrap = Double(TransportStreamTimestamps.wrap) / 90_000
        // (The re-anchor comes once the phase is known within 4 ms: about five 1 s segments in.)
        let settled = frames.filter { $0.wallTime > max(frames[0].wallTime + 12, anchored + 1) }.map { f in
            f.wallTime - f.pts - ((f.wallTime - f.pts) / wrap).rounded() * wrap
        }
        let spread = settled.max()! - settled.min()!
        #expect(spread <= 0.1, "\(box): latency \(settled.min()!)…\(settled.max()!) s")
        return (presented, gap, settled)
    }
}
