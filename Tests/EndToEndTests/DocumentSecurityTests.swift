import Foundation
import Marquee
import MarqueeSignage
import MarqueeStreaming
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Documents fetched from the network (issue #36, items 5 and 6) as a box sees them: configs,
/// playlists and schedules served over real HTTP on loopback (rigs/security/http_server.py, over
/// TLS with a certificate made by openssl), signed with `marquee sign`'s format or not, naming
/// local files or not. Asserted: the typed refusal the app gets, and what the player then uses
/// (the last good document's sources and items).
@Suite(.serialized) struct DocumentSecurityTests {
    /// A document server on loopback serving `dir` (https with `tls`), its request log.
    struct Server {
        let port: Int
        let dir: URL
        let log: URL
        let process: Process
        let scheme: String

        func url(_ path: String) -> URL { URL(string: "\(scheme)://127.0.0.1:\(port)/\(path)")! }
        var requests: [String] {
            ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
        }
        func stop() { Tools.stop(process) }

        func write(_ name: String, _ text: String) throws {
            try Data(text.utf8).write(to: dir.appendingPathComponent(name))
        }

        /// `name` and its `.sig`, signed with `key` as `kind` of `version`, expiring `expires` from now.
        func sign(_ name: String, _ kind: DocumentKind, version: Int, key: SigningKey, expires: TimeInterval = 86_400)
            throws
        {
            let body = try Data(contentsOf: dir.appendingPathComponent(name))
            let signature = DocumentSignature(
                signing: body, kind: kind, version: version, expires: Date().addingTimeInterval(expires), key: key)
            try signature.json.write(to: dir.appendingPathComponent(name + ".sig"))
        }
    }

    static func serve(tls: (cert: String, key: String)? = nil) async throws -> Server {
        let dir = try Tools.tempDirectory("docs")
        let log = dir.appendingPathComponent("requests.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let port = try Tools.freePort()
        let script = Tools.packageRoot.appendingPathComponent("rigs/security/http_server.py").path
        let process = try Tools.spawn(
            "python3", [script, "\(port)", log.path, dir.path] + (tls.map { [$0.cert, $0.key] } ?? []))
        // Up when it accepts a connection (nothing is asked before the test).
        for _ in 0..<50 {
            if let fd = RawHTTP.connect(port: port) {
                close(fd)
                break
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        try Data().write(to: log)
        return Server(port: port, dir: dir, log: log, process: process, scheme: tls == nil ? "http" : "https")
    }

    /// Plain http allowed (the loopback server), documents signed by `key`.
    static func signed(_ key: SigningKey, state: String? = nil) -> DocumentSecurity {
        DocumentSecurity(trustKey: key.trustKey, allowHTTP: true, stateDirectory: state)
    }

    static func config(_ source: String) -> String { #"{"sources": ["\#(source)"]}"# }

    /// A signed config is used; an unsigned, tampered, replayed, expired, wrongly signed or
    /// wrongly kinded one is refused with its reason while the player keeps the last good one's
    /// sources; a newer good one is then taken.
    @Test func signedConfigsOnlyAndTheLastGoodOneStays() async throws {
        let server = try await Self.serve()
        defer { server.stop() }
        let key = SigningKey()
        let template = server.url("{streamId}.json").absoluteString.removingPercentEncoding!
        try server.write("hall.json", Self.config("https://a.example/live.mpd"))
        try server.sign("hall.json", .config, version: 2, key: key)
        let remote = try await RemoteConfig(
            streamId: "hall", configURL: template, interval: 3600, security: Self.signed(key))
        defer { remote.stop() }
        #expect(PlayerOptions(config: remote.current).sources == [URL(string: "https://a.example/live.mpd")!])
        var failures = remote.failures.makeAsyncIterator()

        func refused(_ reason: DocumentRefusal.Reason, _ why: String) async {
            let changed = await remote.refresh()
            let failure = await failures.next()
            #expect(!changed, "\(why)")
            #expect(
                failure?.code == .untrustedDocument && failure?.refusal?.reason == reason,
                "\(why): \(String(describing: failure))")
            // What the player is given: still the signed config's source.
            #expect(PlayerOptions(config: remote.current).sources.map(\.host) == ["a.example"], "\(why)")
        }
        try server.write("hall.json", Self.config("https://b.example/live.mpd"))
        try FileManager.default.removeItem(at: server.dir.appendingPathComponent("hall.json.sig"))
        await refused(.unsigned, "no .sig")

        try server.sign("hall.json", .config, version: 3, key: key)
        try server.write("hall.json", Self.config("https://c.example/live.mpd"))  // one byte changed after signing
        await refused(.tampered, "one byte changed")

        try server.write("hall.json", Self.config("https://d.example/live.mpd"))
        try server.sign("hall.json", .config, version: 1, key: key)
        await refused(.olderVersion, "an older version replayed")

        try server.sign("hall.json", .config, version: 3, key: key, expires: -60)
        await refused(.expired, "expired a minute ago")

        try server.sign("hall.json", .config, version: 3, key: SigningKey())
        await refused(.badSignature, "another key")

        try server.sign("hall.json", .playlist, version: 3, key: key)
        await refused(.badSignature, "signed as a playlist")

        try server.write("hall.json.sig", "{\"v\": 1}")
        await refused(.badSignature, "a malformed signature")

        try server.sign("hall.json", .config, version: 3, key: key)
        #expect(await remote.refresh(), "a newer signed config is taken")
        #expect(PlayerOptions(config: remote.current).sources.map(\.host) == ["d.example"])

        // The first fetch too: an unsigned config is no config.
        try server.write("bare.json", Self.config("https://e.example/live.mpd"))
        await #expect(throws: PlayerError.self) {
            _ = try await MarqueeSDK.initialize(streamId: "bare", configURL: template, security: Self.signed(key))
        }
        do {
            _ = try await MarqueeSDK.initialize(streamId: "bare", configURL: template, security: Self.signed(key))
        } catch {
            #expect(error.code == .untrustedDocument && error.refusal?.reason == .unsigned, "\(error)")
        }
        // Without a key: as before (accepted, a warning once).
        let open = try await MarqueeSDK.initialize(
            streamId: "bare", configURL: template, security: DocumentSecurity(allowHTTP: true))
        #expect(open.sources.map(\.host) == ["e.example"])
    }

    /// The last accepted version is kept under the state directory: a box restarted is not
    /// taken back to an older document.
    @Test func theAcceptedVersionOutlivesARestart() async throws {
        let server = try await Self.serve()
        defer { server.stop() }
        let key = SigningKey()
        let state = try Tools.tempDirectory("doc-state").path
        let url = server.url("feed.json")
        try server.write("feed.json", #"{"items": [{"url": "https://cdn.example/a.mp4", "id": "new"}]}"#)
        try server.sign("feed.json", .playlist, version: 7, key: key)
        let first = try await ContentFeed(url: url, interval: 3600, security: Self.signed(key, state: state))
        first.stop()
        #expect(first.current.items.map(\.id) == ["new"])
        try server.write("feed.json", #"{"items": [{"url": "https://cdn.example/b.mp4", "id": "old"}]}"#)
        try server.sign("feed.json", .playlist, version: 6, key: key)
        do {
            _ = try await ContentFeed(url: url, interval: 3600, security: Self.signed(key, state: state))
            Issue.record("version 6 after 7 was accepted")
        } catch {
            #expect(error.code == .untrustedDocument && error.refusal?.reason == .olderVersion, "\(error)")
        }
    }

    /// A feed may not name local files (`file://`, absolute paths) unless they resolve inside an
    /// allowed directory; `..` and a symbolic link out of it do not.
    @Test func feedsNamingLocalFilesAreRefusedNamingTheField() async throws {
        let server = try await Self.serve()
        defer { server.stop() }
        let url = server.url("feed.json")
        let open = DocumentSecurity(allowHTTP: true)
        func refusal(_ items: [String], _ security: DocumentSecurity) async -> DocumentRefusal? {
            let list = items.enumerated().map { #"{"url": "\#($1)", "id": "i\#($0)"}"# }.joined(separator: ", ")
            try? server.write("feed.json", #"{"items": [\#(list)]}"#)
            do {
                _ = try await ContentFeed(url: url, interval: 3600, security: security)
                return nil
            } catch {
                #expect(error.code == .untrustedDocument, "\(error)")
                return error.refusal
            }
        }
        let hostname = await refusal(["https://cdn.example/a.mp4", "promo.mp4", "file:///etc/hostname"], open)
        #expect(
            hostname?.reason == .localPath && hostname?.message.hasPrefix("items[2].url") == true,
            "\(String(describing: hostname))")
        let passwd = await refusal(["/etc/passwd"], open)
        #expect(
            passwd?.reason == .localPath && passwd?.message.hasPrefix("items[0].url") == true,
            "\(String(describing: passwd))")

        let allowed = try Tools.tempDirectory("allowed")
        try Data("png".utf8).write(to: allowed.appendingPathComponent("menu.png"))
        try FileManager.default.createSymbolicLink(
            atPath: allowed.appendingPathComponent("out.png").path, withDestinationPath: "/etc/passwd")
        var local = open
        local.allowedLocalDirectories = [allowed.path]
        #expect(
            await refusal([allowed.appendingPathComponent("menu.png").path, "file://\(allowed.path)/menu.png"], local)
                == nil)
        let dotdot = await refusal(["\(allowed.path)/../etc/passwd"], local)
        #expect(
            dotdot?.reason == .localPath && dotdot?.message.contains("outside") == true, "\(String(describing: dotdot))"
        )
        let link = await refusal(["\(allowed.path)/out.png"], local)
        #expect(link?.reason == .localPath, "a symbolic link out of the directory: \(String(describing: link))")

        // A refresh that names one: refused, the last good playlist stays.
        try server.write("feed.json", #"{"items": [{"url": "https://cdn.example/a.mp4", "id": "good"}]}"#)
        let feed = try await ContentFeed(url: url, interval: 3600, security: open)
        defer { feed.stop() }
        var failures = feed.failures.makeAsyncIterator()
        try server.write(
            "feed.json",
            #"{"items": [{"url": "https://cdn.example/a.mp4", "id": "good"}, {"url": "/etc/shadow", "id": "x"}]}"#)
        #expect(await feed.refresh() == false)
        let failure = await failures.next()
        #expect(
            failure?.refusal?.reason == .localPath && failure?.message.contains("items[1].url") == true,
            "\(String(describing: failure))")
        #expect(feed.current.items.map(\.url.absoluteString) == ["https://cdn.example/a.mp4"])

        // A schedule's playlists, and a config's poster, alike.
        try server.write("schedule.json", #"{"playlists": {"main": {"items": [{"url": "file:///etc/hostname"}]}}}"#)
        do {
            _ = try await ScheduleFeed(url: server.url("schedule.json"), interval: 3600, security: open)
            Issue.record("a schedule naming /etc/hostname was accepted")
        } catch {
            #expect(
                error.refusal?.reason == .localPath && error.message.contains("playlists.main.items[0].url"), "\(error)"
            )
        }
        try server.write(
            "poster.json", #"{"sources": ["https://a.example/x.mpd"], "poster": "/etc/ssl/private/key.png"}"#)
        let template = server.url("{streamId}.json").absoluteString.removingPercentEncoding!
        do {
            _ = try await MarqueeSDK.initialize(streamId: "poster", configURL: template, security: open)
            Issue.record("a config's poster outside the allowed directories was accepted")
        } catch {
            #expect(error.refusal?.reason == .localPath && error.message.contains("poster"), "\(error)")
        }
    }

    /// Plain http is refused without the allowance (nothing is fetched), taken with it.
    @Test func plainHTTPNeedsTheAllowance() async throws {
        let server = try await Self.serve()
        defer { server.stop() }
        try server.write("feed.json", #"{"items": [{"url": "https://cdn.example/a.mp4"}]}"#)
        do {
            _ = try await ContentFeed(url: server.url("feed.json"), interval: 3600)
            Issue.record("a feed over plain http was accepted")
        } catch {
            #expect(error.code == .untrustedDocument && error.refusal?.reason == .insecureTransport, "\(error)")
        }
        #expect(server.requests.isEmpty, "nothing asked: \(server.requests)")
        let feed = try await ContentFeed(
            url: server.url("feed.json"), interval: 3600, security: DocumentSecurity(allowHTTP: true))
        feed.stop()
        #expect(feed.current.items.count == 1)
    }

    /// Over TLS: a private CA's certificate is trusted with the CA file (and said in words
    /// without it), and a redirect from https down to http is not followed, even with http
    /// allowed: the http server is never asked.
    @Test func httpsWithACAFileAndNoDowngrade() async throws {
        let certs = try Tools.tempDirectory("doc-tls")
        let (cert, key) = (certs.appendingPathComponent("cert.pem").path, certs.appendingPathComponent("key.pem").path)
        try Tools.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
                "-out", cert,
                "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", "-addext",
                "basicConstraints=critical,CA:TRUE",
            ])
        let https = try await Self.serve(tls: (cert, key))
        defer { https.stop() }
        let plain = try await Self.serve()
        defer { plain.stop() }
        try https.write("feed.json", #"{"items": [{"url": "https://cdn.example/a.mp4", "id": "tls"}]}"#)
        try plain.write("feed.json", #"{"items": [{"url": "https://cdn.example/b.mp4", "id": "plain"}]}"#)

        do {
            _ = try await ContentFeed(url: https.url("feed.json"), interval: 3600)
            Issue.record("a certificate of no trusted CA was accepted")
        } catch {
            #expect(
                error.code == .network && error.message.contains("the certificate of 127.0.0.1 is not trusted"),
                "\(error)")
            #expect(
                !error.message.contains("OPENSSL_internal") && !error.message.contains(".cc"),
                "no BoringSSL stack: \(error)")
        }
        let trusted = DocumentSecurity(caFile: cert)
        let feed = try await ContentFeed(url: https.url("feed.json"), interval: 3600, security: trusted)
        feed.stop()
        #expect(feed.current.items.map(\.id) == ["tls"])

        var downgrade = trusted
        downgrade.allowHTTP = true
        let to = plain.url("feed.json").absoluteString
        let redirect = URL(
            string: https.url("302").absoluteString + "?to=" + to.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics)!)!
        do {
            _ = try await ContentFeed(url: redirect, interval: 3600, security: downgrade)
            Issue.record("an https → http redirect was followed")
        } catch {
            #expect(
                error.refusal?.reason == .insecureTransport && error.message.contains("https down to http"), "\(error)")
        }
        #expect(plain.requests.isEmpty, "the http server was never asked: \(plain.requests)")
        // The decision itself: https → https and http → https pass; http needs the allowance.
        let (s, p) = (URL(string: "https://a/x")!, URL(string: "http://a/x")!)
        #expect(HTTPFetcher.redirectRefusal(from: s, to: s, allowHTTP: false) == nil)
        #expect(HTTPFetcher.redirectRefusal(from: p, to: s, allowHTTP: true) == nil)
        #expect(HTTPFetcher.redirectRefusal(from: s, to: p, allowHTTP: true) != nil)
        #expect(HTTPFetcher.redirectRefusal(from: p, to: p, allowHTTP: false) != nil)
        #expect(HTTPFetcher.redirectRefusal(from: s, to: URL(string: "file:///etc/passwd")!, allowHTTP: true) != nil)
    }

    /// `marquee sign`: a key made (0600, PEM that openssl reads), a document signed, the
    /// signature verified by a box pinning the printed public key; `marquee play` with the key
    /// refuses an unsigned config (exit 1, the refusal said).
    @Test func theSignCommandSignsWhatABoxAccepts() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let server = try await Self.serve()
        defer { server.stop() }
        let keys = try Tools.tempDirectory("doc-keys")
        let privateKey = keys.appendingPathComponent("signing.key").path
        let printed = try Tools.run(marquee.path, ["sign", "--generate-key", privateKey])
        let mode = try FileManager.default.attributesOfItem(atPath: privateKey)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        #expect(
            (try? Tools.run(marquee.path, ["sign", "--generate-key", privateKey])) == nil,
            "an existing key is not replaced")
        let publicBase64 = try #require(printed.split(separator: "\n").dropFirst().first.map(String.init))
        let pinned = keys.appendingPathComponent("trust-key").path
        try Data(publicBase64.utf8).write(to: URL(fileURLWithPath: pinned))
        // OpenSSL reads the key; its public PEM pins the same key.
        let opensslPEM = try Tools.run("openssl", ["pkey", "-in", privateKey, "-pubout"])
        #expect(try TrustKey(text: opensslPEM) == TrustKey(contentsOfFile: pinned))

        try server.write("lobby.json", Self.config("https://a.example/live.mpd"))
        let document = server.dir.appendingPathComponent("lobby.json").path
        try Tools.run(
            marquee.path,
            [
                "sign", "--key", privateKey, "--kind", "config", "--version", "4", "--expires", "2099-01-01T00:00:00Z",
                document,
            ])
        let template = server.url("{streamId}.json").absoluteString.removingPercentEncoding!
        let security = DocumentSecurity(trustKey: try TrustKey(contentsOfFile: pinned), allowHTTP: true)
        let config = try await MarqueeSDK.initialize(streamId: "lobby", configURL: template, security: security)
        #expect(config.sources.map(\.host) == ["a.example"])

        try server.write("bare.json", Self.config("https://b.example/live.mpd"))
        let failed = try await Tools.offPool { () -> (Int32, String) in
            let p = Process()
            p.executableURL = marquee
            p.arguments = [
                "play", "--stream-id", "bare", "--config-url", template, "--allow-http", "--trust-key", pinned,
                "--duration", "1",
            ]
            let err = Pipe()
            p.standardError = err
            p.standardOutput = FileHandle.nullDevice
            try p.run()
            let text = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            p.waitUntilExit()
            return (p.terminationStatus, text)
        }
        #expect(failed.0 == 1 && failed.1.contains("untrustedDocument") && failed.1.contains("unsigned"), "\(failed)")
    }
}

