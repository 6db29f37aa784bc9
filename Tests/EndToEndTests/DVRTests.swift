import Foundation
import Marquee
import MarqueeOrigin
import TestSupport
import Testing

/// DVR on a live stream with a 60 s window: seek back beyond what this player has collected
/// (the server still serves it), play on from there, then go live; read from frames.tsv.
extension LivePlaybackTests {
    @Test func dvrSeekBackInTheWindowAndGoLive() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("dvr")
        let ast = Int(Date().timeIntervalSince1970) - 3600
        let player = try Player(
            options: PlayerOptions(
                sources: [origin.manifestURL(asset: "generated", options: ["ast_\(ast)", "tsbd_60"])],
                videoOutput: .frames(dir.path)))
        #expect(throws: PlayerError.self) { try player.seek(to: 0) }
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()
        try await Task.sleep(for: .seconds(3))
        #expect(player.isDVR)
        let range = try #require(player.seekableRange)
        // 60 s window − 3 s target − two segments of margin: 53 s back.
        #expect(range.upperBound - range.lowerBound > 50, "window \(range.upperBound - range.lowerBound) s")
        let seekAt = Date().timeIntervalSince1970
        try player.seek(to: range.upperBound - 20)  // 20 s back: far beyond the 3 s collected
        try await Task.sleep(for: .seconds(4))
        let liveAt = Date().timeIntervalSince1970
        try player.goLive()
        try await Task.sleep(for: .seconds(3))
        try player.seek(to: range.lowerBound - 100)  // before the window: clamped to its start
        await player.stop()
        listener.cancel()

        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        func latencies(_ from: Double, _ to: Double) -> [Double] {
            frames.filter { $0.wallTime >= from && $0.wallTime < to }.map { $0.wallTime - Double(ast) - $0.pts }
        }
        let back = latencies(seekAt + 1.5, liveAt)
        try #require(back.count > 40, "\(back.count) frames after the seek")
        #expect(back.allSatisfy { abs($0 - 23) < 0.03 }, "20 s back: latency \(back.min()!)…\(back.max()!)")
        let live = latencies(liveAt + 1.5, .infinity)
        try #require(live.count > 20)
        #expect(live.allSatisfy { abs($0 - 3) < 0.03 }, "live again: latency \(live.min()!)…\(live.max()!)")
        // Played on in order from the seek: no picture twice, none out of order.
        let after = frames.filter { $0.wallTime >= seekAt + 1.5 && $0.wallTime < liveAt }
        #expect(zip(after, after.dropFirst()).allSatisfy { $0.pts < $1.pts })
        #expect(log.events.contains { if case .seekClamped = $0 { true } else { false } })
        #expect(log.events.filter { if case .seeked = $0 { true } else { false } }.count == 2)
    }
}
