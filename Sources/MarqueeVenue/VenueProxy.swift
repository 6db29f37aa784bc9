import AsyncHTTPClient
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import MarqueeServing
import MarqueeStreaming
import NIOCore
import NIOHTTP1

/// A venue's local proxy between players and the CDN (System73's PolyNet model): a player plays
/// ``localURL(for:)`` instead of the upstream manifest, and every box of a venue then takes each
/// segment from the CDN about once.
///
/// - **Routes**: `GET`/`HEAD /u/<scheme>/<authority><path>` is the upstream URL
///   `<scheme>://<authority><path>` (query kept). Manifests (HLS playlists, DASH MPDs) are
///   rewritten so their URLs lead back through the proxy (``ManifestRewriter``); they are never
///   stored. `/p/...` is the same for peers (see below); `GET /venue/stats` is
///   ``VenueStatistics`` as JSON; `GET /venue/hello` is this box's name for peers.
/// - **Only configured upstreams**: the path's target is parsed first (``UpstreamTarget``:
///   user-info, escapes, backslashes, dot segments and non-canonical addresses are refused with
///   400), then its scheme, host and port are compared with ``VenueConfiguration/upstreams``; a
///   name must resolve to public addresses. Anything else is answered 403: never an open proxy.
/// - **No redirect is followed by the proxy**: a 3xx goes to the player with its `Location`
///   turned into a proxy path when the target is served, so the next request is checked again.
/// - **Bounded**: connections (512, 64 per address) and idle or unfinished request heads
///   (15 s) as ``RunningServer/Limits``; per-user headers (`Set-Cookie`) are never stored or
///   shared.
/// - **Store**: complete 200 answers that are not manifests, not `no-store`/`no-cache`/`private`,
///   and not larger than an eighth of the store, are kept (``SegmentStore``, least recently used
///   out first, `max-age` honoured when given).
/// - **Coalescing**: a request for a URL already being fetched joins that fetch: it is handed
///   what has arrived, then the rest as it comes (low-latency chunks pass as they arrive).
///   Requests with `Range`, `Authorization` or `Cookie` are passed through on their own.
/// - **Faults are not hidden**: an upstream status goes to the player as it is; an answer cut
///   short upstream is cut short to the player too (connection closed before its end), so the
///   player's own retries and checks see what happened.
/// - **Discovery**: the configured peers, and (``VenueConfiguration/discovery``) those found
///   with DNS-SD through Avahi (``PeerDiscovery``: `_marquee-venue._tcp`).
/// - **Peers** (``SharingPolicy``): each segment has an owner among the boxes that answer
///   (rendezvous hashing on its URL); a box that is not the owner asks it first, under a
///   deadline from the player's buffer, and uses nothing from it before it is verified
///   (``PeerNetwork``); the owner fetches from the CDN once for all. A relay cut short is
///   finished from the CDN with a range request for the rest.
/// - **Starting together**: for up to 2 s after the start, manifests and segments wait until
///   the venue is found (``PeerNetwork/settle()``): its boxes then fetch the first segments once.
public final class VenueProxy: Sendable {
    public let configuration: VenueConfiguration
    let logger: Logger
    let store: SegmentStore
    let client: HTTPClient
    let inflight = Locked([String: Transfer]())
    let stats = Locked(VenueStatistics())
    /// Bytes all transfers under way keep for late joiners together: half the store.
    let inflightBudget: ByteBudget
    private let state = Locked(State())
    let peers: PeerNetwork
    private let discovery: PeerDiscovery
    /// The configuration's allowlist, parsed.
    private let entries: [UpstreamEntry]
    /// Upstream hosts added while running (``addUpstream(_:)``), besides the configuration's.
    private let addedUpstreams = Locked([UpstreamEntry]())
    /// Names resolved for the public-address check, with when to look again.
    private let resolved = Locked([String: (addresses: [IPAddress], until: Double)]())
    /// Seconds of media the local player holds ahead, as it last said (nil: never said).
    let playerBuffer = Locked<Double?>(nil)
    /// When live HLS playlists without dates publish, from every upstream answer (told to the
    /// boxes with each playlist: ``HLSPublicationAge``).
    let publications = PublicationBook()

    private struct State {
        var server: RunningServer?
    }

    /// Checks `configuration` (a ``VenueError`` names what is wrong).
    public init(configuration: VenueConfiguration, logger: Logger, client: HTTPClient = VenueProxy.upstreamClient)
        throws(VenueError)
    {
        let configuration = try configuration.validated()
        self.configuration = configuration
        entries = configuration.upstreams.compactMap { try? UpstreamEntry(parsing: $0) }
        self.logger = logger
        self.client = client
        store = SegmentStore(capacity: configuration.storeBytes)
        inflightBudget = ByteBudget(limit: configuration.storeBytes / 2)
        peers = PeerNetwork(configuration: configuration, cdn: client, logger: logger)
        discovery = PeerDiscovery(logger: logger)
    }

    // MARK: Serving

