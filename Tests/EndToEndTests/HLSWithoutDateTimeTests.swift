import Foundation
import Marquee
import MarqueeStreaming
import TestSupport
import Testing

/// Live HLS from packagers we did not write, in their default configuration: no
/// `EXT-X-PROGRAM-DATE-TIME` (ffmpeg's HLS muxer without `program_date_time`; GStreamer's
/// hlssink2 has no such option), muxed MPEG-TS segments, started live by the test and served as
/// files by our origin's static directory over loopback. The player places each playlist by
/// when it was answered; frames.tsv tells whether every picture came, in order, at a latency
/// that holds still.
extension LivePlaybackTests {
    /// ffmpeg's fMP4 HLS with program date-times: its `tfdt` starts near 0, nowhere near the
    /// date-times (this showed no picture at all while `tfdt` was read as the date-time). Each
    /// track's first `tfdt` is measured against its segment's date-time. Without them (refused
    /// before), against the start the playlist's answer gives the segment.
    @Test(arguments: [true, false])
    func ffmpegsFragmentedMP4HLS(dated: Bool) async throws {
        let dir = try Tools.tempDirectory("fffmp4")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let spawned = Date().timeIntervalSince1970
        let encoder = try Tools.spawn(
            "ffmpeg",
            Self.ffmpegLiveHLS([
                "-hls_time", "2", "-hls_list_size", "6", "-hls_segment_type", "fmp4", "-hls_flags",
                dated ? "delete_segments+program_date_time" : "delete_segments",
            ]),
            cwd: dir)
        defer { Tools.stop(encoder) }
        let playlist = try await Self.waitForSegments(dir.appendingPathComponent("out.m3u8"), count: 2)
        try #require(playlist.contains("PROGRAM-DATE-TIME") == dated && playlist.contains("#EXT-X-MAP"), "\(playlist)")
        let run = try await Self.play(
            origin.baseURL.appendingPathComponent("static/out.m3u8"), seconds: 20, audio: { .wav("\($0.path)/out.wav") }
        )
        // A picture of pts p was made about p after the encoder started (-re): its latency is
        // measured against that (a constant error of the start-up, the same for every picture).
        // Without date-times the stream is placed where the playlist's answers say its last
        // segment ends; ffmpeg lists an fMP4 segment about a segment and a half after its last
        // picture was made (measured: 6.1 s at a 3 s target), which the player cannot know.
        // Without date-times the box learns when the packager publishes and moves its timeline
        // there once, whenever it knows it well enough (seconds in, later on a busy machine).
        let jumps = Self.announcedMoves(run.timed)
        let latency = try Self.expectSteadyPlayback(
            run.frames, made: { spawned + $0.pts }, target: 3, segment: dated ? 2 : 4, box: "ffmpeg fMP4",
            jumps: dated ? [] : jumps)
        Self.expectHeard440(run.dir.appendingPathComponent("out.wav"))
        #expect(!run.events.contains(.stateChanged(.ended)), "a live stream never ends")
        print(
            String(
                format: """
                    ffmpeg fMP4 HLS %@ PDT: latency %.3f s after the encoder made the picture \
                    (median; %.1f ms spread); moves %@
                    """,
                dated ? "with" : "without", Stats.median(latency), (latency.max()! - latency.min()!) * 1000,
                jumps.map { String(format: "%.1f s: %.4f s", $0.time - spawned, $0.moved) }.joined(separator: ", ")))
    }

