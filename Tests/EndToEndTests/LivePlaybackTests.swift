import AsyncHTTPClient
import Foundation
import Logging
import Marquee
import MarqueeOrigin
import MarqueeSignage
import MarqueeStreaming
import TestSupport
import Testing

/// Live playback end to end: our origin on loopback → DASH → C core → ALSA (alsa-lib's `file`
/// plugin) / WAV and `frames:`; every assertion is read from those outputs.
@Suite(.serialized) struct LivePlaybackTests {
    static let generated = Tools.packageRoot.appendingPathComponent("assets/generated")

    /// Starts an origin over the default assets (plus `staticRoot`).
    static func origin(staticRoot: String? = nil) async throws -> Origin {
        var configuration = OriginConfiguration(
            assetRoots: OriginConfiguration.defaultAssets(repoRoot: Tools.packageRoot.path))
        configuration.staticRoot = staticRoot
        var logger = Logger(label: "test.origin")
        logger.logLevel = .warning
        let origin = try Origin(configuration: configuration, logger: logger)
        _ = try await origin.start()
        return origin
    }

    /// Plays `url` for `seconds` and returns what the outputs hold.
    static func play(
        _ url: URL, seconds: Double, audio: (URL) -> AudioOutput, target: Double = 3,
        router: (any SourceRouter)? = nil,
        configure: (inout PlayerOptions) -> Void = { _ in },
        sampling: (@Sendable (Player) -> Void)? = nil,
        during: (Player) -> Void = { _ in }
    ) async throws -> (
        frames: [PresentedFrame], dir: URL, events: [PlayerEvent], timed: [(time: Double, event: PlayerEvent)]
    ) {
        let dir = try Tools.tempDirectory("e2e")
        var options = PlayerOptions(
            sources: [url], targetLatency: target, audioOutput: audio(dir), videoOutput: .frames(dir.path))
        configure(&options)
        let player = try Player(options: options, router: router)
        let collected = EventLog()
        let listener = Task { for await e in player.events { collected.append(e) } }
        try await player.play()
        // (Every half second while it plays: what the status says over time.)
        let sampler = sampling.map { sample in
            Task {
                while !Task.isCancelled {
                    sample(player)
                    try? await Task.sleep(for: .milliseconds(500))
                }
            }
        }
        try await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
        sampler?.cancel()
        during(player)
        await player.stop()
        listener.cancel()
        return (try FramesFile.read(dir.appendingPathComponent("frames.tsv")), dir, collected.events, collected.timed)
    }

