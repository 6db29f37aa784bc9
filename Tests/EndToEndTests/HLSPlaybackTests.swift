import Foundation
import Marquee
import MarqueeOrigin
import TestSupport
import Testing

/// Live HLS (fMP4) from our origin: the multivariant playlist, a video variant and its audio
/// rendition, reloaded as the window slides; read from frames.tsv and the WAV.
extension LivePlaybackTests {
    @Test func liveHLSPlaysEveryFrameInOrderAtTheTarget() async throws {
        try #require(FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path), "run scripts/make-assets")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let master = origin.manifestURL(asset: "generated").deletingLastPathComponent().appendingPathComponent("master.m3u8")
        let run = try await Self.play(master, seconds: 9, audio: { .wav("\($0.path)/out.wav") })
        let frames = run.frames
        try #require(frames.count > 180, "\(frames.count) frames")
        // Every frame, in order: after the first, pts advance by exactly one frame (30 fps).
        let steps = zip(frames, frames.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { abs($0 - 1.0 / 30) < 0.001 }, "pts steps \(steps.min()!)…\(steps.max()!)")
        // At the latency target on the program date-time (= wall clock of the stream).
        let settled = frames.dropFirst(30).map { $0.wallTime - $0.pts }
        #expect(settled.allSatisfy { abs($0 - 3) < 0.02 }, "latency \(settled.min()!)…\(settled.max()!)")
        // The pictures are the asset's own.
        let reference = try await Self.referenceFrames(manifest: origin.manifestURL(asset: "generated"), from: frames.first!.pts, to: frames.last!.pts)
        Self.expectFramesMatch(frames, reference: reference, fps: 30)
        #expect(run.events.contains { if case .sourceLoaded(_, .live) = $0 { true } else { false } })
        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        let start = try #require(pcm.firstSound())
        #expect(abs(ToneAnalysis.frequency(pcm.channel(0)[start...].dropFirst(480).dropLast(480), sampleRate: pcm.sampleRate) - 440) < 1)
    }
}
