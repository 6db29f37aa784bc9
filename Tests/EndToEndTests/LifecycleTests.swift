import Foundation
import Logging
import Marquee
import MarqueeOrigin
import MarqueeStreaming
import ServiceLifecycle
import TestSupport
import Testing

/// `Player` as a swift-service-lifecycle `Service`: a graceful shutdown (what SIGTERM becomes in
/// a `ServiceGroup`) fades the sound out and closes the outputs; read from the WAV.
extension LivePlaybackTests {
    @Test func gracefulShutdownFadesOutAndStops() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("service")
        let wav = dir.appendingPathComponent("out.wav")
        let player = try Player(
            options: PlayerOptions(sources: [origin.manifestURL(asset: "generated")], audioOutput: .wav(wav.path)))
        var logger = Logger(label: "test.service")
        logger.logLevel = .warning
        let group = ServiceGroup(configuration: .init(services: [player], logger: logger))
        let running = Task { try await group.run() }
        try await Task.sleep(for: .seconds(3))
        let shutdownAt = Date()
        await group.triggerGracefulShutdown()
        try await running.value  // returns once the player has faded out and stopped
        let took = Date().timeIntervalSince(shutdownAt)
        #expect(took >= Player.shutdownFade && took < Player.shutdownFade + 1, "shutdown took \(took) s")
        #expect(player.state == .idle)

        let pcm = try PCM.wav(wav)  // readable: the header was finalised
        let x = pcm.channel(0)
        let rms = ToneAnalysis.windowRMS(x[...], window: 480)  // 10 ms windows
        try #require(rms.count > 100)
        let full = rms[rms.count - 60]  // 0.6 s before the end: before the fade
        // The last 300 ms fall from full to silence (equal-power: cos), never back up by much.
        let tail = Array(rms.suffix(40))
        #expect(full > 2000, "level before the fade \(full)")
        #expect(tail.last! < full * 0.1, "still \(tail.last!) at the end (from \(full))")
        #expect(
            zip(tail, tail.dropFirst()).allSatisfy { $1 <= $0 * 1.05 + 20 },
            "the fade is not monotonic: \(tail.map { Int($0) })")
        #expect(rms[rms.count - 36] > full * 0.7, "the fade began too early")
    }
}

/// Device power states: with the display off the pictures stop (none presented, frames.tsv)
/// while the sound plays on without a gap (WAV); on again, pictures come back on the clock.
extension LivePlaybackTests {
    @Test func displayOffKeepsTheSoundAndDropsThePictures() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("display")
        let ast = Int(Date().timeIntervalSince1970) - 3600
        let player = try Player(
            options: PlayerOptions(
                sources: [origin.manifestURL(asset: "generated", options: ["ast_\(ast)"])],
                audioOutput: .wav(dir.appendingPathComponent("out.wav").path),
                videoOutput: .frames(dir.path)))
        try await player.play()
        try await Task.sleep(for: .seconds(2.5))
        // On the monotonic clock (frames.tsv's `mono_time`): the wall times are on the server's
        // clock, as measured. From the call's return: a CI run's loaded lane held the test's task
        // for over 0.1 s between reading the clock and the call, and saw a picture "after" it.
        player.displayOff()
        let offAt = Monotonic.now()
        try await Task.sleep(for: .seconds(2))
        let onAt = Monotonic.now()
        player.displayOn()
        try await Task.sleep(for: .seconds(1.5))
        await player.stop()

        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let during = frames.filter { $0.monoTime > offAt + 0.1 && $0.monoTime < onAt }
        #expect(during.isEmpty, "\(during.count) pictures presented with the display off")
        let after = frames.filter { $0.monoTime > onAt + 0.2 }
        #expect(after.count > 25, "\(after.count) pictures after the display came back")
        #expect(after.allSatisfy { abs($0.wallTime - Double(ast) - $0.pts - 3) < 0.02 }, "pictures back on the clock")
        // The sound never stopped: the 440 Hz tone is continuous from its onset to the end.
        let pcm = try PCM.wav(dir.appendingPathComponent("out.wav"))
        let x = pcm.channel(0)
        let start = try #require(pcm.firstSound())
        let rms = ToneAnalysis.windowRMS(x[(start + 480)...], window: 480)
        #expect(rms.dropLast().allSatisfy { $0 > 1000 }, "a gap in the sound: min 10 ms RMS \(rms.min() ?? 0)")
        #expect(Double(x.count - start) / 48_000 > 5.5, "sound for \(Double(x.count - start) / 48_000) s")
    }
}