    /// Init + the media segments covering `[from, to]` of the video representation, from the origin.
    static func referenceFrames(manifest: URL, from: Double, to: Double) async throws -> [ReferenceDecode.Frame] {
        let fetcher = HTTPFetcher()
        let mpd = try MPDParser().parse(Data(try await fetcher.get(manifest).body.readableBytesView))
        let set = try #require(mpd.periods[0].adaptationSets.first { $0.representations.first?.kind == .video })
        let rep = try #require(set.representations.max { $0.bandwidth < $1.bandwidth })
        let timeline = try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: set, representation: rep, manifestURL: manifest,
            liveEdge: Date().timeIntervalSince1970 - mpd.availabilityStartTime!.timeIntervalSince1970)
        var bytes = Data(try await fetcher.get(try #require(timeline.initializationURL)).body.readableBytesView)
        var segment = try #require(timeline.segment(containing: from))
        while segment.start <= to {
            bytes += Data(try await fetcher.get(segment.url).body.readableBytesView)
            guard let next = timeline.segment(after: segment) else { break }
            segment = next
        }
        let file = try Tools.tempDirectory("ref").appendingPathComponent("video.mp4")
        try bytes.write(to: file)
        return try await Tools.offPool { try ReferenceDecode.frames(of: file) }
    }

    /// Every presented frame is the source frame with that pts, in order, and at most 2 % of the
    /// frames between the first and the last presented one are missing.
    static func expectFramesMatch(_ frames: [PresentedFrame], reference: [ReferenceDecode.Frame], fps: Double) {
        var byPTS: [Int: String] = [:]
        for r in reference { byPTS[Int((r.pts * 1000).rounded())] = r.md5 }
        var mismatches = 0
        for f in frames where byPTS[Int((f.pts * 1000).rounded())] != f.md5 { mismatches += 1 }
        #expect(mismatches == 0, "\(mismatches) of \(frames.count) presented frames differ from the independent decode")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.pts < $1.pts }, "frames presented in pts order")
        if let first = frames.first, let last = frames.last {
            let expected = Int(((last.pts - first.pts) * fps).rounded()) + 1
            #expect(Double(frames.count) >= 0.98 * Double(expected), "\(frames.count) of \(expected) frames presented")
        }
    }

    @Test func liveOriginStreamThroughALSAFilePlugin() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        // availabilityStartTime chosen so that the asset's 32 s loop point comes ~5 s into playback.
        let ast = Int(Date().timeIntervalSince1970) - 32_000 + 2
        let url = origin.manifestURL(asset: "generated", options: ["ast_\(ast)"])
        let run = try await Self.play(url, seconds: 12, audio: { .alsa("file:'\($0.path)/out.raw',raw") })
        let frames = run.frames
        try #require(frames.count > 200, "frames presented: \(frames.count)")

        // Pictures: the source's, in order, ≥ 98 % of them.
        let reference = try await Self.referenceFrames(manifest: url, from: frames.first!.pts, to: frames.last!.pts)
        Self.expectFramesMatch(frames, reference: reference, fps: 30)

        // Timing: the origin's presentation time is the media time, so latency = wall_time − AST − pts.
        // Each frame within one frame of target.
        let latencies = frames.map { $0.wallTime - Double(ast) - $0.pts }
        #expect(
            frames.contains { $0.pts < 32_000 } && frames.contains { $0.pts > 32_001 },
            "playback crossed the loop point")
        let errors = latencies.map { abs($0 - 3) }
        #expect(Stats.median(errors) < 0.02, "median |latency − 3 s| = \(Stats.median(errors))")
        #expect(errors.max()! < 1.0 / 30, "max |latency − 3 s| = \(errors.max()!)")
        let spacing = zip(frames, frames.dropFirst()).map { ($1.wallTime - $0.wallTime) - ($1.pts - $0.pts) }
        #expect(spacing.map(abs).max()! < 1.0 / 30, "presentation spacing follows the pts")

