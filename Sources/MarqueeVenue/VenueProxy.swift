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
    private let inflight = Locked([String: Transfer]())
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
    private let playerBuffer = Locked<Double?>(nil)

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

    // MARK: Players

    private static let forwardedRequestHeaders: [HTTPField.Name] = [
        .range, .userAgent, .accept, .acceptLanguage, .authorization, .cookie, .ifNoneMatch, .ifModifiedSince,
    ]

    private func serveToPlayer(_ request: Request, url: URL) async -> Response {
        let headers = request.headers
        let key = url.absoluteString
        let manifest = ManifestRewriter.kind(path: url.path, contentType: nil) != nil
        let shared = headers[.range] == nil && headers[.authorization] == nil && headers[.cookie] == nil
        if request.method == .head || !shared {
            var forwarded: [(String, String)] = []
            for name in Self.forwardedRequestHeaders {
                if let v = headers[name] { forwarded.append((name.rawName, v)) }
            }
            let transfer = fetchUpstream(url, method: request.method == .head ? .HEAD : .GET, headers: forwarded)
            return await answer(
                transfer, url: url, head: request.method == .head, origin: "pass", to: .player, personal: !shared,
                headers: forwarded)
        }
        if !manifest, let object = await stored(key) { return servedFromStore(object) }
        // Right after the start, a manifest waits until the venue is found as well (segments wait
        // in the transfer): the player then plans its first segments from a manifest as fresh as
        // the moment they can be shared, not one read before a wait of up to 2 s.
        if manifest { await peers.settle() }
        let deadline = peerDeadline(headers, query: url.query)
        switch transfer(for: url, key: key, manifest: manifest, askPeers: !manifest, peerDeadline: deadline) {
        case .stored(let object): return servedFromStore(object)
        case .transfer(let transfer, let joined):
            if joined { stats.withLock { $0.coalesced += 1 } }
            return await answer(transfer, url: url, head: false, origin: joined ? "coalesced" : "fetched", to: .player)
        }
    }

    private func servedFromStore(_ object: StoredObject) -> Response {
        stats.withLock {
            $0.storeHits += 1
            $0.bytesServedToPlayers += Int64(object.body.readableBytes)
        }
        return Self.stored(object, source: "store")
    }

    /// The stored answer for `key`: in the store, or once the transfer of it that has just
    /// ended is judged for the store (its digest checked) and kept. Nil: neither (fetched).
    private func stored(_ key: String) async -> StoredObject? {
        if let object = store.get(key) { return object }
        guard let ended = inflight.withLock({ $0[key] }), ended.isFinished else { return nil }
        await ended.settled()
        return store.get(key)
    }

    /// Seconds a segment may wait for a peer: half the player's buffer (CMCD `bl`, in
    /// milliseconds, from the request's `CMCD-Request` header or its `CMCD` query argument; else
    /// what the local player reported), within 0.25–8 s; without either, the configuration's
    /// default.
    private func peerDeadline(_ headers: HTTPFields, query: String?) -> Double {
        var buffer: Double?
        var sources: [String] = []
        if let header = headers[HTTPField.Name("CMCD-Request")!] { sources.append(header) }
        for item in (query ?? "").split(separator: "&") where item.hasPrefix("CMCD=") {
            sources.append(String(item.dropFirst(5)).removingPercentEncoding ?? "")
        }
        for value in sources {
            for item in value.split(separator: ",") where item.hasPrefix("bl=") {
                buffer = Double(item.dropFirst(3)).map { $0 / 1000 }
            }
        }
        guard let seconds = buffer ?? playerBuffer.withLock({ $0 }), seconds.isFinite else {
            return configuration.defaultPeerDeadline
        }
        return min(8, max(0.25, seconds / 2))
    }

    /// Where a request's answer comes from: a transfer (joined, or started for it), or the
    /// store (the transfer it would have joined was stored as it looked).
    enum Found {
        case transfer(Transfer, joined: Bool)
        case stored(StoredObject)
    }

    /// The transfer under way for `key` (or ended, not yet judged for the store: its body is
    /// whole in it), the object stored since the caller looked, or a new transfer. A transfer
    /// leaves the table only once judged (``finishTransfer(_:url:key:manifest:)`` stores it
    /// first), and the store is looked at again here under the table's lock: a request that
    /// comes just as a transfer ends is served from one or the other, never fetched again.
    func transfer(for url: URL, key: String, manifest: Bool, askPeers: Bool, peerDeadline: Double) -> Found {
        let transfer = Transfer(retainLimit: store.largestObject, budget: inflightBudget)
        let found: Found? = inflight.withLock { map in
            if let other = map[key], !other.isSettled { return .transfer(other, joined: true) }
            if !manifest, let object = store.get(key) { return .stored(object) }
            map[key] = transfer
            return nil
        }
        if let found { return found }
        let task = Task {
            // The owner first; when it is gone (refused, reset), the next owner among those left
            // (the one every box now agrees on), if half the deadline is left; else the CDN.
            if askPeers { await peers.settle() }
            let began = Monotonic.now()
            var asked = 0
            while askPeers, asked < 2, let owner = peers.owner(of: key) {
                asked += 1
                let left = peerDeadline - (Monotonic.now() - began)
                guard asked == 1 || left > peerDeadline / 2 else { break }
                switch await peers.fetch(url, from: owner, deadline: left, into: transfer, proxy: self) {
                case .delivered:
                    finishTransfer(transfer, url: url, key: key, manifest: manifest)
                    return
                case .gone: continue
                case .declined: break
                }
                break
            }
            if asked > 0 { stats.withLock { $0.peerFallbacks += 1 } }
            let fromCDN = Monotonic.now()
            await runUpstream(url, method: .GET, headers: [], into: transfer)
            if !manifest {
                logger.debug(
                    """
                    venue: \(url.lastPathComponent) from the CDN in \
                    \(String(format: "%.3f", Monotonic.now() - fromCDN)) s, \(String(format: "%.3f", fromCDN - began)) \
                    s after the request (\(asked) peers asked, deadline \(String(format: "%.2f", peerDeadline)) s)
                    """
                )
            }
            finishTransfer(transfer, url: url, key: key, manifest: manifest)
        }
        // A player that gives a try up (too slow for its buffer) asks again at once: the transfer
        // goes on into the store and the next try joins it. Only a body too large to keep is
        // cancelled when nobody reads it any more.
        transfer.onAbandoned.withLock { $0 = { [weak transfer] in if transfer?.isJoinable == false { task.cancel() } } }
        return .transfer(transfer, joined: false)
    }

    /// Judges an ended transfer for the store (keeps it when it may be), then takes it out of
    /// the in-flight table and settles it: in that order, so that a request in between finds
    /// it in one or the other (``transfer(for:key:manifest:askPeers:peerDeadline:)``).
    private func finishTransfer(_ transfer: Transfer, url: URL, key: String, manifest: Bool) {
        keep(transfer, url: url, key: key, manifest: manifest)
        inflight.withLock { if $0[key] === transfer { $0[key] = nil } }
        transfer.settle()
    }

    /// Stores an ended transfer's body when it may be: a whole 200, cacheable by its headers, its
    /// length as said, its digest (when given) its own.
    private func keep(_ transfer: Transfer, url: URL, key: String, manifest: Bool) {
        guard !manifest, let head = transfer.head, head.status == 200, let body = transfer.body() else { return }
        let control = (head.header("Cache-Control") ?? "").lowercased()
        guard !control.contains("no-store"), !control.contains("no-cache"), !control.contains("private") else { return }
        if let length = head.header("Content-Length").flatMap(Int.init), length != body.readableBytes { return }
        if let problem = PeerNetwork.problem(body, headers: head.headers, path: url.path) {
            logger.info("venue: \(Redact.url(url)) not kept: \(problem)")
            return
        }
        var expires: Double?
        if let maxAge = Self.maxAge(control) {
            expires = Monotonic.now() + maxAge - Double(head.header("Age").flatMap(Int.init) ?? 0)
        }
        store.put(key, StoredObject(headers: Self.kept(head.headers, personal: false), body: body, expires: expires))
    }

    static func maxAge(_ control: String) -> Double? {
        for directive in control.split(separator: ",") {
            let d = directive.trimmingCharacters(in: .whitespaces)
            for name in ["s-maxage=", "max-age="] where d.hasPrefix(name) { return Double(d.dropFirst(name.count)) }
        }
        return nil
    }

    /// A transfer fetching `url` from upstream on its own (not in the in-flight map).
    private func fetchUpstream(_ url: URL, method: HTTPMethod, headers: [(String, String)]) -> Transfer {
        let transfer = Transfer(retainLimit: store.largestObject, budget: inflightBudget)
        let task = Task { await runUpstream(url, method: method, headers: headers, into: transfer) }
        transfer.onAbandoned.withLock { $0 = { task.cancel() } }
        return transfer
    }

    /// Fetches `url` into `transfer`: the head within 8 s, then the body as it comes (a body
    /// that stops for the client's idle timeout fails).
    func runUpstream(_ url: URL, method: HTTPMethod, headers: [(String, String)], into transfer: Transfer) async {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        do {
            let response = try await client.execute(request, timeout: .seconds(8))
            transfer.receive(
                head: TransferHead(
                    status: Int(response.status.code), reason: response.status.reasonPhrase,
                    headers: response.headers.map { ($0.name, $0.value) },
                    url: response.url ?? url))
            for try await chunk in response.body {
                stats.withLock { $0.bytesFromCDN += Int64(chunk.readableBytes) }
                transfer.receive(chunk: chunk)
            }
            transfer.finish(.success(()))
        } catch {
            stats.withLock { $0.upstreamErrors += 1 }
            if !Task.isCancelled { logger.info("venue: upstream \(Redact.url(url)): \(error)") }
            transfer.finish(.failure(error))
        }
    }

    /// Response headers worth repeating (hop-by-hop and length ones are the proxy's own). An
    /// answer that is stored or shared (not `personal`: asked without credentials or cookies)
    /// never carries one user's cookies or credentials to another.
    static func kept(_ headers: [(String, String)], personal: Bool) -> [(String, String)] {
        let dropped: Set<String> = [
            "connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade",
            "proxy-authenticate",
            "proxy-connection", "content-encoding", "server",
        ]
        let perUser: Set<String> = ["set-cookie", "set-cookie2", "www-authenticate", "authentication-info"]
        return headers.filter {
            !dropped.contains($0.0.lowercased()) && (personal || !perUser.contains($0.0.lowercased()))
        }
    }

    private static func stored(_ object: StoredObject, source: String) -> Response {
        var headers = HTTPFields()
        for (name, value) in object.headers {
            if let n = HTTPField.Name(name) { headers.append(HTTPField(name: n, value: value)) }
        }
        headers[HTTPField.Name("Marquee-Source")!] = source
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: object.body))
    }

    /// The player's answer from `transfer`: the upstream status and headers; a manifest
    /// collected and rewritten; any other body passed on as it arrives. `headers`: the
    /// request's own that went upstream with it (a `Range`: asked again with them).
    private func answer(
        _ transfer: Transfer, url: URL, head: Bool, origin: String, to audience: Audience, personal: Bool = false,
        headers forwarded: [(String, String)] = []
    ) async -> Response {
        guard let body = transfer.read(), let headReader = transfer.read() else {
            // The body outgrew what a transfer keeps before this request joined: fetch alone.
            return await answer(
                fetchUpstream(url, method: .GET, headers: forwarded), url: url, head: head, origin: "pass",
                to: audience, personal: personal, headers: forwarded)
        }
        var upstreamHead: TransferHead?
        do {
            for try await part in headReader {
                if case .head(let h) = part {
                    upstreamHead = h
                    break
                }
            }
        } catch {
            return Self.plain(.badGateway, "upstream \(Redact.url(url)): \(error)")
        }
        guard let upstreamHead else { return Self.plain(.badGateway, "upstream \(Redact.url(url)) gave no answer") }
        var headers = HTTPFields()
        for (name, value) in Self.kept(upstreamHead.headers, personal: personal) {
            if let n = HTTPField.Name(name) { headers.append(HTTPField(name: n, value: value)) }
        }
        if (300..<400).contains(upstreamHead.status), let location = upstreamHead.header("Location") {
            headers[.location] = redirect(location, from: url)
        }
        headers[HTTPField.Name("Marquee-Source")!] = origin
        let status = HTTPResponse.Status(code: upstreamHead.status, reasonPhrase: upstreamHead.reason)
        if head {
            if let length = upstreamHead.header("Content-Length"), upstreamHead.header("Content-Encoding") == nil {
                headers[.contentLength] = length
            }
            return Response(status: status, headers: headers, body: ResponseBody())
        }
        if (200..<300).contains(upstreamHead.status),
            let kind = ManifestRewriter.kind(path: url.path, contentType: upstreamHead.header("Content-Type"))
        {
            var all = ByteBuffer()
            do {
                for try await part in body {
                    guard case .chunk(var c) = part else { continue }
                    guard all.readableBytes + c.readableBytes <= 16 << 20 else {
                        return Self.plain(.badGateway, "manifest over 16 MiB")
                    }
                    all.writeBuffer(&c)
                }
            } catch {
                return Self.plain(.badGateway, "upstream \(Redact.url(url)): \(error)")
            }
            let text = String(decoding: all.readableBytesView, as: UTF8.self)
            let rewritten = ManifestRewriter(requested: url, answered: url, allows: { [self] in allows($0) }).rewrite(
                text, kind: kind)
            headers[.eTag] = nil
            let out = ByteBuffer(string: rewritten)
            count(out.readableBytes, to: audience)
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: out))
        }
        let length =
            upstreamHead.header("Content-Encoding") == nil
            ? upstreamHead.header("Content-Length").flatMap(Int.init) : nil
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: length) { [self] writer in
                for try await part in body {
                    guard case .chunk(let c) = part else { continue }
                    count(c.readableBytes, to: audience)
                    try await writer.write(c)
                }
                try await writer.finish(nil)
            })
    }

    /// Where a redirect from `url` leads, for the player: a served target as its proxy path
    /// (checked again when asked for), anything else as the absolute URL (the player's own
    /// business; the proxy never fetches it).
    func redirect(_ location: String, from url: URL) -> String {
        guard let next = URL(string: location, relativeTo: url)?.absoluteURL else { return location }
        if let target = UpstreamTarget(url: next), entry(for: target) != nil { return target.proxyPath }
        return next.absoluteString
    }

    enum Audience { case player, peer }

    private func count(_ bytes: Int, to audience: Audience) {
        stats.withLock {
            switch audience {
            case .player: $0.bytesServedToPlayers += Int64(bytes)
            case .peer: $0.bytesServedToPeers += Int64(bytes)
            }
        }
    }

    // MARK: Peers

    /// A peer's `/v/` request: this box's word, under the venue key, on the bytes it served for
    /// `url` (from the store; a transfer under way is waited for, up to 2 s).
    private func vouch(for url: URL, nonce: String) async -> Response {
        guard let key = configuration.venueKey, VenueProof.isNonce(nonce) else {
            return Self.plain(.badRequest, "no venue key or no nonce")
        }
        let storeKey = url.absoluteString
        if store.get(storeKey) == nil, let transfer = inflight.withLock({ $0[storeKey] }), let parts = transfer.read() {
            _ = await PeerNetwork.within(2) {
                for try await _ in parts {}
                await transfer.settled()  // judged for the store
            }
        }
        guard let object = store.get(storeKey) else { return Self.plain(.notFound, "not held") }
        let digest = SHA256.hash(data: Array(object.body.readableBytesView)).map { String(format: "%02x", $0) }.joined()
        let body = ["sha256": digest, "mac": VenueProof.mac(key, ["marquee-vouch", nonce, storeKey, digest])]
        let data = (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
        return Self.plain(.ok, String(decoding: data, as: UTF8.self), type: "application/json")
    }

    /// A peer's request: from the store, a transfer under way, or (this box is the owner, or
    /// the asker thinks so) fetched from upstream now, never from another peer.
    private func serveToPeer(_ url: URL) async -> Response {
        let key = url.absoluteString
        let found: Found
        if let object = await stored(key) {
            found = .stored(object)
        } else {
            found = transfer(for: url, key: key, manifest: false, askPeers: false, peerDeadline: 0)
        }
        switch found {
        case .stored(let object):
            stats.withLock { $0.bytesServedToPeers += Int64(object.body.readableBytes) }
            return Self.stored(object, source: "peer-store")
        case .transfer(let transfer, _):
            return await answer(transfer, url: url, head: false, origin: "peer-fetched", to: .peer)
        }
    }
}
