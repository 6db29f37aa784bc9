import Foundation
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
        let encoder = try Tools.spawn("ffmpeg", Self.ffmpegLiveHLS(["-hls_time", "2", "-hls_list_size", "6", "-hls_flags", "delete_segments"]), cwd: dir)
        defer { Tools.stop(encoder) }
        _ = try await Self.waitForSegments(dir.appendingPathComponent("out.m3u8"), count: 2)
        let upstream = origin.baseURL.appendingPathComponent("static/out.m3u8")
        let local = Locked<URL?>(nil)
        let run = try await Self.play(upstream, seconds: 16, audio: { .wav("\($0.path)/out.wav") }) { options in
            options.venue = VenueConfiguration(upstreams: [])
        } during: { player in
            local.withLock { $0 = player.localManifestUrl }
        }
        let played = try #require(local.withLock { $0 })
        #expect(played.path.hasPrefix("/u/http/127.0.0.1:\(origin.baseURL.port!)/static/out.m3u8") && played.port != origin.baseURL.port)
        _ = try Self.expectSteadyPlayback(run.frames, made: { spawned + $0.pts }, target: 3, segment: 4, box: "ffmpeg HLS via the proxy")
        Self.expectHeard440(run.dir.appendingPathComponent("out.wav"))
        let counts = try await Self.originMediaCounts(origin)
        #expect(counts.count >= 6 && counts.values.allSatisfy { $0 == 1 }, "\(counts)")
    }

    /// Two boxes of a venue on one stream, each through its own proxy, peers of each other:
    /// both show the stream's pictures (checked against an independent decode) at the same
    /// moments, and the origin sent every segment once.
    @Test func twoBoxesShareOneStreamAndTheOriginSendsEachSegmentOnce() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let url = origin.manifestURL(asset: "generated")
        let ports = (Int.random(in: 20_000..<40_000), Int.random(in: 40_000..<60_000))
        func venue(_ box: String, _ port: Int, _ peer: Int) -> VenueConfiguration {
            var configuration = VenueConfiguration(port: port, upstreams: [], sharing: .onlyOnLAN, peers: ["127.0.0.1:\(peer)"], boxId: box)
            configuration.discovery = false  // each other only (tests/venue/run tests DNS-SD)
            return configuration
        }
        let started = Date().timeIntervalSince1970
        async let a = Self.play(url, seconds: 16, audio: { _ in .null }) { $0.venue = venue("a", ports.0, ports.1) }
        async let b = Self.play(url, seconds: 16, audio: { _ in .null }) { $0.venue = venue("b", ports.1, ports.0) }
        let (runA, runB) = try await (a, b)
        let counts = try await Self.originMediaCounts(origin)
        let segments = counts.filter { $0.key.hasSuffix(".m4s") }
        #expect(segments.count >= 12, "\(segments.count) segments")
        #expect(segments.values.allSatisfy { $0 == 1 }, "segments sent more than once: \(segments.filter { $0.value > 1 })")
        for run in [runA, runB] {
            let frames = run.frames.filter { $0.wallTime > started + 8 }  // once both share (hellos)
            let reference = try await Self.referenceFrames(manifest: url, from: frames.first!.pts, to: frames.last!.pts)
            Self.expectFramesMatch(frames, reference: reference, fps: 30)
        }
        // The same picture at the same moment on both boxes.
        let wallB = Dictionary(runB.frames.map { (Int(($0.pts * 1000).rounded()), $0.wallTime) }, uniquingKeysWith: { a, _ in a })
        let skews = runA.frames.compactMap { f in wallB[Int((f.pts * 1000).rounded())].map { abs($0 - f.wallTime) } }
        #expect(skews.count > 300 && skews.max()! <= 1.0 / 30 + 0.035, "skew up to \(skews.max() ?? -1) s over \(skews.count) pictures")
        print(String(format: "venue: two boxes, %d segments each sent once by the origin, skew median %.1f ms max %.1f ms",
                     segments.count, Stats.median(skews) * 1000, skews.max()! * 1000))
    }
}
