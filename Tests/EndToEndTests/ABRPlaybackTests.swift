import Foundation
import Marquee
import MarqueeOrigin
import TestSupport
import Testing

/// Adaptive bitrate in playback, on the DASH-IF `testpic_2s_low_delay` asset (1080p 2.0 Mb/s,
/// 720p 1.0 Mb/s, 360p 0.3 Mb/s) from our origin, whose `bwlow_` option slows every segment
/// response to 1 Mb/s for a while: read from the sizes of the pictures presented (frames.tsv).
/// As DASH (one adaptation set, three representations) and as HLS (three variants sharing an
/// audio rendition).
extension LivePlaybackTests {
    @Test(arguments: ["dash", "hls"])
    func abrStepsDownWithinOneSegmentWhenTheLinkDropsAndBackUpWhenItReturns(format: String) async throws {
        let media = Tools.packageRoot.deletingLastPathComponent().appendingPathComponent(
            "shared/media/dashif-livesim2/testpic_2s_low_delay")
        try #require(
            FileManager.default.fileExists(atPath: media.appendingPathComponent("Manifest.mpd").path),
            "../shared/media is needed")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let now = Date().timeIntervalSince1970
        let (dropAt, returnAt) = ((now + 9).rounded(), (now + 17).rounded())
        let manifest = origin.manifestURL(asset: "testpic_abr", options: ["bwlow_1000-\(Int(dropAt))-\(Int(returnAt))"])
        let url =
            format == "dash" ? manifest : manifest.deletingLastPathComponent().appendingPathComponent("master.m3u8")
        let run = try await Self.play(url, seconds: 28, audio: { _ in .null })
        let frames = run.frames
        try #require(frames.count > 600, "\(frames.count) frames")
        // Presentation time = media time on this origin (availabilityStartTime 1970). A segment
        // ending after the drop began was requested on the slow link.
        func heights(_ range: Range<Double>) -> Set<Int> { Set(frames.filter { range.contains($0.pts) }.map(\.height)) }
        func share(_ height: Int, _ range: Range<Double>) -> Double {
            let inRange = frames.filter { range.contains($0.pts) }
            return inRange.isEmpty ? 0 : Double(inRange.filter { $0.height == height }.count) / Double(inRange.count)
        }
        let segment = 2.0
        // On the fast link ABR climbs to the top rendition (mostly: on a loaded box one slow
        // download may briefly step it down, as it should).
        let before = (dropAt - 6)..<(dropAt - segment)
        #expect(share(1080, before) >= 0.5, "before the drop: \(Int(share(1080, before) * 100)) % at 1080p")
        // Within one segment of the drop: 360p (the only one a 1 Mb/s link delivers in time
        // for a 3 s latency), until the link returns.
        #expect(
            heights(dropAt..<(returnAt - segment)) == [360],
            "during the drop: \(heights(dropAt..<(returnAt - segment)))")
        // Back to 1080p within two segments of the link's return.
        let after = (returnAt + 2 * segment)..<frames.last!.pts
        #expect(share(1080, after) >= 0.5, "after: \(Int(share(1080, after) * 100)) % at 1080p")
        // No stall, nothing lost: every frame in order, the latency held.
        let steps = zip(frames, frames.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { $0 > 0 }, "in order")
        let presented = Double(frames.count) / (((frames.last!.pts - frames.first!.pts) * 30).rounded() + 1)
        let gaps = zip(frames, frames.dropFirst()).filter { $1.pts - $0.pts > 1.5 / 30 }.map {
            String(format: "%.2f+%.2f (%dp→%dp)", $0.pts - dropAt, $1.pts - $0.pts, $0.height, $1.height)
        }
        #expect(
            presented >= 0.99, "\(Int(presented * 100)) % of the frames presented; gaps after the drop time: \(gaps)")
        let latency = frames.dropFirst(30).map { $0.wallTime - $0.pts }
        #expect(latency.allSatisfy { abs($0 - 3) < 0.05 }, "latency \(latency.min()!)…\(latency.max()!)")
        // What the player said: 360 → 1080 (probe) → 360 → 1080.
        let switches = run.events.compactMap {
            if case .activeQualityChanged(let q) = $0, q.kind == "video" { q.id } else { nil }
        }
        #expect(switches.suffix(3) == ["1080", "360", "1080"], "\(switches)")
        #expect(run.events.contains { if case .bandwidthTest = $0 { true } else { false } })
        // The shares the 50 % bounds above judge, printed so they can be re-derived from runs (issue 37).
        print(
            String(
                format: "abr (%@): 1080p before the drop %.0f %%, after the return %.0f %%", format,
                share(1080, before) * 100, share(1080, after) * 100))
    }
}