extension LivePlaybackTests {
    /// An ad break's event naming a local file (a creative the operator did not configure) does
    /// not play it: a non-fatal error says so and the configured creative (880 Hz) plays; the
    /// named file's 660 Hz is never heard.
    @Test func anEventNeverChoosesALocalCreative() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let dir = try Tools.tempDirectory("mix-local")
        let ad = dir.appendingPathComponent("ad.wav")
        let named = dir.appendingPathComponent("named.wav")
        try Self.makeTone(880, seconds: 5, to: ad)
        try Self.makeTone(660, seconds: 5, to: named)
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        var options = PlayerOptions(
            sources: [origin.manifestURL(asset: "generated")], targetLatency: 3,
            audioOutput: .wav(dir.appendingPathComponent("out.wav").path))
        options.mixing = MixOptions(adCreatives: [ad])
        options.mixing.cacheDirectory = dir.appendingPathComponent("cache")
        let player = try Player(options: options)
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()
        var start: Double?
        for _ in 0..<200 {
            if let p = player.status.position, player.status.framesPresented > 0 {
                start = p
                break
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        let at = try #require(start) + 1.5
        try player.schedule(.adBreakStart(creative: named.path), at: at, duration: 2, id: "local")
        for _ in 0..<200 {
            if let p = player.status.position, p > at + 2.6 { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        await player.stop()
        listener.cancel()

        let refusals = log.events.compactMap { e -> String? in
            if case .error(let error, let fatal) = e, !fatal, error.message.contains("not a configured creative") {
                return error.message
            }
            return nil
        }
        #expect(refusals.count == 1 && refusals[0].contains(named.path), "\(refusals)")
        let pcm = try PCM.wav(dir.appendingPathComponent("out.wav"))
        let tones = ToneTrack(pcm.channel(0), from: try #require(pcm.firstSound()))
        let nominal = 32768.0 / 8
        let adRuns = ToneTrack.runs(tones.a880, above: nominal / 2)
        #expect(
            adRuns.count == 1 && abs((adRuns.first.map { $0.end - $0.start } ?? 0) - 2) < 0.1,
            "the configured creative: \(adRuns)")
        #expect(
            tones.a660.allSatisfy { $0 < nominal * 0.05 }, "the event's local file was heard: \(tones.a660.max() ?? 0)")
    }
}
