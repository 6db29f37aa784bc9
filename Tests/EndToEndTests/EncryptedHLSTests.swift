import Foundation
import Marquee
import MarqueeOrigin
import TestSupport
import Testing

/// HLS segments encrypted with AES-128 (`EXT-X-KEY:METHOD=AES-128`) by ffmpeg's own HLS muxer,
/// served as files by our origin: the player fetches the key, the core decrypts each segment.
extension LivePlaybackTests {
    @Test func aes128EncryptedHLSPlaysEveryPictureAndAWrongKeyIsAnError() async throws {
        let dir = try Tools.tempDirectory("aes")
        defer { try? FileManager.default.removeItem(at: dir) }
        let source = dir.appendingPathComponent("source.mp4")
        _ = try await Tools.offPool {
            try Tools.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                    "testsrc2=size=320x180:rate=30:duration=6",
                    "-f", "lavfi", "-i", "sine=f=440:duration=6", "-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p",
                    "-c:a", "aac",
                    "-shortest", source.path,
                ])
        }
        let enc = dir.appendingPathComponent("enc")
        try FileManager.default.createDirectory(at: enc, withIntermediateDirectories: true)
        let key: [UInt8] = (0..<16).map { UInt8($0 * 17 & 0xFF) }
        try Data(key).write(to: enc.appendingPathComponent("key.bin"))
        try Data(key.reversed()).write(to: enc.appendingPathComponent("wrong.bin"))
        // No IV line: the segment's media sequence number is the IV (RFC 8216 §5.2).
        try "key.bin\n\(enc.appendingPathComponent("key.bin").path)\n".write(
            to: dir.appendingPathComponent("keyinfo"), atomically: true, encoding: .utf8)
        _ = try await Tools.offPool {
            try Tools.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-i", source.path, "-c", "copy", "-f", "hls", "-hls_time",
                    "2", "-hls_playlist_type", "vod",
                    "-hls_key_info_file", dir.appendingPathComponent("keyinfo").path, "-hls_segment_filename",
                    enc.appendingPathComponent("seg%d.ts").path,
                    enc.appendingPathComponent("index.m3u8").path,
                ])
        }
        let playlist = try String(contentsOf: enc.appendingPathComponent("index.m3u8"), encoding: .utf8)
        try #require(playlist.contains("METHOD=AES-128"), "ffmpeg wrote an encrypted playlist")
        try playlist.replacingOccurrences(of: "key.bin", with: "wrong.bin").write(
            to: enc.appendingPathComponent("wrong.m3u8"), atomically: true, encoding: .utf8)

        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let base = origin.baseURL
        let run = try await Self.play(
            base.appendingPathComponent("static/enc/index.m3u8"), seconds: 8.5, audio: { .wav("\($0.path)/out.wav") })
        // Every picture of the source, in order, as ffmpeg decodes the unencrypted file.
        let reference = try await Tools.offPool { try ReferenceDecode.frames(of: source) }.map(\.md5)
        #expect(
            run.frames.map(\.md5) == reference,
            """
            \(run.frames.count) pictures presented of \(reference.count); \
            \(zip(run.frames, reference).filter { $0.md5 != $1 }.count) differ
            """
        )
        #expect(run.events.contains(.ended))
        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        let start = try #require(pcm.firstSound())
        let heard = pcm.channel(0)[start...].dropFirst(480).prefix(48_000 * 4)
        let breaks = ToneAnalysis.breaks(heard, frequency: 440, sampleRate: pcm.sampleRate).prefix(8).map {
            String(format: "%.3f s (%.4f)", $0.at + 0.01, $0.gap)
        }
        #expect(
            abs(ToneAnalysis.frequency(heard, sampleRate: pcm.sampleRate) - 440) < 1,
            "the tone breaks at (after the first sound, with the gap): \(breaks)")

        // The wrong key: a media error per segment, no picture, no crash.
        let wrong = try await Self.play(
            base.appendingPathComponent("static/enc/wrong.m3u8"), seconds: 3, audio: { _ in .null })
        #expect(wrong.frames.isEmpty)
        let errors = wrong.events.compactMap { if case .error(let e, _) = $0 { e } else { nil } }
        #expect(errors.contains { $0.code == .media && $0.message.contains("does not decrypt") }, "\(errors)")
    }
}