    /// Binds and serves in the background; returns the bound port.
    public func start() async throws -> Int {
        if let port = state.withLock({ $0.server?.port }) { return port }
        let server = try await RunningServer.start(
            host: configuration.host, port: configuration.port, logger: logger, limits: configuration.serverLimits
        ) {
            [self] (request: Request, writer: consuming ResponseWriter, channel) in
            let remote = channel.remoteAddress?.ipAddress ?? ""
            let response = await respond(to: request, from: remote)
            try await writer.write(response: response.head, body: response.body)
        }
        state.withLock { $0.server = server }
        let port = server.port
        if configuration.sharing != .never, configuration.discovery {
            let peers = self.peers
            peers.discovering(true)
            discovery.start(
                box: configuration.boxId, port: port, found: { peers.add(discovered: $0) },
                lost: { peers.remove(discovered: $0) },
                settled: { peers.discovering(false) })
        }
        peers.start()
        if configuration.sharing != .never, configuration.venueKey == nil {
            logger.warning(
                """
                venue: no venue key: peers are not authenticated, and their bytes are used only under the CDN's \
                SHA-256 digest
                """
            )
        }
        logger.info(
            """
            venue: proxy on http://\(configuration.host):\(port), upstreams \(configuration.upstreams), sharing \
            \(configuration.sharing.rawValue)
            """
        )
        return port
    }

    /// Stops serving (in-flight answers get up to 2 s) and stops asking peers.
    public func stop() async {
        discovery.stop()
        await peers.stop()
        let server = state.withLock { s in
            defer { s.server = nil }
            return s.server
        }
        await server?.stop()
    }

    /// The port served on (nil before ``start()``).
    public var port: Int? { state.withLock { $0.server?.port } }

    /// The URL a player on this box plays instead of `upstream` (loopback). Throws when the
    /// proxy is not running, `upstream` is not a valid http(s) URL, or it is not served.
    public func localURL(for upstream: URL) throws(VenueError) -> URL {
        guard let port else { throw VenueError(.notRunning, "the venue proxy is not running") }
        guard let target = UpstreamTarget(url: upstream) else {
            throw VenueError(.invalidURL, "\(Redact.url(upstream)) is not a valid http(s) URL")
        }
        guard entry(for: target) != nil else {
            throw VenueError(
                .notAllowed,
                "\(target.scheme)://\(target.authority) is not among the proxy's upstreams \(configuration.upstreams)")
        }
        let host = configuration.host == "0.0.0.0" || configuration.host == "::" ? "127.0.0.1" : configuration.host
        guard let url = URL(string: "http://\(host.contains(":") ? "[\(host)]" : host):\(port)\(target.proxyPath)")
        else {
            throw VenueError(.invalidURL, "no proxy URL for \(Redact.url(upstream))")
        }
        return url
    }

    /// Asks `peer` too from now on (what discovery calls; the configured peers are there from
    /// the start). Under `onlyOnLAN` a peer outside the local networks is never asked.
    public func addPeer(_ peer: PeerAddress) { peers.add(discovered: peer) }

    /// Stops asking `peer` (its service went away); a configured peer stays.
    public func removePeer(_ peer: PeerAddress) { peers.remove(discovered: peer) }

    /// Serves the host and port of `source` too from now on: a source the player on this box
    /// plays (it would fetch it directly anyway, so its name may resolve to a local address).
    public func addUpstream(_ source: URL) {
        guard let target = UpstreamTarget(url: source) else { return }
        var entry = UpstreamEntry(exact: target.host, port: target.port)
        entry.ownSource = true
        addedUpstreams.withLock { if !$0.contains(entry), $0.count < 64 { $0.append(entry) } }
    }

    /// The allowlist entry serving `target` (configured, else added).
    func entry(for target: UpstreamTarget) -> UpstreamEntry? {
        entries.first { $0.matches(target) } ?? addedUpstreams.withLock { $0.first { $0.matches(target) } }
    }

    /// Whether `url` is served (parsed, then against the allowlist).
    func allows(_ url: URL) -> Bool { UpstreamTarget(url: url).flatMap { entry(for: $0) } != nil }

    /// The upstream URL behind a URL of this proxy (nil: not one of its).
    public func upstreamURL(for local: URL) -> URL? {
        guard let port, local.port == port, let components = URLComponents(url: local, resolvingAgainstBaseURL: true),
            components.percentEncodedPath.hasPrefix(ProxyPath.prefix)
        else { return nil }
        return try? UpstreamTarget(
            proxyPath: components.percentEncodedPath.dropFirst(ProxyPath.prefix.count),
            query: components.percentEncodedQuery
        ).url
    }

