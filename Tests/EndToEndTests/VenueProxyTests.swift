import Foundation
import Logging
import Marquee
import MarqueeOrigin
import MarqueeStreaming
import TestSupport
import Testing

@testable import MarqueeVenue

/// The venue proxy over real HTTP on loopback: our origin upstream, the proxy between, clients
/// that fetch what a player would. What is asserted is what a client receives and what the
/// origin sends (its own byte count), not the proxy's counters.
@Suite struct VenueProxyTests {
    static func proxy(upstreams: [String], sharing: SharingPolicy = .never, box: String = "a", peers: [String] = [])
        async throws -> VenueProxy
    {
        var logger = Logger(label: "test.venue")
        logger.logLevel = .warning
        let proxy = try VenueProxy(
            configuration: VenueConfiguration(
                upstreams: upstreams, sharing: sharing, peers: peers, boxId: box, defaultPeerDeadline: 2),
            logger: logger)
        _ = try await proxy.start()
        return proxy
    }

    static func authority(_ origin: Origin) -> String { "\(origin.baseURL.host!):\(origin.baseURL.port!)" }

    /// Body bytes the origin has sent so far.
    static func originBytes(_ origin: Origin) async throws -> Int {
        let result = try await HTTPFetcher().get(origin.baseURL.appendingPathComponent("origin/stats"))
        let object = try JSONSerialization.jsonObject(with: Data(result.body.readableBytesView)) as? [String: Any]
        return object?["bytes"] as? Int ?? -1
    }

    static func get(_ url: URL) async throws(FetchError) -> [UInt8] {
        Array(try await HTTPFetcher().get(url, timeout: .seconds(15)).body.readableBytesView)
    }

    /// A segment of `generated`'s video that the origin has published (`back` segments behind the edge).
    static func segmentURL(_ origin: Origin, back: Int = 3, options: [String] = [], number: Int? = nil) -> URL {
        let number = number ?? Int(Date().timeIntervalSince1970 / 2) - back
        let base = origin.manifestURL(asset: "generated", options: options).deletingLastPathComponent()
        return base.appendingPathComponent("0/\(number).m4s")
    }

    @Test func manifestsAreRewrittenToLeadBackThroughTheProxy() throws {
        let requested = URL(string: "http://cdn.example:8080/live/ch1/master.m3u8")!
        let allowed = { (u: URL) in
            u.host == "cdn.example" && u.port == 8080 || u.host == "keys.example" && u.port == nil
        }
        let hls = """
            #EXTM3U
            #EXT-X-KEY:METHOD=AES-128,URI="https://keys.example/k1"
            #EXT-X-MAP:URI="init.mp4"
            #EXTINF:2,
            seg1.m4s
            #EXTINF:2,
            /live/ch1/seg2.m4s
            #EXTINF:2,
            http://cdn.example:8080/other/seg3.m4s
            #EXTINF:2,
            http://elsewhere.example/seg4.m4s
            """
        let same = ManifestRewriter(requested: requested, answered: requested, allows: allowed).rewrite(hls, kind: .hls)
        #expect(same.contains(#"URI="/u/https/keys.example/k1""#))
        #expect(same.contains(#"URI="init.mp4""#), "relative: resolves on the proxy as upstream")
        #expect(same.contains("\nseg1.m4s\n"))
        #expect(same.contains("\n/u/http/cdn.example:8080/live/ch1/seg2.m4s\n"))
        #expect(same.contains("\n/u/http/cdn.example:8080/other/seg3.m4s\n"))
        #expect(same.contains("\nhttp://elsewhere.example/seg4.m4s"), "a host not served is left to the player")
        // After a redirect elsewhere, relative references are anchored where the answer came from.
        let moved = ManifestRewriter(
            requested: requested, answered: URL(string: "http://cdn.example:8080/edge/7/master.m3u8")!, allows: allowed
        )
        .rewrite(hls, kind: .hls)
        #expect(moved.contains("\n/u/http/cdn.example:8080/edge/7/seg1.m4s\n"))
        #expect(moved.contains(#"URI="/u/http/cdn.example:8080/edge/7/init.mp4""#))

        let mpd = """
            <?xml version="1.0"?><MPD type="dynamic"><BaseURL>http://cdn.example:8080/dash/</BaseURL><Period id="1">
            <AdaptationSet><SegmentTemplate media="http://cdn.example:8080/x/$Number$.m4s" \
            initialization="init.mp4"/></AdaptationSet></Period>
            <UTCTiming schemeIdUri="urn:mpeg:dash:utc:http-iso:2014" value="http://cdn.example:8080/time"/></MPD>
            """
        let dash = ManifestRewriter(requested: requested, answered: requested, allows: allowed).rewrite(
            mpd, kind: .dash)
        #expect(dash.contains("<BaseURL>/u/http/cdn.example:8080/dash/</BaseURL>"))
        #expect(dash.contains(#"media="/u/http/cdn.example:8080/x/$Number$.m4s""#))
        #expect(dash.contains(#"initialization="init.mp4""#))
        #expect(dash.contains(#"value="http://cdn.example:8080/time""#), "a clock is read where the packager says")
    }