        // Sound: 440 Hz from the first sample to the end, without a dropout.
        let pcm = try PCM.raw(run.dir.appendingPathComponent("out.raw"))
        let start = try #require(pcm.firstSound())
        let left = pcm.channel(0)
        let body = left[(start + 480)..<(left.count - 480)]
        #expect(abs(ToneAnalysis.frequency(body, sampleRate: 48_000) - 440) < 1)
        let rms = ToneAnalysis.windowRMS(body, window: 480)
        let typical = Stats.median(rms)
        #expect(rms.min()! > 0.5 * typical, "no dropout: quietest 10 ms window \(rms.min()!) vs typical \(typical)")
        // Real time: the audio written covers about the time played (the plugin does not pace).
        #expect(
            abs(Double(pcm.frameCount) / 48_000 - 12) < 0.6, "\(Double(pcm.frameCount) / 48_000) s of audio in 12 s")
    }

    @Test func ffmpegsOwnLiveDASHOutput() async throws {
        let dir = try Tools.tempDirectory("fflive")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let timeURL = origin.baseURL.appendingPathComponent("time/xsdate").absoluteString
        let encoder = try Tools.spawn(
            "ffmpeg",
            [
                "-v", "error", "-nostdin", "-re", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30", "-f", "lavfi", "-i",
                "sine=f=440:r=48000",
                "-c:v", "libx264", "-preset", "veryfast", "-tune", "zerolatency", "-g", "30", "-keyint_min", "30",
                "-sc_threshold", "0",
                "-c:a", "aac", "-ac", "2", "-f", "dash", "-seg_duration", "1", "-streaming", "1", "-window_size", "30",
                "-use_timeline", "1", "-use_template", "1", "-utc_timing_url", timeURL, "live.mpd",
            ], cwd: dir)
        defer { Tools.stop(encoder) }
        try await Task.sleep(for: .seconds(4))
        let url = origin.baseURL.appendingPathComponent("static/live.mpd")
        let run = try await Self.play(url, seconds: 10, audio: { .wav("\($0.path)/out.wav") })
        let frames = run.frames
        try #require(frames.count > 200, "frames presented: \(frames.count)")

        // Reference: ffmpeg's own segments, decoded independently.
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path)
            .filter { $0.hasPrefix("chunk-stream0-") && $0.hasSuffix(".m4s") }.sorted()
        var bytes = try Data(contentsOf: dir.appendingPathComponent("init-stream0.m4s"))
        for name in names { bytes += try Data(contentsOf: dir.appendingPathComponent(name)) }
        let file = dir.appendingPathComponent("reference.mp4")
        try bytes.write(to: file)
        Self.expectFramesMatch(
            frames, reference: try await Tools.offPool { try ReferenceDecode.frames(of: file) }, fps: 30)

        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        let left = pcm.channel(0)
        let start = try #require(pcm.firstSound())
        #expect(
            abs(ToneAnalysis.frequency(left[start...].dropFirst(480).dropLast(480), sampleRate: pcm.sampleRate) - 440)
                < 1)
    }

    @Test(arguments: [("testpic_2s", [String]()), ("wave", ["segtimeline_1"])])
    func realDASHIFAssetsLooped(asset: String, options: [String]) async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let url = origin.manifestURL(asset: asset, options: options)
        let run = try await Self.play(url, seconds: 6, audio: { .wav("\($0.path)/out.wav") })
        let frames = run.frames
        try #require(frames.count > 100, "frames presented: \(frames.count)")
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.pts < $1.pts })
        // Each picture is one of the asset's own (tfdt rewritten by the origin, pixels untouched).
        let root = OriginConfiguration.defaultAssets(repoRoot: Tools.packageRoot.path)[asset]!
        let videoDir = asset == "wave" ? "video25fps" : "V300"
        var bytes = try Data(contentsOf: URL(fileURLWithPath: "\(root)/\(videoDir)/init.mp4"))
        let segments = try FileManager.default.contentsOfDirectory(atPath: "\(root)/\(videoDir)").filter {
            $0.hasSuffix(".m4s")
        }
        .sorted { (Int($0.dropLast(4)) ?? 0) < (Int($1.dropLast(4)) ?? 0) }
        for s in segments { bytes += try Data(contentsOf: URL(fileURLWithPath: "\(root)/\(videoDir)/\(s)")) }
        let file = run.dir.appendingPathComponent("vod.mp4")
        try bytes.write(to: file)
        let known = Set(try await Tools.offPool { try ReferenceDecode.frames(of: file) }.map(\.md5))
        #expect(frames.allSatisfy { known.contains($0.md5) }, "every presented picture is one of the asset's")
        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        #expect(pcm.firstSound(threshold: 100) != nil, "the asset's audio is heard")
    }

    @Test func backupSourceWhenTheFirstFails() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let bad = origin.baseURL.appendingPathComponent("live/no-such-asset/manifest.mpd")
        let good = origin.manifestURL(asset: "testpic_2s")
        let dir = try Tools.tempDirectory("backup")
        let player = try Player(options: PlayerOptions(sources: [bad, good], videoOutput: .frames(dir.path)))
        let collected = EventLog()
        let listener = Task { for await e in player.events { collected.append(e) } }
        try await player.play()
        try await Task.sleep(for: .seconds(4))
        await player.stop()
        listener.cancel()
        #expect(
            collected.events.contains {
                if case .error(let e, false) = $0 { return e.code == .network } else { return false }
            })
        #expect(collected.events.contains(.sourceLoaded(url: good.absoluteString, streamType: .live)))
        #expect(try FramesFile.read(dir.appendingPathComponent("frames.tsv")).count > 30)
    }

    /// `waitUntilFinished()` waits while a live stream plays, and returns when its caller is cancelled.
    @Test func waitUntilFinishedReturnsOnCancellation() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let player = try Player(options: PlayerOptions(sources: [origin.manifestURL(asset: "testpic_2s")]))
        try await player.play()
        let returned = SharedFlag()
        let waiter = Task {
            await player.waitUntilFinished()
            returned.set()
        }
        try await Task.sleep(for: .milliseconds(800))
        #expect(!returned.value, "returned while the live stream plays")
        waiter.cancel()
        for _ in 0..<40 where !returned.value { try await Task.sleep(for: .milliseconds(50)) }
        #expect(returned.value, "still waiting 2 s after its caller was cancelled")
        #expect(player.state == .playing || player.state == .buffering)
        await player.stop()
    }

    @Test func everySourceBadGivesATypedError() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        var failFast = PlayerOptions(sources: [origin.baseURL.appendingPathComponent("live/nothing/manifest.mpd")])
        failFast.failFast = true
        let player = try Player(options: failFast)
        await #expect { try await player.play() } throws: { ($0 as? PlayerError)?.code == .network }
        #expect(player.state == .error)
        #expect { try Player(options: PlayerOptions(sources: [])) } throws: {
            ($0 as? PlayerError)?.code == .invalidOptionsSources
        }
        #expect { try Player(options: PlayerOptions(sources: [URL(fileURLWithPath: "/x.mpd")])) } throws: {
            ($0 as? PlayerError)?.code == .invalidOptionsSources
        }
        #expect { try Player(options: PlayerOptions(sources: [origin.baseURL], targetLatency: -1)) } throws: {
            ($0 as? PlayerError)?.code == .invalidOptions
        }
    }
}

