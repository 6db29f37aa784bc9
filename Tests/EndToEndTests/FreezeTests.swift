import Foundation
import TestSupport
import Testing

/// A box whose player process was frozen (SIGSTOP, then SIGCONT: a driver hang, a paused VM, a
/// starved CPU) on a healthy live stream: the time it was not running is its own, not the
/// server's, so its latency target stays the app's and it comes back to it, and to its
/// neighbours' frame, within seconds of the resume. Measured from what it shows (frames.tsv:
/// every picture's `wall_time − AST − pts`).
extension LivePlaybackTests {
    /// 4 s and 10 s on `$Number$` addressing (each segment asked for when the manifest says it
    /// is available); 10 s on a SegmentTimeline too (the listing reloaded until it lists the
    /// next segment: how late a server lists is learned, and must not be learned from a freeze).
    @Test(arguments: [(4.0, [String]()), (10.0, []), (10.0, ["segtimeline_1"])])
    func aBoxThatWasFrozenComesBackToTheTarget(freeze: Double, stream: [String]) async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let ast = Double(Int(Date().timeIntervalSince1970) - 3600)
        let url = origin.manifestURL(asset: "generated", options: ["ast_\(Int(ast))"] + stream)
        let dir = try Tools.tempDirectory("freeze")
        let log = dir.appendingPathComponent("stdout.txt")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let box = Process()
        box.executableURL = marquee
        box.arguments = [
            "play", url.absoluteString, "--audio", "null", "--video", "frames:\(dir.path)",
            "--target-latency", "3", "--duration", "40",
        ]
        box.standardOutput = try FileHandle(forWritingTo: log)
        box.standardError = FileHandle.nullDevice
        try box.run()
        let pid = box.processIdentifier
        defer {
            if box.isRunning {
                kill(pid, SIGCONT)
                kill(pid, SIGKILL)
            }
        }
        // Playing at the target for a while (its first pictures within 10 s on a busy machine).
        let frames = dir.appendingPathComponent("frames.tsv")
        for _ in 0..<100 where ((try? FramesFile.read(frames)) ?? []).count < 30 {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(6))
        let stoppedAt = Date().timeIntervalSince1970
        kill(pid, SIGSTOP)
        try await Task.sleep(for: .milliseconds(Int(freeze * 1000)))
        kill(pid, SIGCONT)
        let resumedAt = Date().timeIntervalSince1970
        while box.isRunning { try await Task.sleep(for: .milliseconds(100)) }
        #expect(box.terminationStatus == 0)

        let shown = try FramesFile.read(frames)
        let output = try String(contentsOf: log, encoding: .utf8)
        let end = try #require(shown.last).wallTime
        let error = { (f: PresentedFrame) in f.wallTime - ast - f.pts - 3 }
        let before = shown.filter { $0.wallTime > stoppedAt - 4 && $0.wallTime < stoppedAt }.map { abs(error($0)) }
        try #require(before.count > 90, "\(before.count) pictures in the 4 s before the freeze")
        // Back at the app's target 5 s after the resume, and held there to the end (40 s run).
        let rest = shown.filter { $0.wallTime >= resumedAt + 5 }
        try #require(end - resumedAt > 12, "the run ended \(end - resumedAt) s after the resume")
        let errors = rest.map { abs(error($0)) }
        let p95 = Stats.percentile(errors, 95)
        #expect(
            p95 < 0.020 && Stats.median(errors) < 0.010,
            """
            \(freeze) s freeze \(stream): |latency − 3 s| after the resume + 5 s: median \(Stats.median(errors)), \
            p95 \(p95)
            """
        )
        let (share, inOrder) = Self.presentedShare(rest)
        #expect(
            share >= 0.98 && inOrder,
            "\(freeze) s freeze \(stream): \(share * 100) % of the pictures from 5 s after the resume")
        // The time the box was stopped is not the server's: its target is never raised.
        #expect(
            !output.contains("arrive too late"), "\(output.split(separator: "\n").filter { $0.contains("too late") })")
        let qoeLine = try #require(output.split(separator: "\n").last { $0.hasPrefix("qoe: ") })
        let qoe = try #require(
            try JSONSerialization.jsonObject(with: Data(qoeLine.dropFirst(5).utf8)) as? [String: Any])
        #expect(qoe["raisedTarget"] == nil && (qoe["raisedTargetSeconds"] as? Double) == 0, "QoE: \(qoeLine)")
        // When it came back: the first picture after the resume from which a whole second holds
        // within 20 ms of the target.
        let after = shown.filter { $0.wallTime > resumedAt }
        let back = after.indices.first { i in
            let second = after[i...].prefix { $0.wallTime < after[i].wallTime + 1 }
            return second.count > 25 && second.allSatisfy { abs(error($0)) < 0.020 }
        }.map { after[$0].wallTime - resumedAt }
        #expect(
            back.map { $0 <= 5 } ?? false,
            """
            \(freeze) s freeze \(stream): back at the target \(back.map { String(format: "%.2f s", $0) } ?? "never") \
            after the resume
            """
        )
        let worstAfter = after.map { error($0) }
        print(
            String(
                format: """
                    frozen %.0f s%@: back within 20 ms of the target %@ after the resume; from +5 s |latency − 3 s| \
                    median %.1f ms, p95 %.1f ms, %.1f %% of the pictures; first picture after the resume off by %+.3f s
                    """,
                freeze, stream.isEmpty ? "" : " (\(stream.joined(separator: "/")))",
                back.map { String(format: "%.2f s", $0) } ?? "never", Stats.median(errors) * 1000, p95 * 1000,
                share * 100,
                worstAfter.first ?? .nan))
        if let latency = qoe["latency"] { print("frozen \(Int(freeze)) s \(stream): QoE latency \(latency)") }
    }
}