    /// The target `rest` (what follows `/u/` or `/p/`) names, once parsed, allowed, and (a name)
    /// resolved to public addresses only.
    func target(_ rest: Substring, query: String?) async throws(ProxyRefusal) -> UpstreamTarget {
        let target = try UpstreamTarget(proxyPath: rest, query: query)
        guard let entry = entry(for: target) else {
            throw .forbidden("\(target.scheme)://\(target.authority) is not among the proxy's upstreams")
        }
        guard case .name(let name) = target.host, !entry.ownSource else { return target }
        let now = Monotonic.now()
        var addresses = resolved.withLock { $0[name].flatMap { $0.until > now ? $0.addresses : nil } }
        if addresses == nil {
            let fresh = await IPAddress.resolve(name)
            let full = resolved.withLock { map in
                map = map.filter { $0.value.until > now }
                guard map.count < 256 else { return true }
                map[name] = (fresh, now + 10)
                return false
            }
            guard !full else { throw ProxyRefusal(status: 503, reason: "too many names resolved at once") }
            addresses = fresh
        }
        guard let addresses, !addresses.isEmpty else {
            throw ProxyRefusal(status: 502, reason: "\(name) does not resolve")
        }
        if let local = addresses.first(where: { !$0.isPublic }) {
            throw .forbidden(
                "\(name) resolves to \(local), not a public address (list a venue's own origin by its address)")
        }
        return target
    }

    /// What was delivered and from where, now.
    public var statistics: VenueStatistics {
        var s = stats.withLock { $0 }
        s.storedBytes = store.bytes
        s.peersConnected = peers.connectedCount
        s.peersUnkeyed += peers.unkeyedCount
        return s
    }

    /// The local player's buffer ahead, in seconds: how long a segment may wait for a peer.
    /// (A player on another box says it with CMCD's `bl`.)
    public func reportBuffer(seconds: Double) {
        guard seconds.isFinite else { return }
        playerBuffer.withLock { $0 = max(0, seconds) }
    }

    func respond(to request: Request, from remote: String) async -> Response {
        let path = request.uri.path
        if path == "/venue/stats", request.method == .get {
            let data = (try? JSONEncoder().encode(statistics)) ?? Data()
            return Self.plain(.ok, String(decoding: data, as: UTF8.self), type: "application/json")
        }
        if path == "/venue/hello", request.method == .get {
            guard peers.accepts(remote: remote) else {
                return refuse(.forbidden("peer \(remote) is outside the sharing policy"))
            }
            let nonce = request.uri.query?.split(separator: "&").first { $0.hasPrefix("nonce=") }.map {
                String($0.dropFirst(6))
            }
            return Self.plain(.ok, peers.hello(nonce: nonce), type: "application/json")
        }
        guard request.method == .get || request.method == .head else {
            return Self.plain(.methodNotAllowed, "only GET and HEAD")
        }
        if path.hasPrefix(PeerNetwork.prefix) || path.hasPrefix(PeerNetwork.vouchPrefix) {
            guard peers.accepts(remote: remote) else {
                return refuse(.forbidden("peer \(remote) is outside the sharing policy"))
            }
            if let key = configuration.venueKey {
                let asked = path + (request.uri.query.map { "?" + $0 } ?? "")
                guard
                    VenueProof.check(
                        key, ["marquee-ask", asked], request.headers[HTTPField.Name(VenueProof.authHeader)!] ?? "")
                else {
                    stats.withLock { $0.peersUnkeyed += 1 }
                    return refuse(.forbidden("a peer request from \(remote) without the venue key's proof"))
                }
            }
            do {
                let target = try await target(path.dropFirst(PeerNetwork.prefix.count), query: request.uri.query)
                if path.hasPrefix(PeerNetwork.vouchPrefix) {
                    return await vouch(
                        for: target.url, nonce: request.headers[HTTPField.Name(VenueProof.nonceHeader)!] ?? "")
                }
                return await serveToPeer(target.url)
            } catch { return refuse(error) }
        }
        guard path.hasPrefix(ProxyPath.prefix) else {
            return Self.plain(.notFound, "not a proxy path (try /u/<scheme>/<host[:port]>/<path>)")
        }
        do {
            let target = try await target(path.dropFirst(ProxyPath.prefix.count), query: request.uri.query)
            stats.withLock { $0.requests += 1 }
            return await serveToPlayer(request, url: target.url)
        } catch { return refuse(error) }
    }

    private func refuse(_ refusal: ProxyRefusal) -> Response {
        stats.withLock { $0.refused += 1 }
        logger.info("venue: refused (\(refusal.status)): \(refusal.reason)")
        return Self.plain(HTTPResponse.Status(code: refusal.status), refusal.reason)
    }

    static func plain(_ status: HTTPResponse.Status, _ text: String, type: String = "text/plain; charset=utf-8")
        -> Response
    {
        var headers = HTTPFields()
        headers[.contentType] = type
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The client the proxy fetches upstream with: it follows no redirect (a 3xx goes to the
    /// player, through the proxy, and is checked as any request), with ``HTTPFetcher``'s
    /// connect and idle timeouts.
    public static let upstreamClient: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout = .init(
            connect: .seconds(Int64(HTTPFetcher.connectTimeout)), read: .seconds(Int64(HTTPFetcher.idleTimeout)))
        configuration.redirectConfiguration = .disallow
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()
}
