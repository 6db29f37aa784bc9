import Foundation
import Logging
import Marquee
import MarqueeOrigin
import MarqueeStreaming
import MarqueeVenue
import TestSupport
import Testing

/// Players playing through venue proxies (``PlayerOptions/venue``), in real time.
extension LivePlaybackTests {
    /// How many times the origin answered each media path.
    static func originMediaCounts(_ origin: Origin) async throws -> [String: Int] {
        let result = try await HTTPFetcher().get(URL(string: origin.baseURL.absoluteString + "/origin/stats?media")!)
        let object = try JSONSerialization.jsonObject(with: Data(result.body.readableBytesView)) as? [String: Any]
        return (object?["media"] as? [String: Int]) ?? [:]
    }

    /// Another packager through the proxy: ffmpeg's live HLS (MPEG-TS, no program date-time),
    /// its playlists rewritten by the proxy. It plays as it does directly: every picture in
    /// order, the latency steady, the tone heard; the origin sent each segment once.
    @Test func ffmpegsHLSPlaysThroughTheVenueProxy() async throws {
        let dir = try Tools.tempDirectory("venue-ffhls")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let spawned = Date().timeIntervalSince1970
        let encoder = try Tools.spawn(
            "ffmpeg", Self.ffmpegLiveHLS(["-hls_time", "2", "-hls_list_size", "6", "-hls_flags", "delete_segments"]),
            cwd: dir)
        defer { Tools.stop(encoder) }
        _ = try await Self.waitForSegments(dir.appendingPathComponent("out.m3u8"), count: 2)
        let upstream = origin.baseURL.appendingPathComponent("static/out.m3u8")
        let local = Locked<URL?>(nil)
        let run = try await Self.play(
            upstream, seconds: 16, audio: { .wav("\($0.path)/out.wav") },
            router: try VenueProxy(
                configuration: VenueConfiguration(upstreams: ["127.0.0.1:\(origin.baseURL.port!)"]),
                logger: Logger(label: "test.venue"))
        ) { _ in
        } during: { player in
            local.withLock { $0 = player.localManifestUrl }
        }
        let played = try #require(local.withLock { $0 })
        #expect(
            played.path.hasPrefix("/u/http/127.0.0.1:\(origin.baseURL.port!)/static/out.m3u8")
                && played.port != origin.baseURL.port)
        _ = try Self.expectSteadyPlayback(
            run.frames, made: { spawned + $0.pts }, target: 3, segment: 4, box: "ffmpeg HLS via the proxy",
            jumps: Self.announcedMoves(run.timed))
        Self.expectHeard440(run.dir.appendingPathComponent("out.wav"))
        let counts = try await Self.originMediaCounts(origin)
        #expect(counts.count >= 6 && counts.values.allSatisfy { $0 == 1 }, "\(counts)")
    }

    /// A venue after a power cut: four `marquee play` processes started together (within
    /// 50 ms) behind one proxy that shares with no peer (`--sharing never`). Each segment is
    /// asked for four times within tens of milliseconds (each process starts at its own pace),
    /// some of them just as its transfer ends, while its digest is checked for the store: every
    /// such request is served from the transfer or the store, and the origin sends each segment
    /// once.
    @Test func fourPlayersStartedTogetherBehindOneProxyFetchEachSegmentOnce() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        var logger = Logger(label: "test.venue")
        logger.logLevel = .warning
        let proxy = try VenueProxy(
            configuration: VenueConfiguration(
                upstreams: ["\(origin.baseURL.host!):\(origin.baseURL.port!)"], sharing: .never), logger: logger)
        _ = try await proxy.start()
        defer { Task { await proxy.stop() } }
        let local = try proxy.localURL(for: origin.manifestURL(asset: "generated"))
        // (Foundation's first spawn in a process is slow: not one of the four.)
        let warmUp = Process()
        warmUp.executableURL = URL(fileURLWithPath: "/usr/bin/true")
        try warmUp.run()
        warmUp.waitUntilExit()
        var players: [Process] = []
        var starts: [Double] = []
        defer { for player in players { Tools.stop(player) } }
        for _ in 0..<4 {
            let player = Process()
            player.executableURL = marquee
            player.arguments = [
                "play", local.absoluteString, "--audio", "null", "--video", "headless", "--duration", "15",
            ]
            player.standardOutput = FileHandle.nullDevice
            player.standardError = FileHandle.nullDevice
            starts.append(Date().timeIntervalSince1970)
            try player.run()
            players.append(player)
        }
        while players.contains(where: \.isRunning) { try await Task.sleep(for: .milliseconds(100)) }
        let spread = (starts.max() ?? 0) - (starts.min() ?? 0)
        #expect(spread <= 0.05, "the players started \(spread) s apart")
        #expect(players.allSatisfy { $0.terminationStatus == 0 }, "exit statuses \(players.map(\.terminationStatus))")
        let counts = try await Self.originMediaCounts(origin)
        let segments = counts.filter { $0.key.hasSuffix(".m4s") && !$0.key.hasSuffix("init.mp4") }
        let requests = segments.values.reduce(0, +)
        let ratio = Double(requests) / Double(max(1, segments.count))
        #expect(segments.count >= 14, "\(segments.count) segments")
        #expect(
            ratio <= 1.05,
            """
            \(requests) origin requests for \(segments.count) segments: sent more than once \
            \(segments.filter { $0.value > 1 })
            """
        )
        print(
            String(
                format: """
                    venue: four players started within %.0f ms behind one proxy: %d origin requests for %d segments, \
                    %.3f×
                    """,
                spread * 1000, requests, segments.count, ratio))
    }

    /// Two boxes of a venue on one stream, each through its own proxy, peers of each other:
    /// both show the stream's pictures (checked against an independent decode) at the same
    /// moments, and the origin sent every segment once.
    @Test func twoBoxesShareOneStreamAndTheOriginSendsEachSegmentOnce() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let url = origin.manifestURL(asset: "generated")
        let ports = (Int.random(in: 20_000..<40_000), Int.random(in: 40_000..<60_000))
        func venue(_ box: String, _ port: Int, _ peer: Int) throws -> VenueProxy {
            var configuration = VenueConfiguration(
                port: port, upstreams: ["127.0.0.1:\(origin.baseURL.port!)"], sharing: .onlyOnLAN,
                peers: ["127.0.0.1:\(peer)"], boxId: box)
            configuration.discovery = false  // each other only (rigs/venue/run tests DNS-SD)
            return try VenueProxy(configuration: configuration, logger: Logger(label: "test.venue.\(box)"))
        }
        let started = Date().timeIntervalSince1970
        let (routerA, routerB) = (try venue("a", ports.0, ports.1), try venue("b", ports.1, ports.0))
        async let a = Self.play(url, seconds: 16, audio: { _ in .null }, router: routerA)
        async let b = Self.play(url, seconds: 16, audio: { _ in .null }, router: routerB)
        let (runA, runB) = try await (a, b)
        let counts = try await Self.originMediaCounts(origin)
        let segments = counts.filter { $0.key.hasSuffix(".m4s") }
        #expect(segments.count >= 12, "\(segments.count) segments")
        #expect(
            segments.values.allSatisfy { $0 == 1 }, "segments sent more than once: \(segments.filter { $0.value > 1 })")
        for run in [runA, runB] {
            let frames = run.frames.filter { $0.wallTime > started + 8 }  // once both share (hellos)
            let reference = try await Self.referenceFrames(manifest: url, from: frames.first!.pts, to: frames.last!.pts)
            Self.expectFramesMatch(frames, reference: reference, fps: 30)
        }
        // The same picture at the same moment on both boxes.
        let wallB = Dictionary(
            runB.frames.map { (Int(($0.pts * 1000).rounded()), $0.wallTime) }, uniquingKeysWith: { a, _ in a })
        let skews = runA.frames.compactMap { f in wallB[Int((f.pts * 1000).rounded())].map { abs($0 - f.wallTime) } }
        #expect(
            skews.count > 300 && skews.max()! <= 1.0 / 30 + 0.035,
            "skew up to \(skews.max() ?? -1) s over \(skews.count) pictures")
        print(
            String(
                format: "venue: two boxes, %d segments each sent once by the origin, skew median %.1f ms max %.1f ms",
                segments.count, Stats.median(skews) * 1000, skews.max()! * 1000))
    }
}
