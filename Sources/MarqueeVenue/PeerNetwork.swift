import AsyncHTTPClient
import Crypto
import Foundation
import Logging
import MarqueeStreaming
import NIOCore

/// The other boxes of a venue: who answers, who owns which segment, and fetching a segment
/// from its owner with every byte verified before use.
///
/// - **Who**: peers given by address and peers discovered (``add(discovered:)``), each asked
///   `GET /venue/hello` every 2 s; one that answered within the last 6 s is connected. Under
///   `onlyOnLAN` only addresses on local networks (``PeerAddress/isLocal(_:)``) are asked or
///   answered; under `never`, none.
/// - **Owner**: rendezvous hashing — every box scores (box name, segment URL) the same way and
///   the highest score among the connected boxes and this one owns it, so the boxes agree
///   without talking, and a box that goes away moves only its own share.
/// - **Verification** (before a byte is used): while the peer's answer comes, a HEAD to the
///   CDN says what the segment is. With a SHA-256 digest (RFC 9530 `Repr-Digest` or
///   `Content-Digest`, which our origin sends) the bytes must hash to it; without, the length
///   must be the CDN's `Content-Length` and the peer's `ETag` the CDN's. A media segment must
///   also be whole (``SegmentShape``). A CDN that says neither a digest nor a length cannot
///   vouch for a peer: the segment comes from the CDN. A peer whose bytes fail is banned for
///   ``VenueConfiguration/banSeconds``.
final class PeerNetwork: Sendable {
    static let prefix = "/p/"
    let configuration: VenueConfiguration
    /// The CDN's client (its HEADs), and the peers' own: a LAN peer connects within 0.5 s and
    /// never leaves a second without a byte, else it is given up (the CDN instead).
    let cdn: HTTPClient
    let client: HTTPClient
    let logger: Logger
    private let state = Locked(State())

    private struct Peer {
        var address: PeerAddress
        var box: String?
        var lastAnswer: Double?
        var bannedUntil: Double?
        var discovered: Bool
    }

    private struct State {
        var peers: [PeerAddress: Peer] = [:]
        var task: Task<Void, Never>?
        var startedAt: Double?
        /// Discovery's first look is under way.
        var discovering = false
    }

    /// Seconds after the start during which a segment waits for discovery's first look and the
    /// first hellos.
    static let settling = 2.0

    /// Discovery has begun its first look (``settle()`` waits for it) / has ended it and this
    /// box's own service is announced (``PeerDiscovery/start(box:port:found:lost:settled:)``).
    func discovering(_ on: Bool) { state.withLock { $0.discovering = on } }