    @Test func onlyTheConfiguredUpstreamsAreServed() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let proxy = try await Self.proxy(upstreams: [Self.authority(origin)])
        defer { Task { await proxy.stop() } }
        let port = proxy.port!
        for path in [
            "/u/http/example.com/a.m4s", "/u/http/127.0.0.1:1/a.m4s",
            "/u/https/\(Self.authority(origin))@evil.example/a.m4s",
            "/p/http/\(Self.authority(origin))/live/generated/0/1.m4s", "/venue/hello",
        ] {
            do {
                _ = try await HTTPFetcher().get(URL(string: "http://127.0.0.1:\(port)\(path)")!)
                Issue.record("\(path) was served")
            } catch {
                // A target that does not parse is malformed (400); one not served is forbidden (403).
                #expect(error.status == (path.contains("@") ? 400 : 403), "\(path): \(error)")
            }
        }
        #expect(throws: VenueError.self) { try proxy.localURL(for: URL(string: "http://example.com/live.mpd")!) }
        #expect(throws: VenueError.self) {
            try VenueProxy(configuration: VenueConfiguration(upstreams: []), logger: Logger(label: "t"))
        }
        #expect(throws: VenueError.self) {
            try VenueProxy(configuration: VenueConfiguration(upstreams: ["*"]), logger: Logger(label: "t"))
        }
        // The configured one is: the same bytes as from the origin.
        let segment = Self.segmentURL(origin)
        #expect(
            sha256Hex(try await Self.get(try proxy.localURL(for: segment))) == sha256Hex(try await Self.get(segment)))
    }

    @Test func requestsForOneSegmentFetchItOnce() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let proxy = try await Self.proxy(upstreams: [Self.authority(origin)])
        defer { Task { await proxy.stop() } }
        // A whole segment, asked for eight times at once, then once more.
        let segment = Self.segmentURL(origin)
        let direct = try await Self.get(segment)
        let before = try await Self.originBytes(origin)
        let local = try proxy.localURL(for: segment)
        let bodies = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for _ in 0..<8 { group.addTask { try await Self.get(local) } }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(bodies.count == 8 && bodies.allSatisfy { $0 == direct })
        #expect(sha256Hex(try await Self.get(local)) == sha256Hex(direct))
        #expect(try await Self.originBytes(origin) - before == direct.count, "the origin sent the segment once")

        // A low-latency segment still being produced (chunked as its samples exist): clients that
        // join during the transfer get it whole, and the origin sends it once.
        // (1-s segments: start early in a second, so most of it is still to come.)
        try await Task.sleep(
            for: .milliseconds(Int((1 - Date().timeIntervalSince1970.truncatingRemainder(dividingBy: 1)) * 1000) + 50))
        let now = Date().timeIntervalSince1970
        let producing = origin.manifestURL(asset: "generated-ll", options: ["ato_0.95"]).deletingLastPathComponent()
            .appendingPathComponent("0/\(Int(now)).m4s")
        let llBefore = try await Self.originBytes(origin)
        let localLL = try proxy.localURL(for: producing)
        let staggered = try await withThrowingTaskGroup(of: [UInt8].self) { group in
            for k in 0..<4 {
                group.addTask {
                    try await Task.sleep(for: .milliseconds(200 * k))
                    return try await Self.get(localLL)
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let whole = try await Self.get(producing)
        // The transfers lasted until the segment's end (its last chunk is produced then).
        #expect(
            Date().timeIntervalSince1970 > Double(Int(now) + 1) - 0.1,
            "the segment was still being produced when asked for")
        #expect(staggered.allSatisfy { $0 == whole }, "\(staggered.map(\.count)) vs \(whole.count)")
        #expect(
            try await Self.originBytes(origin) - llBefore == 2 * whole.count,
            "once for the proxy, once for the direct check")
    }

    /// A request that comes just after a fetch of its segment ended (while the proxy checks
    /// the body's digest for the store) is served from the ended fetch or the store: the
    /// origin sends each segment once. Sixteen segments, each asked for again the moment the
    /// first answer is whole.
    @Test func aRequestJustAfterAFetchEndedIsNotFetchedAgain() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let proxy = try await Self.proxy(upstreams: [Self.authority(origin)])
        defer { Task { await proxy.stop() } }
        let newest = Int(Date().timeIntervalSince1970 / 2) - 2
        var paths: [String] = []
        for number in newest - 15...newest {
            let segment = Self.segmentURL(origin, number: number)
            paths.append(segment.path)
            let local = try proxy.localURL(for: segment)
            let first = try await Self.get(local)
            let again = try await Self.get(local)
            #expect(again == first && !first.isEmpty)
        }
        let counts = try await LivePlaybackTests.originMediaCounts(origin)
        let sent = paths.map { counts[$0] ?? 0 }
        #expect(sent == Array(repeating: 1, count: 16), "origin answers per segment: \(sent) (\(counts))")
    }

    /// The origin's faults strike a URL's first request (a retry passes): through the proxy the
    /// first request fails as it would upstream, and the next one gets the whole segment.
    @Test func upstreamFaultsReachTheClientAndAreNotKept() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let proxy = try await Self.proxy(upstreams: [Self.authority(origin)])
        defer { Task { await proxy.stop() } }
        for fault in ["status_503-100", "reset_100", "badlength_100"] {
            let segment = Self.segmentURL(origin, options: [fault])
            let local = try proxy.localURL(for: segment)
            do {
                let body = try await Self.get(local)
                Issue.record("\(fault): \(body.count) bytes reached the client as if whole")
            } catch {
                if fault.hasPrefix("status") {
                    #expect(error.status == 503)
                } else {
                    #expect(error.code == .network, "\(fault): \(error)")
                }
            }
            let retried = try await Self.get(local)
            #expect(
                sha256Hex(retried) == sha256Hex(try await Self.get(segment)),
                "\(fault): the retry through the proxy is the whole segment")
        }
        // A well-formed 200 of half the segment: the client gets what the origin sent (judging it
        // is the player's), but the proxy does not keep it (its hash is not the origin's
        // Repr-Digest): the next request goes upstream again and is whole.
        let number = Int(Date().timeIntervalSince1970 / 2) - 3  // (one segment for both, whatever the time between)
        let half = Self.segmentURL(origin, options: ["truncate_100"], number: number)
        let first = try await Self.get(try proxy.localURL(for: half))
        let whole = try await Self.get(Self.segmentURL(origin, number: number))
        #expect(sha256Hex(first) == sha256Hex(Array(whole.prefix(whole.count / 2))))
        let before = try await Self.originBytes(origin)
        #expect(sha256Hex(try await Self.get(try proxy.localURL(for: half))) == sha256Hex(whole))
        #expect(try await Self.originBytes(origin) - before == whole.count)
    }

    /// A ranged request (HLS `EXT-X-BYTERANGE`) goes upstream with its `Range`, on its own: the
    /// client gets the origin's 206 (its `Content-Range` checked by the fetcher) and those bytes,
    /// never the stored whole segment, and a whole request after it never gets the range.
    @Test func rangeRequestsPassThroughAndAreNeverStored() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let proxy = try await Self.proxy(upstreams: [Self.authority(origin)])
        defer { Task { await proxy.stop() } }
        let segment = Self.segmentURL(origin)
        let direct = try await Self.get(segment)
        try #require(direct.count > 3000)
        let local = try proxy.localURL(for: segment)
        let range = ByteRange(offset: 1000, length: 2000)
        let ranged = try await HTTPFetcher().get(local, timeout: .seconds(15), range: range)
        #expect(ranged.status == 206 && ranged.header("Content-Range") == "bytes 1000-2999/\(direct.count)")
        #expect(Array(ranged.body.readableBytesView) == Array(direct[1000..<3000]))
        #expect(try await Self.get(local) == direct, "the whole segment after a range of it")
        let again = try await HTTPFetcher().get(local, timeout: .seconds(15), range: ByteRange(offset: 0, length: 10))
        #expect(
            again.status == 206 && Array(again.body.readableBytesView) == Array(direct[0..<10]),
            "a range after the whole was stored")
    }
}
