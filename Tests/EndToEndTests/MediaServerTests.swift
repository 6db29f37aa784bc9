import Foundation
import Marquee
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A media server we did not write: nginx with its RTMP module (Debian's `libnginx-mod-rtmp`),
/// fed by ffmpeg over RTMP, packages live DASH the way many operators' boxes do: a segment is
/// written when the next keyframe comes, SegmentTimeline with `$Time$`, `availabilityStartTime`
/// in whole seconds, no UTCTiming, `bandwidth="0"`. Played through our origin's static files
/// (the directory nginx writes), checked from frames.tsv against nginx's own segments decoded by
/// ffmpeg.
extension LivePlaybackTests {

    struct TestFailure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    @Test func nginxRTMPLiveDASH() async throws {
        let nginx = "/usr/sbin/nginx"
        try #require(FileManager.default.isExecutableFile(atPath: nginx), "nginx not installed (scripts/setup)")
        try #require(
            FileManager.default.fileExists(atPath: "/usr/lib/nginx/modules/ngx_rtmp_module.so"),
            "libnginx-mod-rtmp not installed (scripts/setup)")
        let dir = try Tools.tempDirectory("nginx")
        let dash = dir.appendingPathComponent("dash")
        try FileManager.default.createDirectory(at: dash, withIntermediateDirectories: true)
        let port = try Tools.freePort()
        let conf = """
            load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
            daemon off; master_process off; worker_processes 1;
            error_log \(dir.path)/error.log warn; pid \(dir.path)/nginx.pid;
            events { worker_connections 64; }
            rtmp { server { listen 127.0.0.1:\(port); application live {
                live on; dash on; dash_path \(dash.path); dash_fragment 2s; dash_playlist_length 30s; } } }
            """
        try Data(conf.utf8).write(to: dir.appendingPathComponent("nginx.conf"))
        let server = try Tools.spawn(nginx, ["-p", dir.path, "-c", dir.appendingPathComponent("nginx.conf").path])
        defer { Tools.stop(server) }
        try await Task.sleep(for: .seconds(1))
        let encoder = try Tools.spawn(
            "ffmpeg",
            [
                "-v", "error", "-nostdin", "-re", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30", "-f", "lavfi", "-i",
                "sine=f=440:r=48000",
                "-c:v", "libx264", "-preset", "veryfast", "-g", "60", "-keyint_min", "60", "-sc_threshold", "0",
                "-c:a", "aac", "-ac", "2", "-f", "flv", "rtmp://127.0.0.1:\(port)/live/stream",
            ])
        defer { Tools.stop(encoder) }
        let origin = try await Self.origin(staticRoot: dash.path)
        defer { Task { await origin.stop() } }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: dash.appendingPathComponent("stream.mpd").path) {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(4))
        let run = try await Self.play(
            origin.baseURL.appendingPathComponent("static/stream.mpd"), seconds: 24, audio: { _ in .null })
        try #require(run.frames.count > 400, "frames presented: \(run.frames.count)")

        // nginx's own segments still on disk (its window), decoded by ffmpeg.
        let names = try FileManager.default.contentsOfDirectory(atPath: dash.path)
            .filter { $0.hasSuffix(".m4v") && $0 != "stream-init.m4v" && $0 != "stream-raw.m4v" }
            .sorted { (Int($0.dropFirst(7).dropLast(4)) ?? 0) < (Int($1.dropFirst(7).dropLast(4)) ?? 0) }
        var bytes = try Data(contentsOf: dash.appendingPathComponent("stream-init.m4v"))
        for name in names { bytes += try Data(contentsOf: dash.appendingPathComponent(name)) }
        let file = dir.appendingPathComponent("reference.mp4")
        try bytes.write(to: file)
        let reference = try await Tools.offPool { try ReferenceDecode.frames(of: file) }
        let first = try #require(reference.first).pts
        // The last 14 s (any raise of the target settled): every picture, nginx's, in order.
        let end = try #require(run.frames.last).wallTime
        let settled = run.frames.filter { $0.wallTime > end - 14 && $0.pts >= first }
        // RTMP carries milliseconds: nginx's track timescale is 1000, so a picture's time is
        // k/30 s rounded to the millisecond, which the reference decode reports unrounded.
        var byMillisecond: [Int: String] = [:]
        for r in reference { byMillisecond[Int((r.pts * 1000).rounded(.down))] = r.md5 }
        let mismatches = settled.filter { f in
            let ms = Int((f.pts * 1000).rounded())
            return !(ms - 1...ms).contains { byMillisecond[$0] == f.md5 }
        }
        #expect(
            mismatches.isEmpty,
            "\(mismatches.count) of \(settled.count) pictures differ from nginx's segments decoded by ffmpeg")
        #expect(zip(settled, settled.dropFirst()).allSatisfy { $0.pts < $1.pts }, "pictures in order")
        let (share, _) = Self.presentedShare(settled)
        #expect(share >= 0.99, "\(share * 100) % of the pictures of the last 14 s")
        // Latency held: wall time − pts constant within a frame over those 14 s, but where the
        // target was raised (nginx writes a segment when the next keyframe comes: a loaded CI
        // lane had one arrive late in them, and the target rose by 0.25 s); each move is one of
        // the target's, by its size.
        let offsets = settled.map { $0.wallTime - $0.pts }
        let targets = [3.0] + run.events.compactMap { if case .targetLatencyChanged(let s, _) = $0 { s } else { nil } }
        var changes = zip(targets, targets.dropFirst()).map { $1 - $0 }
        var stretches: [[Double]] = [[]]
        var unexplained: [Double] = []
        for (i, offset) in offsets.enumerated() {
            let move = i > 0 ? offset - offsets[i - 1] : 0
            if abs(move) >= 1.0 / 30 {
                if let k = changes.firstIndex(where: { abs($0 - move) < 1.0 / 30 }) {
                    changes.remove(at: k)
                } else {
                    unexplained.append(move)
                }
                stretches.append([])
            }
            stretches[stretches.count - 1].append(offset)
        }
        let spread = stretches.map { ($0.max() ?? 0) - ($0.min() ?? 0) }.max() ?? 0
        #expect(unexplained.isEmpty, "latency moved by \(unexplained) s, not a change of the target (\(targets))")
        #expect(spread < 1.0 / 30, "latency moved by \(spread) s between the target's changes")
        #expect(!run.events.contains { if case .error(_, true) = $0 { true } else { false } })
        let target = targets.count > 1 ? targets.last : nil
        print(
            String(
                format: "nginx-rtmp: %d pictures, %.1f %% of the last 14 s, latency spread %.3f s, %d moves, target %@",
                run.frames.count, share * 100, spread, stretches.count - 1,
                target.map { String(format: "raised to %.2f s", $0) } ?? "3 s"))
    }
}
