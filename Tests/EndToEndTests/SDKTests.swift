import Foundation
import Marquee
import MarqueeOrigin
import TestSupport
import Testing

/// `MarqueeSDK` and `RemoteConfig` against configs served by the loopback origin's `/static/`
/// (with ETag / If-None-Match, as a CDN would).
@Suite(.serialized) struct SDKTests {
    let dir: URL
    let origin: Origin
    let template: String

    init() async throws {
        dir = try Tools.tempDirectory("configs")
        origin = try await LivePlaybackTests.origin(staticRoot: dir.path)
        template = origin.baseURL.absoluteString + "/static/{streamId}.json"
    }

    /// The loopback origin speaks plain http: allowed for these tests.
    static let loopback = DocumentSecurity(allowHTTP: true)

    func write(_ id: String, _ json: String) throws {
        try Data(json.utf8).write(to: dir.appendingPathComponent("\(id).json"))
    }

    @Test func initializeFetchesAndValidatesTheConfig() async throws {
        defer { Task { await origin.stop() } }
        try write(
            "lobby",
            """
            {"sources": ["http://a.example/live.mpd", "http://b.example/live.mpd"], "autoplay": true, "fit": "cover",
             "muted": true, "poster": "/opt/p.png", "somethingNew": {"x": 1},
             "advanced": {"stall": {"minRecoveryDelay": 5, "maxRecoveryDelay": 60}, "sync": {"targetLatency": 2.5},
                          "analytics": {"customerId": "c1", "endpoint": "https://stats.example/e"},
                          "interactive": {"url": "https://app.example/o"}}}
            """)
        // The poster is a local path: fetched configs may name one only in an allowed directory.
        let security = DocumentSecurity(allowedLocalDirectories: ["/opt"], allowHTTP: true)
        let config = try await MarqueeSDK.initialize(streamId: "lobby", configURL: template, security: security)
        #expect(config.sources.map(\.absoluteString) == ["http://a.example/live.mpd", "http://b.example/live.mpd"])
        #expect(
            config.autoplay == true && config.muted == true && config.fit == .cover && config.poster == "/opt/p.png")
        #expect(
            config.settings["advanced.stall.minRecoveryDelay"] == .number(5)
                && config.settings["advanced.stall.maxRecoveryDelay"] == .number(60))
        #expect(config.advanced?.analytics?.customerId == "c1")
        let options = PlayerOptions(config: config)
        #expect(options.targetLatency == 2.5 && options.fit == .cover && options.muted)
    }

    @Test func everyInitFailureIsTyped() async throws {
        defer { Task { await origin.stop() } }
        func code(_ id: String, template: String? = nil) async -> (PlayerError.Code?, String, Int?) {
            do {
                _ = try await MarqueeSDK.initialize(
                    streamId: id, configURL: template ?? self.template, security: Self.loopback)
                return (nil, "", nil)
            } catch {
                return (error.code, error.message, error.httpStatus)
            }
        }
        #expect(await code("", template: nil).0 == .invalidArgument)
        #expect(await code("x", template: "ftp://h/{streamId}").0 == .invalidArgument)
        let missing = await code("nobody")
        #expect(missing.0 == .network && missing.1.contains("404") && missing.2 == 404, "\(missing)")
        try write("empty", "")
        let empty = await code("empty")
        #expect(empty.0 == .network && empty.1.contains("empty body"), "\(empty)")
        try write("notjson", "<html>")
        #expect(await code("notjson").0 == .invalidConfig)
        let bad: [(String, String)] = [
            ("{\"autoplay\": true}", "sources: missing"),
            ("{\"sources\": []}", "sources: at least one"),
            ("{\"sources\": [\"file:///etc/passwd\"]}", "sources[0]"),
            (
                "{\"sources\": [\"http://a/x.mpd\"], \"advanced\": {\"sync\": {\"targetLatency\": \"3\"}}}",
                "advanced.sync.targetLatency: expected a number"
            ),
            ("{\"sources\": [\"http://a/x.mpd\"], \"fit\": \"zoom\"}", "fit:"),
            (
                """
                {"sources": ["http://a/x.mpd"], "advanced": {"stall": \
                {"minRecoveryDelay": 50, "maxRecoveryDelay": 10}}}
                """,
                "advanced.stall: minRecoveryDelay"
            ),
            ("{\"sources\": [\"http://a/x.mpd\"], \"muted\": 1}", "muted: expected a boolean"),
        ]
        for (json, says) in bad {
            try write("bad", json)
            let (c, message, _) = await code("bad")
            #expect(c == .invalidConfig && message.contains(says), "\(json) → \(String(describing: c)): \(message)")
        }
    }

    @Test func refreshIsConditionalAppliesChangesAndKeepsTheLastGoodConfig() async throws {
        defer { Task { await origin.stop() } }
        try write("wall", #"{"sources": ["http://a/x.mpd"], "advanced": {"sync": {"targetLatency": 3}}}"#)
        let remote = try await RemoteConfig(
            streamId: "wall", configURL: template, interval: 3600, security: SDKTests.loopback)
        var changes = remote.changes.makeAsyncIterator()
        #expect(await changes.next()?.settings["advanced.sync.targetLatency"] == .number(3))
        #expect(await remote.refresh() == false, "unchanged: 304")

        try write("wall", #"{"sources": ["http://a/x.mpd"], "advanced": {"sync": {"targetLatency": 4}}}"#)
        #expect(await remote.refresh() == true)
        #expect(await changes.next()?.settings["advanced.sync.targetLatency"] == .number(4))

        try write("wall", #"{"sources": "oops"}"#)
        var failures = remote.failures.makeAsyncIterator()
        #expect(await remote.refresh() == false)
        let failure = await failures.next()
        #expect(failure?.code == .invalidConfig && failure?.message.contains("sources") == true)
        #expect(remote.current.settings["advanced.sync.targetLatency"] == .number(4), "the last good config stays")
        try FileManager.default.removeItem(at: dir.appendingPathComponent("wall.json"))
        #expect(await remote.refresh() == false)
        #expect(await failures.next()?.code == .network)
        remote.stop()
    }
}

extension LivePlaybackTests {
    /// Players of the SDK tests run in the serialized live suite (real time, one at a time).
    /// An origin serving configs from a temporary `/static/` directory: (origin, URL template, writer).
    static func configOrigin() async throws -> (Origin, String, @Sendable (String, String) throws -> Void) {
        let dir = try Tools.tempDirectory("configs")
        let origin = try await Self.origin(staticRoot: dir.path)
        let write: @Sendable (String, String) throws -> Void = { id, json in
            try Data(json.utf8).write(to: dir.appendingPathComponent("\(id).json"))
        }
        return (origin, origin.baseURL.absoluteString + "/static/{streamId}.json", write)
    }

    /// `marquee play --stream-id` plays what the remote config says, through the public SDK.
    @Test func cliPlaysAStreamIdsConfig() async throws {
        let (origin, template, write) = try await Self.configOrigin()
        defer { Task { await origin.stop() } }
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let live = origin.manifestURL(asset: "testpic_2s").absoluteString
        try write("foyer", #"{"sources": ["\#(live)"], "advanced": {"sync": {"targetLatency": 4}}}"#)
        let out = try await Tools.offPool {
            try Tools.run(
                marquee.path,
                [
                    "play", "--stream-id", "foyer", "--config-url", template, "--allow-http", "--audio", "null",
                    "--duration", "3",
                ])
        }
        #expect(out.contains("playing \(live)"), "\(out)")
        #expect(out.contains("(target 4.0)"), "the config's target latency: \(out)")
        // A stream id without a config: a typed SDK error and exit status 1.
        await #expect(throws: (any Error).self) {
            try await Tools.offPool {
                try Tools.run(
                    marquee.path,
                    ["play", "--stream-id", "nobody", "--config-url", template, "--allow-http", "--duration", "1"])
            }
        }
    }
}

extension LivePlaybackTests {
    /// A config refreshed while playing is applied live: its new latency target is on screen.
    @Test func aRefreshedConfigIsAppliedLive() async throws {
        let (origin, template, write) = try await Self.configOrigin()
        defer { Task { await origin.stop() } }
        let ast = Int(Date().timeIntervalSince1970) - 3600
        let live = origin.manifestURL(asset: "generated", options: ["ast_\(ast)"]).absoluteString
        try write("hall", #"{"sources": ["\#(live)"], "advanced": {"sync": {"targetLatency": 3}}}"#)
        let remote = try await RemoteConfig(
            streamId: "hall", configURL: template, interval: 3600, security: SDKTests.loopback)
        let out = try Tools.tempDirectory("hall")
        var options = PlayerOptions(config: remote.current)
        options.videoOutput = .frames(out.path)
        let player = try Player(options: options)
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()
        try await Task.sleep(for: .seconds(3))
        try write("hall", #"{"sources": ["\#(live)"], "advanced": {"sync": {"targetLatency": 4.5}}}"#)
        #expect(await remote.refresh())
        let appliedAt = Date().timeIntervalSince1970
        try player.apply(remote.current)
        try await Task.sleep(for: .seconds(3.5))
        await player.stop()
        listener.cancel()
        remote.stop()
        let frames = try FramesFile.read(out.appendingPathComponent("frames.tsv"))
        // (The first half second of start-up aside, as in the other latency tests.)
        let before = frames.dropFirst(15).filter { $0.wallTime < appliedAt - 0.5 }.map {
            $0.wallTime - Double(ast) - $0.pts
        }
        let after = frames.filter { $0.wallTime > appliedAt + 2 }.map { $0.wallTime - Double(ast) - $0.pts }
        try #require(before.count > 30 && after.count > 20)
        #expect(before.allSatisfy { abs($0 - 3) < 0.02 }, "before: \(before.min()!)…\(before.max()!)")
        #expect(after.allSatisfy { abs($0 - 4.5) < 0.02 }, "after: \(after.min()!)…\(after.max()!)")
        #expect(log.events.contains(.configApplied(targetLatency: 4.5)))
    }
}

extension LivePlaybackTests {
    /// Stall recovery, measured from frames.tsv: the origin answers 503 to everything of the
    /// stream's URL for 7 s (longer than the feeders' own retries bridge). The player holds the
    /// last picture, reloads after 1 s of stall (recovery delay 1 s doubling to 2 s, retried while
    /// the origin is down), and presents again, at its target latency, soon after the origin is
    /// back. With a backup source, the reload switches to it instead.
    @Test(arguments: [false, true])
    func stallRecoveryReloads(withBackup: Bool) async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let now = Date().timeIntervalSince1970
        let ast = Int(now) - 3600
        let (from, to) = (now + 4, now + 11)
        let main = origin.manifestURL(
            asset: "generated", options: ["ast_\(ast)", String(format: "outage_%.3f-%.3f", from, to)])
        let backup = origin.manifestURL(asset: "generated", options: ["ast_\(ast)"])
        let dir = try Tools.tempDirectory("recovery")
        var options = PlayerOptions(sources: withBackup ? [main, backup] : [main], videoOutput: .frames(dir.path))
        options.minRecoveryDelay = 1
        options.maxRecoveryDelay = 2
        options.mainSourceRetryInterval = 1
        let player = try Player(options: options)
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()
        try await Task.sleep(for: .seconds(16))
        await player.stop()
        listener.cancel()

        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let gaps = zip(frames, frames.dropFirst()).map {
            (at: $0.wallTime, length: $1.wallTime - $0.wallTime, next: $1)
        }
        let stall = try #require(gaps.max { $0.length < $1.length })
        #expect(stall.length > 1, "no stall seen: longest gap \(stall.length) s")
        #expect(stall.at >= from - 0.1, "stalled at \(stall.at - now) s, before the outage began at 4 s")
        let resumed = stall.at + stall.length
        // Back within the 2 s recovery delay plus a start-up after the origin returns (or,
        // with a backup, after the first reload: 0.5 s to see the stall, the 1 s delay, a start-up).
        let deadline = withBackup ? stall.at + 1.5 + 2.0 : to + 2 + 2.0
        #expect(
            resumed < deadline,
            """
            resumed \(resumed - (withBackup ? stall.at : to)) s after \
            \(withBackup ? "the stall" : "the origin returned")
            """
        )
        // (With a backup: until the main source is back; the switch back is a reload of its own.)
        let shown = frames.filter { $0.wallTime > resumed + 0.5 && (!withBackup || $0.wallTime < to) }
        try #require(shown.count > 20, "\(shown.count) frames after the recovery")
        let off = FramesFile.offTarget(shown, from: resumed, target: 3, bound: 0.020) {
            $0.wallTime - Double(ast) - $0.pts
        }
        #expect(off == nil, "latency after recovery \(off ?? "")")
        #expect(log.events.contains { if case .recovering = $0 { true } else { false } })
        #expect(log.events.contains(.recovered))
        if withBackup {
            // Main, the backup after the stall, and main again once it answered (≤ 1 s probes).
            let loaded = log.events.compactMap { e -> String? in
                if case .sourceLoaded(let url, _) = e { url } else { nil }
            }
            #expect(loaded == [main.absoluteString, backup.absoluteString, main.absoluteString], "sources: \(loaded)")
            let back = frames.filter { $0.wallTime > to + 3 }.map { $0.wallTime - Double(ast) - $0.pts }
            #expect(back.count > 20 && back.allSatisfy { abs($0 - 3) < 0.020 }, "on main again: \(back.count) frames")
        }
        print(
            String(
                format: "recovery%@: stalled at %.2f s for %.2f s, resumed %.2f s after %@",
                withBackup ? " (backup)" : "",
                stall.at - now, stall.length, resumed - (withBackup ? stall.at : to),
                withBackup ? "the stall" : "the origin returned"))
    }

    /// The main origin hangs (accepts, never answers): the stall is caught the same way, the
    /// reload gives up on the main manifest after its 10 s timeout and plays the backup.
    @Test func hungMainSourceSwitchesToTheBackup() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let now = Date().timeIntervalSince1970
        let ast = Int(now) - 3600
        let main = origin.manifestURL(
            asset: "generated", options: ["ast_\(ast)", String(format: "hang_%.3f-%.3f", now + 4, now + 1000)])
        let backup = origin.manifestURL(asset: "generated", options: ["ast_\(ast)"])
        let dir = try Tools.tempDirectory("hang")
        var options = PlayerOptions(sources: [main, backup], videoOutput: .frames(dir.path))
        options.minRecoveryDelay = 1
        options.maxRecoveryDelay = 2
        let player = try Player(options: options)
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()
        try await Task.sleep(for: .seconds(21))
        let source = player.source
        await player.stop()
        listener.cancel()
        #expect(source == backup, "playing \(source?.absoluteString ?? "nothing")")
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let gaps = zip(frames, frames.dropFirst()).map { (at: $0.wallTime, length: $1.wallTime - $0.wallTime) }
        let stall = try #require(gaps.max { $0.length < $1.length })
        // Stalled after the hang began; back within the recovery delay + the 10 s manifest
        // timeout + a start-up.
        #expect(
            stall.at >= now + 4 - 0.1 && stall.length < 0.5 + 1 + 10 + 2.5,
            "stall at \(stall.at - now) s for \(stall.length) s")
        let after = frames.filter { $0.wallTime > stall.at + stall.length + 0.5 }.map {
            $0.wallTime - Double(ast) - $0.pts
        }
        #expect(after.count > 20 && after.allSatisfy { abs($0 - 3) < 0.020 }, "\(after.count) frames on the backup")
        print(String(format: "hang: stalled at %.2f s for %.2f s, playing the backup", stall.at - now, stall.length))
    }
}
