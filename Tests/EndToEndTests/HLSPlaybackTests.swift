import Foundation
import Marquee
import MarqueeOrigin
import MarqueeStreaming
import TestSupport
import Testing

/// Live HLS (fMP4) from our origin: the multivariant playlist, a video variant and its audio
/// rendition, reloaded as the window slides; read from frames.tsv and the WAV.
extension LivePlaybackTests {
    @Test func liveHLSPlaysEveryFrameInOrderAtTheTarget() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let master = origin.manifestURL(asset: "generated").deletingLastPathComponent().appendingPathComponent(
            "master.m3u8")
        let run = try await Self.play(master, seconds: 9, audio: { .wav("\($0.path)/out.wav") })
        let frames = run.frames
        try #require(frames.count > 180, "\(frames.count) frames")
        // Every frame, in order: after the first, pts advance by exactly one frame (30 fps).
        let steps = zip(frames, frames.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { abs($0 - 1.0 / 30) < 0.001 }, "pts steps \(steps.min()!)…\(steps.max()!)")
        // At the latency target on the program date-time (= wall clock of the stream).
        let latency = { (f: PresentedFrame) in f.wallTime - f.pts }
        let off = FramesFile.offTarget(
            Array(frames.dropFirst(30)), from: frames[0].wallTime, target: 3, bound: 0.02, latency: latency)
        #expect(off == nil, "latency \(off ?? "")")
        // The pictures are the asset's own.
        let reference = try await Self.referenceFrames(
            manifest: origin.manifestURL(asset: "generated"), from: frames.first!.pts, to: frames.last!.pts)
        Self.expectFramesMatch(frames, reference: reference, fps: 30)
        #expect(run.events.contains { if case .sourceLoaded(_, .live) = $0 { true } else { false } })
        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        let start = try #require(pcm.firstSound())
        #expect(
            abs(
                ToneAnalysis.frequency(
                    pcm.channel(0)[start...].dropFirst(480).dropLast(480), sampleRate: pcm.sampleRate) - 440) < 1)
    }
}

/// Live HLS with muxed MPEG-TS segments (no EXT-X-MAP, audio and video in each `.ts`): one
/// download feeds both tracks, and the stream's own 33-bit PTS is placed on the program
/// date-time by the first PTS of the first segment.
extension LivePlaybackTests {
    @Test func liveHLSTransportStreamPlaysEveryFrameInOrderAtTheTarget() async throws {
        let firstSegment = Self.generated.appendingPathComponent("ts/seg-1.ts")
        try #require(FileManager.default.fileExists(atPath: firstSegment.path), "run scripts/make-assets")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let master = origin.manifestURL(asset: "generated").deletingLastPathComponent().appendingPathComponent(
            "master-ts.m3u8")
        let run = try await Self.play(master, seconds: 9, audio: { .wav("\($0.path)/out.wav") })
        let frames = run.frames
        try #require(frames.count > 180, "\(frames.count) frames")
        // Every frame, in order: the transport stream's pts advance by exactly one frame.
        let steps = zip(frames, frames.dropFirst()).map { $1.pts - $0.pts }
        #expect(steps.allSatisfy { abs($0 - 1.0 / 30) < 0.001 }, "pts steps \(steps.min()!)…\(steps.max()!)")
        // The origin stamps PTS = the loop's first PTS + media time (mod 2³³): the presentation
        // time a frame should have, from its own pts, is then known independently of the player.
        let loopFirst =
            Double(try #require(TransportStreamTimestamps.firstPTS(try Data(contentsOf: firstSegment)))) / 90_000
        let wrap = Double(TransportStreamTimestamps.wrap) / 90_000
        func presentation(_ f: PresentedFrame) -> Double {
            let t = f.pts - loopFirst
            return t + ((f.wallTime - 3 - t) / wrap).rounded() * wrap
        }
        let latency = { (f: PresentedFrame) in f.wallTime - presentation(f) }
        let off = FramesFile.offTarget(
            Array(frames.dropFirst(30)), from: frames[0].wallTime, target: 3, bound: 0.02, latency: latency)
        #expect(off == nil, "latency \(off ?? "")")
        // The pictures are the asset's own (the DASH fMP4 of the same encode), each once, in order.
        let reference = try await Self.referenceFrames(
            manifest: origin.manifestURL(asset: "generated"), from: presentation(frames.first!) - 0.5,
            to: presentation(frames.last!) + 0.5)
        let timeOf = Dictionary(reference.map { ($0.md5, $0.pts) }, uniquingKeysWith: { first, _ in first })
        let matched = frames.compactMap { timeOf[$0.md5] }
        #expect(
            matched.count == frames.count,
            "\(frames.count - matched.count) of \(frames.count) pictures are not the asset's")
        #expect(
            zip(matched, matched.dropFirst()).allSatisfy { abs($1 - $0 - 1.0 / 30) < 0.001 },
            "pictures in the asset's order")
        // The audio muxed in the same segments is heard.
        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        let start = try #require(pcm.firstSound())
        #expect(
            abs(
                ToneAnalysis.frequency(
                    pcm.channel(0)[start...].dropFirst(480).dropLast(480), sampleRate: pcm.sampleRate) - 440) < 1)
        #expect(run.events.contains { if case .sourceLoaded(_, .live) = $0 { true } else { false } })
    }
}
