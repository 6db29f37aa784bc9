import Foundation
import Logging
import MarqueeStreaming
import NIOCore
import TestSupport
import Testing

@testable import MarqueeVenue

#if canImport(Glibc)
    import Glibc
#endif

/// The venue proxy as an attacker on the venue's LAN sees it: requests written byte by byte
/// (a raw socket, so that no client library tidies them), a page on loopback that must stay out
/// of reach (rigs/security/http_server.py, which logs every request it gets), redirects, and
/// connections that never finish their headers. Asserted: the status and body the attacker
/// gets, and that the secret page's server was never asked.
@Suite(.serialized) struct VenueSecurityTests {
    /// The secret page's server on loopback; its request log.
    static func secretServer() async throws -> (port: Int, log: URL, process: Process) {
        let dir = try Tools.tempDirectory("venue-secret")
        let log = dir.appendingPathComponent("requests.log")
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        let port = try Tools.freePort()
        let script = Tools.packageRoot.appendingPathComponent("rigs/security/http_server.py").path
        let process = try Tools.spawn("python3", [script, "\(port)", log.path])
        for _ in 0..<50 {
            if RawHTTP.get(port: port, target: "/ping").status == 200 { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        try FileManager.default.removeItem(at: log)
        _ = FileManager.default.createFile(atPath: log.path, contents: nil)
        return (port, log, process)
    }

    static func requests(_ log: URL) -> [String] {
        ((try? String(contentsOf: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }

    static func proxy(upstreams: [String], idleSeconds: Int64 = 15) async throws -> VenueProxy {
        var logger = Logger(label: "test.venue.security")
        logger.logLevel = .warning
        var configuration = VenueConfiguration(upstreams: upstreams, sharing: .onlyOnLAN, boxId: "a")
        configuration.discovery = false
        configuration.serverLimits.idleSeconds = idleSeconds
        let proxy = try VenueProxy(configuration: configuration, logger: logger)
        _ = try await proxy.start()
        return proxy
    }

    /// Every way of making one allowed authority read as another: refused before any fetch.
    @Test func authorityTricksReachNothing() async throws {
        let secret = try await Self.secretServer()
        defer { Tools.stop(secret.process) }
        let s = secret.port
        // A name served without a port (cdn.example.com: 80 and 443 only) and the secret's own
        // host under another port, as a venue would list them.
        let proxy = try await Self.proxy(upstreams: ["cdn.example.com", "127.0.0.1:\(s + 1)", "localhost:\(s)"])
        defer { Task { await proxy.stop() } }
        let port = try #require(proxy.port)
        let probes = [
            "/u/http/cdn.example.com:x@127.0.0.1:\(s)/secret.html",
            "/u/http/cdn.example.com:@127.0.0.1:\(s)/secret.html",
            "/u/http/cdn.example.com@127.0.0.1:\(s)/secret.html",
            "/u/http/cdn.example.com%40127.0.0.1:\(s)/secret.html",
            "/u/http/cdn.example.com%3a80@127.0.0.1:\(s)/secret.html",
            "/u/http/cdn.example.com\\@127.0.0.1:\(s)/secret.html",
            "/u/http/cdn.example.com#@127.0.0.1:\(s)/secret.html",
            "/u/http/127.0.0.1:\(s + 1)@127.0.0.1:\(s)/secret.html",
            "/u/http/127.0.0.1:\(s)/secret.html",
            "/u/http/127.1:\(s)/secret.html",
            "/u/http/0x7f000001:\(s)/secret.html",
            "/u/http/2130706433:\(s)/secret.html",
            "/u/http/0177.0.0.1:\(s)/secret.html",
            "/u/http/[::1]:\(s)/secret.html",
            "/u/http/[::ffff:127.0.0.1]:\(s)/secret.html",
            "/u/http/127.0.0.1:\(s + 1)/../../u/http/127.0.0.1:\(s)/secret.html",
            "/u/http/127.0.0.1:\(s + 1)/%2e%2e/secret.html",
            "/u/http/cdn.example.com:\(s)/secret.html",
            "/u/http/localhost:\(s)/secret.html",  // listed by name, resolves to loopback
            "/u/file/127.0.0.1:\(s)/secret.html",
            "/u/http/127.0.0.1:\(s + 1)/secret.html\u{0}x",
            "/p/http/cdn.example.com:x@127.0.0.1:\(s)/secret.html",
            "/p/http/127.0.0.1:\(s)/secret.html",
        ]
        for probe in probes {
            let answer = RawHTTP.get(port: port, target: probe)
            #expect([400, 403, 404].contains(answer.status), "\(probe): \(answer.status)")
            #expect(!answer.body.contains("SECRET"), "\(probe) reached the secret page")
        }
        #expect(Self.requests(secret.log).isEmpty, "the secret page's server was asked: \(Self.requests(secret.log))")
        // The same server listed by its address is served: the refusals above are the checks, not a dead path.
        let listed = try await Self.proxy(upstreams: ["127.0.0.1:\(s)"])
        defer { Task { await listed.stop() } }
        let served = RawHTTP.get(port: try #require(listed.port), target: "/u/http/127.0.0.1:\(s)/secret.html")
        #expect(served.status == 200 && served.body == "SECRET-PAGE")
    }

    /// An allowed upstream that redirects elsewhere: the proxy does not follow; the player is told
    /// where to go (a served target through the proxy, checked again when asked for).
    @Test func redirectsAreNotFollowedByTheProxy() async throws {
        let secret = try await Self.secretServer()
        defer { Tools.stop(secret.process) }
        let cdn = try await Self.secretServer()  // the same script, as an allowed CDN that redirects
        defer { Tools.stop(cdn.process) }
        let proxy = try await Self.proxy(upstreams: ["127.0.0.1:\(cdn.port)"])
        defer { Task { await proxy.stop() } }
        let port = try #require(proxy.port)
        let out = "http://127.0.0.1:\(secret.port)/secret.html"
        let away = RawHTTP.get(
            port: port,
            target: """
                /u/http/127.0.0.1:\(cdn.port)/302?\
                to=\(out.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)
                """
        )
        #expect(away.status == 302)
        #expect(away.header("Location") == out, "a target not served is left to the player: \(away.head)")
        #expect(!away.body.contains("SECRET"))
        #expect(Self.requests(secret.log).isEmpty, "the proxy followed the redirect: \(Self.requests(secret.log))")
        let home = RawHTTP.get(port: port, target: "/u/http/127.0.0.1:\(cdn.port)/302?to=/next")
        #expect(home.status == 302)
        #expect(
            home.header("Location") == "/u/http/127.0.0.1:\(cdn.port)/next",
            "a served target goes back through the proxy: \(home.head)")
    }

    /// One user's cookie is never handed to another from the store or a shared transfer.
    @Test func cookiesAreNotShared() async throws {
        let cdn = try await Self.secretServer()
        defer { Tools.stop(cdn.process) }
        let proxy = try await Self.proxy(upstreams: ["127.0.0.1:\(cdn.port)"])
        defer { Task { await proxy.stop() } }
        let port = try #require(proxy.port)
        for _ in 0..<2 {
            let answer = RawHTTP.get(port: port, target: "/u/http/127.0.0.1:\(cdn.port)/cookie.bin")
            #expect(answer.status == 200 && answer.body.count == 1000)
            #expect(answer.header("Set-Cookie") == nil, "a shared answer carried a cookie: \(answer.head)")
        }
        #expect(Self.requests(cdn.log).count == 1, "the second answer came from the store")
    }

    /// Connections that never finish their headers (slowloris): one address holds at most 64,
    /// each is closed after the idle limit, and a player elsewhere is served meanwhile.
    @Test func slowHeadersDoNotStarveThePlayers() async throws {
        let cdn = try await Self.secretServer()
        defer { Tools.stop(cdn.process) }
        let proxy = try await Self.proxy(upstreams: ["127.0.0.1:\(cdn.port)"], idleSeconds: 3)
        defer { Task { await proxy.stop() } }
        let port = try #require(proxy.port)
        // 100 connections from 127.0.0.2, each with half a request head.
        var sockets: [Int32] = []
        for _ in 0..<100 {
            guard let fd = RawHTTP.connect(port: port, from: "127.0.0.2") else { continue }
            RawHTTP.send(fd, "GET /u/http/127.0.0.1:\(cdn.port)/a HTTP/1.1\r\nHost: x\r\n")
            sockets.append(fd)
        }
        defer { for socket in sockets { close(socket) } }
        #expect(sockets.count == 100)
        try await Task.sleep(for: .milliseconds(500))
        let closedAtOnce = sockets.filter { RawHTTP.isClosed($0, wait: 0.05) }.count
        #expect(closedAtOnce >= 36, "over the per-address limit of 64: \(closedAtOnce) of 100 closed at once")
        // A player on another address is answered while they hang.
        let started = Date()
        let player = RawHTTP.get(port: port, target: "/u/http/127.0.0.1:\(cdn.port)/a.m4s")
        #expect(
            player.status == 200 && Date().timeIntervalSince(started) < 1,
            "\(player.status) after \(Date().timeIntervalSince(started)) s")
        // Trickle a header byte every 0.5 s: no request head completes, so they are closed at the
        // idle limit (3 s here) although bytes keep coming.
        for _ in 0..<9 {
            for fd in sockets { RawHTTP.send(fd, "X") }
            try await Task.sleep(for: .milliseconds(500))
        }
        let open = sockets.filter { !RawHTTP.isClosed($0, wait: 0.05) }.count
        #expect(open == 0, "\(open) trickling connections still open 4.5 s in (idle limit 3 s)")
    }
}

/// HTTP/1.1 written and read by hand over a POSIX socket: what an attacker sends, exactly.
enum RawHTTP {
    struct Answer {
        var status: Int
        var head: String
        var body: String
        func header(_ name: String) -> String? {
            for line in head.split(separator: "\r\n").dropFirst() {
                guard let colon = line.firstIndex(of: ":") else { continue }
                if line[..<colon].lowercased() == name.lowercased() {
                    return line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                }
            }
            return nil
        }
    }

    static func connect(port: Int, from source: String = "127.0.0.1") -> Int32? {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return nil }
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        inet_pton(AF_INET, source, &local.sin_addr)
        var remote = sockaddr_in()
        remote.sin_family = sa_family_t(AF_INET)
        remote.sin_port = in_port_t(UInt16(port).bigEndian)
        inet_pton(AF_INET, "127.0.0.1", &remote.sin_addr)
        let ok =
            withUnsafePointer(to: &local) { l in
                l.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                } == 0
            }
            && withUnsafePointer(to: &remote) { r in
                r.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                } == 0
            }
        guard ok else {
            close(fd)
            return nil
        }
        var timeout = timeval(tv_sec: 5, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        return fd
    }

    static func send(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Whether the peer has closed `fd` (reads EOF or an error within `wait` seconds).
    static func isClosed(_ fd: Int32, wait: Double) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&p, 1, Int32(wait * 1000)) > 0 else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n <= 0
    }

    /// GETs `target` as written (no normalisation), closes the connection; status 0: no answer.
    static func get(port: Int, target: String) -> Answer {
        guard let fd = connect(port: port) else { return Answer(status: 0, head: "", body: "") }
        defer { close(fd) }
        send(fd, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while data.count < 4 << 20 {
            let n = recv(fd, &buffer, buffer.count, 0)
            guard n > 0 else { break }
            data += buffer[0..<n]
        }
        let text = String(decoding: data, as: UTF8.self)
        guard let split = text.range(of: "\r\n\r\n") else { return Answer(status: 0, head: text, body: "") }
        let head = String(text[..<split.lowerBound])
        let status = head.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
        var body = String(text[split.upperBound...])
        if head.lowercased().contains("transfer-encoding: chunked") { body = dechunk(body) }
        return Answer(status: status, head: head, body: body)
    }

    private static func dechunk(_ text: String) -> String {
        var out = ""
        var rest = Substring(text)
        while let line = rest.range(of: "\r\n"), let size = Int(rest[..<line.lowerBound], radix: 16), size > 0 {
            let start = line.upperBound
            guard let end = rest.index(start, offsetBy: size, limitedBy: rest.endIndex) else { break }
            out += rest[start..<end]
            rest = rest[end...].dropFirst(2)
        }
        return out
    }
}