/// A box switched on while its origin answers 503 does not give up: `play()` returns, the
/// sources are tried again under the recovery delays (events say so), and pictures come once
/// the origin answers, at the latency target.
extension LivePlaybackTests {
    @Test func startDuringAnOutageRetriesUntilTheOriginAnswers() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let now = Date().timeIntervalSince1970
        let ast = Int(now) - 3600
        let back = now + 9  // longer than one load's own retries (≈ 3.5 s)
        let url = origin.manifestURL(
            asset: "generated", options: ["ast_\(ast)", String(format: "outage_%.3f-%.3f", now - 1, back)])
        let dir = try Tools.tempDirectory("startoutage")
        var options = PlayerOptions(sources: [url], videoOutput: .frames(dir.path))
        options.minRecoveryDelay = 1
        options.maxRecoveryDelay = 2
        let player = try Player(options: options)
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()  // returns: the outage is not the box's fault
        #expect(player.state == .buffering)
        try await Task.sleep(for: .seconds(back - Date().timeIntervalSince1970 + 6))
        await player.stop()
        listener.cancel()
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let first = try #require(frames.first, "no picture after the origin came back")
        #expect(first.wallTime > back, "a picture at \(first.wallTime - back) s, before the origin answered")
        #expect(first.wallTime < back + 2 + 2.5, "first picture \(first.wallTime - back) s after the origin answered")
        let settled = frames.filter { $0.wallTime > first.wallTime + 1.5 }.map { $0.wallTime - Double(ast) - $0.pts }
        try #require(settled.count > 45, "\(settled.count) frames")
        #expect(settled.allSatisfy { abs($0 - 3) < 0.025 }, "latency \(settled.min()!)…\(settled.max()!)")
        #expect(log.events.contains { if case .recovering = $0 { true } else { false } })
        #expect(log.events.contains(.recovered))
        #expect(!log.events.contains { if case .error(_, true) = $0 { true } else { false } }, "a fatal error")
    }
}

/// Events collected from a player's stream.
final class SharedFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var stored = false
    func set() { lock.withLock { stored = true } }
    var value: Bool { lock.withLock { stored } }
}

/// A player's events as they came (``EventLog``), or a playlist's (``SignageLog``).
typealias EventLog = EventRecorder<PlayerEvent>
typealias SignageLog = EventRecorder<SignageEvent>

final class EventRecorder<Event: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: [Event] = []
    private var times: [Double] = []
    func append(_ e: Event) {
        let now = Date().timeIntervalSince1970
        lock.withLock {
            stored.append(e)
            times.append(now)
        }
    }
    var events: [Event] { lock.withLock { stored } }
    /// Each event with the local Unix time it was received at.
    var timed: [(time: Double, event: Event)] { lock.withLock { Array(zip(times, stored)) } }
}