    /// An encoder that restarts: ffmpeg's HLS muxer stopped after a while and started again on
    /// the same playlist (`append_list+discont_start`: the sequence goes on after an
    /// EXT-X-DISCONTINUITY, the timestamps start afresh). Pictures stopped at the first restart
    /// while the first timestamps were measured once; then the tracks restarted there (flushing
    /// what they held: a 1.9 s gap); now a new stream begins there in the core (measured: one
    /// gap of 0.15 s, the encoder's own).
    @Test func ffmpegsHLSAcrossAnEncoderRestart() async throws {
        let dir = try Tools.tempDirectory("ffrestart")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let arguments = Self.ffmpegLiveHLS([
            "-hls_time", "1", "-hls_list_size", "8", "-hls_flags",
            "delete_segments+append_list+discont_start+program_date_time",
        ])
        var encoder = try Tools.spawn("ffmpeg", arguments, cwd: dir)
        defer { Tools.stop(encoder) }
        _ = try await Self.waitForSegments(dir.appendingPathComponent("out.m3u8"), count: 3)
        let playing = Task {
            try await Self.play(
                origin.baseURL.appendingPathComponent("static/out.m3u8"), seconds: 24, audio: { _ in .null })
        }
        try await Task.sleep(for: .seconds(8))
        Tools.stop(encoder)
        let restarted = Date().timeIntervalSince1970
        encoder = try Tools.spawn("ffmpeg", arguments, cwd: dir)
        var playlist = ""
        for _ in 0..<100 where !playlist.contains("#EXT-X-DISCONTINUITY\n") {
            try await Task.sleep(for: .milliseconds(100))
            playlist = (try? String(contentsOf: dir.appendingPathComponent("out.m3u8"), encoding: .utf8)) ?? ""
        }
        let run = try await playing.value
        try #require(playlist.contains("#EXT-X-DISCONTINUITY\n"), "\(playlist)")
        let after = run.frames.filter { $0.wallTime > restarted + 3 }
        // 24 s of play, restarted at 8 s: the new encoder's pictures from a few seconds on.
        #expect(after.count > 250, "\(after.count) pictures after the restart")
        let gaps = zip(run.frames, run.frames.dropFirst()).filter { $1.wallTime - $0.wallTime > 0.1 }
        #expect(gaps.count <= 1, "gaps: \(gaps.map { String(format: "%.2f s", $1.wallTime - $0.wallTime) })")
        let steps = zip(after, after.dropFirst()).map { $1.pts - $0.pts }
        #expect(
            steps.allSatisfy { abs($0 - 1.0 / 30) < 0.002 },
            "after the restart: pts steps \(Set(steps.map { ($0 * 1000).rounded() }))")
        #expect(!run.events.contains(.stateChanged(.ended)), "a live stream never ends")
        print(
            String(
                format: "ffmpeg HLS across a restart: %d pictures, %d after it, longest gap %.2f s", run.frames.count,
                after.count,
                gaps.map { $1.wallTime - $0.wallTime }.max() ?? 0))
    }

    // MARK: helpers

    /// ffmpeg encoding a live 640x360 test picture and a 440 Hz tone (H.264 + AAC) into HLS
    /// `out.m3u8` in real time, with the HLS muxer's `options`.
    static func ffmpegLiveHLS(_ options: [String]) -> [String] {
        [
            "-v", "error", "-nostdin", "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
            "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
            "-c:v", "libx264", "-g", "30", "-preset", "ultrafast", "-tune", "zerolatency", "-c:a", "aac", "-f", "hls",
        ] + options + ["out.m3u8"]
    }

    /// The playlist's text once it lists `count` segments.
    static func waitForSegments(_ playlist: URL, count: Int, timeout: Double = 20) async throws -> String {
        for _ in 0..<Int(timeout * 10) {
            if let text = try? String(contentsOf: playlist, encoding: .utf8),
                text.components(separatedBy: "#EXTINF").count > count
            {
                return text
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw ToolFailure(message: "\(playlist.path): fewer than \(count) segments after \(timeout) s")
    }

    /// Pictures in order, ≥ 99 % of them with at most one gap, and a latency (presentation
    /// instant − `made`) that holds within ±50 ms once the first 3 s are past, at or above the
    /// target and less than a segment (+ 0.5 s of packaging) beyond it. Returns those latencies.
    /// `written`: the pts of every picture the packager wrote (ascending), when it may have
    /// skipped some; else the stream is taken to have a picture every 1/30 s. `jumps`: the
    /// player's ``PlayerEvent/latencyJump(error:)`` events with their times, when it may move
    /// its timeline (a box learning its live edge): the latency is then judged net of the moves
    /// it announced (a moved timeline presents later pictures: the latency falls by the move),
    /// the pictures of the 0.3 s after each set aside, and at most one move over 20 ms.
    static func expectSteadyPlayback(
        _ frames: [PresentedFrame], made: (PresentedFrame) -> Double, target: Double, segment: Double, box: String,
        written: [Double]? = nil, settledAfter: Double = 3, jumps: [(time: Double, moved: Double)] = []
    ) throws -> [Double] {
        try #require(frames.count > 400, "\(box): \(frames.count) frames")
        let steps = zip(frames, frames.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { $0 > 0 }, "\(box): pictures in order")
        // A step other than 1/30 is a gap of the player's when a written picture lies within it.
        func writtenBetween(_ a: Double, _ b: Double) -> Int {
            written.map { w in w.filter { $0 > a + 0.001 && $0 < b - 0.001 }.count }
                ?? Int(((b - a) * 30).rounded()) - 1
        }
        let gaps = zip(frames, frames.dropFirst()).filter { abs($1.pts - $0.pts - 1.0 / 30) > 0.002 }
            .filter { writtenBetween($0.pts, $1.pts) > 0 }.map { $1.pts - $0.pts }
        #expect(gaps.count <= 1, "\(box): pts steps over a picture written: \(gaps)")
        // (Judged from `settledAfter` on when that is later than the start: a box that learns
        // its live edge jumps once in its first seconds, its one gap.)
        let judged = settledAfter > 3 ? frames.filter { $0.wallTime > frames[0].wallTime + settledAfter } : frames
        let (first, last) = (judged.first!.pts, judged.last!.pts)
        let pictures =
            written.map { w in w.filter { $0 > first - 0.001 && $0 < last + 0.001 }.count }
            ?? Int(((last - first) * 30).rounded()) + 1
        let presented = Double(judged.count) / Double(max(1, pictures))
        #expect(presented >= 0.99, "\(box): \(presented * 100) % of the \(pictures) pictures presented")
        let large = jumps.filter { abs($0.moved) > 0.02 }
        #expect(large.count <= 1, "\(box): the timeline moved more than once: \(large)")
        let settled = frames.filter { frame in
            frame.wallTime > frames[0].wallTime + settledAfter
                && !jumps.contains { frame.wallTime >= $0.time && frame.wallTime < $0.time + 0.3 }
        }.map { frame in
            frame.wallTime - made(frame) + jumps.filter { $0.time < frame.wallTime }.reduce(0) { $0 + $1.moved }
        }
        let spread = settled.max()! - settled.min()!
        #expect(
            spread <= 0.1,
            "\(box): latency \(settled.min()!)…\(settled.max()!) s (net of the moves announced: \(jumps))")
        #expect(
            Stats.median(settled) > target - 0.05 && Stats.median(settled) < target + segment + 0.5,
            "\(box): latency \(Stats.median(settled)) s, target \(target)")
        return settled
    }

    /// The player's moves of its timeline (``PlayerEvent/latencyJump(error:)``) with the times
    /// they were received at, for ``expectSteadyPlayback``'s `jumps`.
    static func announcedMoves(_ timed: [(time: Double, event: PlayerEvent)]) -> [(time: Double, moved: Double)] {
        timed.compactMap { if case .latencyJump(let moved) = $0.event { ($0.time, moved) } else { nil } }
    }

    static func expectHeard440(_ wav: URL) {
        guard let pcm = try? PCM.wav(wav), let start = pcm.firstSound() else {
            Issue.record("no sound in \(wav.path)")
            return
        }
        #expect(
            abs(
                ToneAnalysis.frequency(
                    pcm.channel(0)[start...].dropFirst(4800).dropLast(4800), sampleRate: pcm.sampleRate) - 440) < 1)
    }

    /// The pts (seconds) of every video picture in the packager's `.ts` segments, in order.
    static func writtenPictures(_ dir: URL) throws -> [Double] {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".ts") }
            .sorted()
        var whole = Data()
        for name in names { whole += try Data(contentsOf: dir.appendingPathComponent(name)) }
        let joined = dir.appendingPathComponent("written.ts.all")
        try whole.write(to: joined)
        let csv = try Tools.run(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time", "-of", "csv=p=0",
                "-f", "mpegts", joined.path,
            ])
        return csv.split(separator: "\n").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }.sorted()
    }

    /// The offset from pts to the wall clock at which the packager wrote them out: for each
    /// segment file, its modification time against the first pts of the next one (where it
    /// ends); the smallest (the segment closed soonest after its end).
    static func segmentClosings(_ dir: URL) throws -> Double {
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".ts") }
            .sorted()
        var offsets: [Double] = []
        for (name, next) in zip(names, names.dropFirst()) {
            let attributes = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(name).path)
            guard let written = attributes[.modificationDate] as? Date,
                let end = TransportStreamTimestamps.firstPTS(try Data(contentsOf: dir.appendingPathComponent(next)))
            else { continue }
            offsets.append(written.timeIntervalSince1970 - Double(end) / 90_000)
        }
        return try #require(offsets.min())
    }
}