    /// Right after the start, until discovery has settled and every peer known then answered
    /// once, or ``settling`` passed: boxes of a
    /// venue start together (after a power cut), and without this every box would fetch the
    /// first segments from the CDN itself, all at once.
    func settle() async {
        while true {
            let waiting = state.withLock { s -> Bool in
                guard let started = s.startedAt, Monotonic.now() - started < Self.settling else { return false }
                return s.discovering || s.peers.values.contains { $0.box == nil && accepts(remote: $0.address.host) }
            }
            guard waiting else { return }
            try? await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Seconds between hellos, and how long an answer counts.
    static let helloInterval = 2.0
    static let connectedFor = 6.0

    init(configuration: VenueConfiguration, cdn: HTTPClient, logger: Logger) {
        self.configuration = configuration
        self.cdn = cdn
        client = Self.peerClient
        self.logger = logger
        state.withLock { s in
            for text in configuration.peers {
                guard let a = PeerAddress(text) else { continue }
                s.peers[a] = Peer(address: a, discovered: false)
            }
        }
    }

    func start() {
        guard configuration.sharing != .never else { return }
        let began = Monotonic.now()
        let task = Task { [self] in
            while !Task.isCancelled {
                await greetAll()
                // Often at first (boxes of a venue start together), then every helloInterval.
                let interval = Monotonic.now() - began < 10 ? 0.25 : Self.helloInterval
                try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
            }
        }
        state.withLock {
            $0.task = task
            $0.startedAt = began
        }
    }

    func stop() async {
        let task = state.withLock { s in
            defer { s.task = nil }
            return s.task
        }
        task?.cancel()
        await task?.value
    }

    /// The client every proxy of the process asks peers with (never shut down, as
    /// ``HTTPFetcher/defaultClient``).
    static let peerClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .milliseconds(500), read: .seconds(1))
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// Adds a peer found by discovery (DNS-SD); a second call for one address is nothing.
    func add(discovered address: PeerAddress) {
        state.withLock { s in
            if s.peers[address] == nil { s.peers[address] = Peer(address: address, discovered: true) }
        }
    }

    /// Forgets a discovered peer (its service went away); a configured one stays.
    func remove(discovered address: PeerAddress) {
        state.withLock { s in
            if s.peers[address]?.discovered == true { s.peers[address] = nil }
        }
    }

    /// Whether a peer at `remote` may ask this box or be asked.
    func accepts(remote: String) -> Bool {
        switch configuration.sharing {
        case .never: false
        case .onlyOnLAN: PeerAddress.isLocal(remote)
        case .always: true
        }
    }

    func hello() -> String {
        let box = configuration.boxId.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
        return "{\"box\":\"\(box)\",\"sharing\":\"\(configuration.sharing.rawValue)\"}"
    }

    private func greetAll() async {
        let addresses = state.withLock { Array($0.peers.keys) }.filter { accepts(remote: $0.host) }
        await withTaskGroup(of: Void.self) { group in
            for address in addresses { group.addTask { await self.greet(address) } }
        }
    }

    private func greet(_ address: PeerAddress) async {
        var box: String?
        if let url = URL(string: "http://\(address)/venue/hello"),
            let answer = try? await HTTPFetcher(client: client).get(url, timeout: .seconds(1), maxBytes: 4096),
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView)) as? [String: Any]
        {
            box = object["box"] as? String
        }
        let now = Monotonic.now()
        state.withLock { s in
            guard s.peers[address] != nil else { return }
            if let box {
                s.peers[address]?.box = box
                s.peers[address]?.lastAnswer = now
            }
        }
    }

    /// The peers answering now (not this box, not banned).
    private func connected(now: Double) -> [(PeerAddress, String)] {
        state.withLock { s in
            s.peers.values.compactMap { p in
                guard let box = p.box, box != configuration.boxId, let last = p.lastAnswer, now - last <= Self.connectedFor,
                    (p.bannedUntil ?? 0) <= now, accepts(remote: p.address.host)
                else { return nil }
                return (p.address, box)
            }
        }
    }

    var connectedCount: Int { configuration.sharing == .never ? 0 : connected(now: Monotonic.now()).count }

    /// The peer that owns `key`, nil when this box does (or there is nobody to share with).
    func owner(of key: String) -> PeerAddress? {
        guard configuration.sharing != .never else { return nil }
        let members = connected(now: Monotonic.now())
        guard !members.isEmpty else { return nil }
        var best = (score: Self.score(box: configuration.boxId, key: key), address: PeerAddress?.none)
        for (address, box) in members {
            let s = Self.score(box: box, key: key)
            if s > best.score || (s == best.score && address.description < (best.address?.description ?? "")) { best = (s, address) }
        }
        return best.address
    }

    /// Rendezvous score: the first 8 bytes of SHA-256(box "\n" key), the same on every box.
    static func score(box: String, key: String) -> UInt64 {
        let digest = SHA256.hash(data: Array((box + "\n" + key).utf8))
        return digest.withUnsafeBytes { raw in raw.prefix(8).reduce(0) { $0 << 8 | UInt64($1) } }
    }

    private func ban(_ address: PeerAddress, why: String) {
        let until = Monotonic.now() + configuration.banSeconds
        state.withLock { $0.peers[address]?.bannedUntil = until }
        logger.warning("venue: peer \(address) banned for \(configuration.banSeconds) s: \(why)")
    }

    /// What the CDN says of a segment.
    struct Description: Sendable {
        var sha256: [UInt8]?
        var length: Int?
        var etag: String?

        /// From an answer's headers: an RFC 9530 SHA-256 digest, `Content-Length`, `ETag`.
        init(headers: [(String, String)]) {
            func field(_ name: String) -> String? { headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1 }
            sha256 = ["Repr-Digest", "Content-Digest"].lazy.compactMap { field($0).flatMap(PeerNetwork.sha256(fromDigest:)) }.first
            length = field("Content-Length").flatMap(Int.init)
            etag = field("ETag")
        }
    }

    enum Outcome { case verified, unverifiable(String), failed(String) }

    /// Asks `peer` for `url`; on bytes verified against the CDN's word, hands them to
    /// `transfer` (finished): ``PeerOutcome``. A peer that is gone (refused, reset) is not
    /// counted as connected until it answers a hello again; one that lied is banned.
    ///
    /// `deadline` (seconds, from the player's buffer) bounds a peer that serves from its store:
    /// its answer must begin within min(deadline, 1 s) and, at the pace it comes, end within the
    /// deadline. A peer relaying the CDN for this segment (it owns it and fetches it now) is
    /// waited for while bytes keep coming (a second without one ends it), up to
    /// max(deadline, ``relayWait``): its pace is the uplink's, which going to the CDN as well
    /// would only share. A relay cut short (the owner killed mid-transfer) is finished from the
    /// CDN with a range request for the rest, when the CDN's SHA-256 can check the whole.
    func fetch(_ url: URL, from peer: PeerAddress, deadline: Double, into transfer: Transfer, proxy: VenueProxy) async -> PeerOutcome {
        guard let path = ProxyPath.path(for: url) else { return .declined }
        let peerURL = "http://\(peer)\(Self.prefix)\(path.dropFirst(ProxyPath.prefix.count))"
        let limit = proxy.store.largestObject
        let client = self.client
        let started = Monotonic.now()
        let cap = max(deadline, Self.relayWait)
        async let said = describe(url, deadline: cap)
        let outcome: Result<(headers: [(String, String)], body: ByteBuffer), PeerFailure> = await Self.within(cap) {
            var request = HTTPClientRequest(url: peerURL)
            request.method = .GET
            let response: HTTPClientResponse
            do {
                response = try await client.execute(request, timeout: .milliseconds(Int64(min(deadline, 1) * 1000)))
            } catch {
                return .failure(PeerFailure("no answer: \(error)", gone: true))
            }
            guard response.status == .ok else { return .failure(PeerFailure("HTTP \(response.status.code)")) }
            let relaying = response.headers.first(name: "Marquee-Source") != "peer-store"
            let length = response.headers.first(name: "Content-Length").flatMap(Int.init)
            var body = ByteBuffer()
            do {
                for try await var chunk in response.body {
                    guard body.readableBytes + chunk.readableBytes <= limit else { return .failure(PeerFailure("over \(limit) bytes")) }
                    body.writeBuffer(&chunk)
                    let elapsed = Monotonic.now() - started
                    if !relaying, let length, elapsed > 0.2, elapsed * Double(length) / Double(body.readableBytes) > deadline {
                        return .failure(PeerFailure(String(format: "too slow: %d of %d bytes in %.2f s", body.readableBytes, length, elapsed)))
                    }
                }
            } catch {
                let partial = relaying && body.readableBytes > 0 ? body : nil
                return .failure(PeerFailure("cut short after \(body.readableBytes) bytes: \(error)", gone: true, partial: partial))
            }
            return .success((response.headers.map { ($0.name, $0.value) }, body))
        } ?? .failure(PeerFailure(String(format: "not complete within %.2f s", cap)))
        var got: (headers: [(String, String)], body: ByteBuffer)
        var fromCDN = 0
        switch outcome {
        case .success(let value): got = value
        case .failure(let failure):
            logger.info("venue: \(url.lastPathComponent) from peer \(peer): \(failure.why)")
            guard failure.gone else { return .declined }
            // Not asked again until it answers a hello: the boxes re-agree on owners without it.
            state.withLock { $0.peers[peer]?.lastAnswer = nil }
            // A relay cut short (the owner died or lost its link): the rest from the CDN at once,
            // when the CDN's digest can vouch for the whole.
            guard let partial = failure.partial, await said?.sha256 != nil,
                let rest = await resume(url, after: partial, limit: limit, seconds: max(0.5, cap - (Monotonic.now() - started)))
            else { return .gone }
            got = (rest.headers, rest.body)
            fromCDN = rest.fromCDN
            proxy.stats.withLock { $0.peerFallbacks += 1 }
        }
        guard let description = await said else {
            logger.info("venue: the CDN did not describe \(url.lastPathComponent): the peer's bytes cannot be checked")
            return .declined
        }
        switch Self.verify(got.body, headers: got.headers, against: description, path: url.path) {
        case .verified: break
        case .unverifiable(let why):
            logger.info("venue: \(url.lastPathComponent) from \(peer) not used: \(why)")
            return .declined
        case .failed(let why):
            proxy.stats.withLock {
                $0.verificationFailures += 1
                $0.peerBans += 1
            }
            ban(peer, why: "\(url.lastPathComponent): \(why) (known \(String(format: "%.3f", Monotonic.now() - started)) s after asking)")
            return .gone  // every box that asked it now asks the same next owner: the CDN once
        }
        var headers = VenueProxy.kept(got.headers, personal: false).filter { !["marquee-source", "content-length", "content-range"].contains($0.0.lowercased()) }
        headers.append(("Content-Length", "\(got.body.readableBytes)"))
        transfer.receive(head: TransferHead(status: 200, reason: "OK", headers: headers, url: url))
        proxy.stats.withLock {
            $0.bytesFromPeers += Int64(got.body.readableBytes - fromCDN)
            $0.bytesFromCDN += Int64(fromCDN)
        }
        transfer.receive(chunk: got.body)
        transfer.finish(.success(()))
        logger.debug("venue: \(url.lastPathComponent) from \(peer), \(got.body.readableBytes) bytes in \(String(format: "%.3f", Monotonic.now() - started)) s")
        return .delivered
    }

    /// How asking a peer ended: the bytes are in the transfer; the peer is gone (refused, reset,
    /// or banned for a lie: the next owner may be asked); or not from it (late, refused,
    /// unverifiable: the CDN).
    enum PeerOutcome { case delivered, gone, declined }

    /// Seconds a peer relaying the CDN is waited for at most (bytes still coming).
    static let relayWait = 3.0

    struct PeerFailure: Error {
        var why: String
        var gone = false
        /// What a relaying peer sent before it was cut short.
        var partial: ByteBuffer?
        init(_ why: String, gone: Bool = false, partial: ByteBuffer? = nil) {
            self.why = why
            self.gone = gone
            self.partial = partial
        }
    }

    /// The rest of a body a relaying peer cut short, from the CDN (`Range: bytes=<n>-`): the
    /// peer's bytes and the CDN's together (checked whole against the CDN's digest afterwards), or
    /// the CDN's whole body when it ignores the range; nil without an answer within `seconds`
    /// (the next owner, then the CDN, as for a peer that is gone). `fromCDN`: the bytes the CDN sent.
    private func resume(_ url: URL, after partial: ByteBuffer, limit: Int, seconds: Double) async
        -> (headers: [(String, String)], body: ByteBuffer, fromCDN: Int)?
    {
        let have = partial.readableBytes
        let fetcher = HTTPFetcher(client: cdn, headers: [("Range", "bytes=\(have)-")])
        guard let answer = try? await fetcher.get(url, timeout: .milliseconds(Int(seconds * 1000)), maxBytes: limit) else {
            logger.info("venue: \(url.lastPathComponent): the CDN did not send the rest in time")
            return nil
        }
        if answer.status == 200 { return (answer.headers, answer.body, answer.body.readableBytes) }
        guard answer.status == 206, let range = answer.header("Content-Range"), range.hasPrefix("bytes \(have)-") else { return nil }
        var body = partial
        var rest = answer.body
        body.writeBuffer(&rest)
        logger.info("venue: \(url.lastPathComponent): \(have) bytes from the peer, the other \(answer.body.readableBytes) from the CDN")
        return (answer.headers, body, answer.body.readableBytes)
    }

    /// The CDN's word on `url` (a HEAD), nil without an answer in time.
    private func describe(_ url: URL, deadline: Double) async -> Description? {
        let answer = try? await HTTPFetcher(client: cdn).get(url, method: .HEAD, timeout: .milliseconds(Int(deadline * 1000)), maxBytes: 0)
        return answer.map { Description(headers: $0.headers) }
    }

    /// The SHA-256 in an RFC 9530 digest field (`sha-256=:base64:`), nil without one.
    static func sha256(fromDigest field: String) -> [UInt8]? {
        for member in field.split(separator: ",") {
            let m = member.trimmingCharacters(in: .whitespaces)
            guard m.lowercased().hasPrefix("sha-256=:"), m.hasSuffix(":"), m.count > 10 else { continue }
            let b64 = m.dropFirst("sha-256=:".count).dropLast()
            if let data = Data(base64Encoded: String(b64)), data.count == 32 { return Array(data) }
        }
        return nil
    }

    static func verify(_ body: ByteBuffer, headers: [(String, String)], against cdn: Description, path: String) -> Outcome {
        let bytes = body.readableBytesView
        if let hash = cdn.sha256 {
            guard Array(SHA256.hash(data: Array(bytes))) == hash else { return .failed("SHA-256 differs from the CDN's") }
        } else {
            guard let length = cdn.length else { return .unverifiable("the CDN gives neither a digest nor a length") }
            guard length == bytes.count else { return .failed("\(bytes.count) bytes, the CDN says \(length)") }
            if let etag = cdn.etag {
                let theirs = headers.first { $0.0.caseInsensitiveCompare("ETag") == .orderedSame }?.1
                guard theirs == etag else { return .failed("ETag \(theirs ?? "none"), the CDN says \(etag)") }
            }
        }
        let p = path.lowercased()
        let transportStream = p.hasSuffix(".ts")
        if transportStream || [".m4s", ".mp4", ".m4v", ".m4a", ".cmfv", ".cmfa", ".cmft"].contains(where: p.hasSuffix),
            let problem = SegmentShape.problem(bytes, transportStream: transportStream)
        {
            return .failed(problem)
        }
        return .verified
    }

    /// Why an upstream body is not what its own headers say (a SHA-256 digest that differs) or
    /// not a whole media segment; nil when nothing is wrong with it. Such a body is passed on
    /// (the player judges it) but never kept.
    static func problem(_ body: ByteBuffer, headers: [(String, String)], path: String) -> String? {
        var said = Description(headers: headers)
        said.length = body.readableBytes  // a short body is the player's to judge (not the length here)
        if case .failed(let why) = verify(body, headers: headers, against: said, path: path) { return why }
        return nil
    }

    /// `body`'s result, or nil when it throws or takes longer than `seconds` (it is cancelled).
    static func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { try? await body() }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