extension LivePlaybackTests {
    /// GStreamer's hlssink2 writing live HLS into `dir` (`out.m3u8`, 1 s MPEG-TS segments
    /// `seg%05d.ts`, none deleted), a live test picture at 30 fps and a 440 Hz tone.
    static func gstreamerLiveHLS(in dir: URL) throws -> Process {
        let pipeline = """
            videotestsrc is-live=true ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 \
            ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=30 ! h264parse ! hls.video \
            audiotestsrc is-live=true freq=440 ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 \
            ! voaacenc ! aacparse ! hls.audio hlssink2 name=hls target-duration=1 playlist-length=6 max-files=0 \
            location=seg%05d.ts playlist-location=out.m3u8
            """
        try #require(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/gst-launch-1.0"), "run scripts/setup (GStreamer)")
        return try Tools.spawn("gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init), cwd: dir)
    }

    /// ffmpeg's HLS muxer writing `dir/out.m3u8` live (`-re`): 640x360 test picture at 30 fps
    /// (a keyframe a second) and a 440 Hz tone, timestamps from the wall clock, with `hls` (the
    /// muxer's own options: segment length, list size, flags).
    static func ffmpegLiveHLS(in dir: URL, _ hls: [String]) throws -> Process {
        try Tools.spawn(
            "ffmpeg",
            [
                "-v", "error", "-nostdin", "-re", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=30",
                "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                "-vf", "setpts=PTS+RTCSTART/(1000000*TB)", "-af", "asetpts=PTS+RTCSTART/(1000000*TB)",
                "-c:v", "libx264", "-g", "30", "-preset", "ultrafast", "-tune", "zerolatency", "-c:a", "aac",
                "-muxdelay", "0", "-muxpreload", "0",
                "-f", "hls",
            ] + hls + ["out.m3u8"], cwd: dir)
    }
}
