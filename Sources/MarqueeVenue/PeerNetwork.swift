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
/// - **Keyed** (``VenueConfiguration/venueKey``): a hello carries a nonce and its answer an
///   HMAC of it and the box's name under the venue key; a box without the proof is never asked
///   (counted: ``VenueStatistics/peersUnkeyed``), and a request to a peer carries an HMAC of its
///   path. At most ``VenueConfiguration/maxPeers`` peers.
/// - **Verification** (before a byte is used): a media segment must be whole
///   (``SegmentShape``); then either the CDN's SHA-256 digest (RFC 9530 `Repr-Digest` or
///   `Content-Digest`, from a HEAD sent while the peer answers) or, in a keyed venue, the
///   peer's vouch (`/v/…`: an HMAC under the venue key of a fresh nonce, the URL and the SHA-256
///   of the bytes it served) must match the bytes' own hash. Length and ETag are never enough:
///   a peer can pad a re-encoded segment to both. Nothing vouches: the segment comes from the
///   CDN. A peer whose bytes fail is banned for ``VenueConfiguration/banSeconds``. A box that
///   holds the venue key is trusted to vouch: against a keyed box that lies, only the CDN's
///   digest protects.
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
        /// It answered a hello without the venue key's proof.
        var unkeyed = false
    }

    private struct State {
        var peers: [PeerAddress: Peer] = [:]
        /// Peers that answered without the venue key's proof (each counted once).
        var unkeyed = 0
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
            if s.peers[address] == nil, s.peers.count < VenueConfiguration.maxPeers {
                s.peers[address] = Peer(address: address, discovered: true)
            }
        }
    }

    /// Boxes that answered a hello without the venue key's proof.
    var unkeyedCount: Int { state.withLock { $0.unkeyed } }

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

    /// This box's answer to a hello with `nonce`: its name, and in a keyed venue the proof.
    func hello(nonce: String?) -> String {
        var object: [String: String] = ["box": configuration.boxId, "sharing": configuration.sharing.rawValue]
        if let key = configuration.venueKey, let nonce, VenueProof.isNonce(nonce) {
            object["proof"] = VenueProof.mac(key, ["marquee-hello", nonce, configuration.boxId])
        }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    private func greetAll() async {
        let addresses = state.withLock { Array($0.peers.keys) }.filter { accepts(remote: $0.host) }
        await withTaskGroup(of: Void.self) { group in
            for address in addresses { group.addTask { await self.greet(address) } }
        }
    }

    private func greet(_ address: PeerAddress) async {
        var box: String?
        var unkeyed = false
        let nonce = VenueProof.nonce()
        if let url = URL(string: "http://\(address)/venue/hello?nonce=\(nonce)"),
            let answer = try? await HTTPFetcher(client: client).get(url, timeout: .seconds(1), maxBytes: 4096),
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView)) as? [String: Any],
            let name = object["box"] as? String, !name.isEmpty, name.utf8.count <= 253
        {
            if let key = configuration.venueKey,
                !VenueProof.check(key, ["marquee-hello", nonce, name], object["proof"] as? String ?? "")
            {
                unkeyed = true
            } else {
                box = name
            }
        }
        let now = Monotonic.now()
        let newlyUnkeyed = state.withLock { s -> Bool in
            guard s.peers[address] != nil else { return false }
            if let box {
                s.peers[address]?.box = box
                s.peers[address]?.lastAnswer = now
            }
            guard unkeyed, s.peers[address]?.unkeyed == false else { return false }
            s.peers[address]?.unkeyed = true
            s.peers[address]?.box = nil
            s.unkeyed += 1
            return true
        }
        if newlyUnkeyed { logger.warning("venue: \(address) answers without the venue key's proof: never asked") }
    }

    /// The peers answering now (not this box, not banned).
    private func connected(now: Double) -> [(PeerAddress, String)] {
        state.withLock { s in
            s.peers.values.compactMap { p in
                guard let box = p.box, box != configuration.boxId, let last = p.lastAnswer,
                    now - last <= Self.connectedFor,
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
            if s > best.score || (s == best.score && address.description < (best.address?.description ?? "")) {
                best = (s, address)
            }
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
            func field(_ name: String) -> String? {
                headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
            }
            sha256 =
                ["Repr-Digest", "Content-Digest"].lazy.compactMap { field($0).flatMap(PeerNetwork.sha256(fromDigest:)) }
                .first
            length = field("Content-Length").flatMap(Int.init)
            etag = field("ETag")
        }
    }

    enum Outcome {
        case verified
        case unverifiable(String)
        case failed(String)
    }

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
    func fetch(_ url: URL, from peer: PeerAddress, deadline: Double, into transfer: Transfer, proxy: VenueProxy) async
        -> PeerOutcome
    {
        guard let path = ProxyPath.path(for: url) else { return .declined }
        let peerPath = Self.prefix + path.dropFirst(ProxyPath.prefix.count)
        let peerURL = "http://\(peer)\(peerPath)"
        let auth = configuration.venueKey.map { VenueProof.mac($0, ["marquee-ask", peerPath]) }
        let limit = proxy.store.largestObject
        let client = self.client
        let started = Monotonic.now()
        let cap = max(deadline, Self.relayWait)
        async let said = describe(url, deadline: cap)
        let outcome: Result<(headers: [(String, String)], body: ByteBuffer), PeerFailure> =
            await Self.within(cap) {
                var request = HTTPClientRequest(url: peerURL)
                request.method = .GET
                if let auth { request.headers.add(name: VenueProof.authHeader, value: auth) }
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
                        guard body.readableBytes + chunk.readableBytes <= limit else {
                            return .failure(PeerFailure("over \(limit) bytes"))
                        }
                        body.writeBuffer(&chunk)
                        let elapsed = Monotonic.now() - started
                        if !relaying, let length, elapsed > 0.2,
                            elapsed * Double(length) / Double(body.readableBytes) > deadline
                        {
                            return .failure(
                                PeerFailure(
                                    String(
                                        format: "too slow: %d of %d bytes in %.2f s", body.readableBytes, length,
                                        elapsed)))
                        }
                    }
                } catch {
                    let partial = relaying && body.readableBytes > 0 ? body : nil
                    return .failure(
                        PeerFailure(
                            "cut short after \(body.readableBytes) bytes: \(error)", gone: true, partial: partial))
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
                let rest = await resume(
                    url, after: partial, limit: limit, seconds: max(0.5, cap - (Monotonic.now() - started)))
            else { return .gone }
            got = (rest.headers, rest.body)
            fromCDN = rest.fromCDN
            proxy.stats.withLock { $0.peerFallbacks += 1 }
        }
        var judged = Self.verify(
            got.body, headers: got.headers, against: await said ?? Description(headers: []), path: url.path)
        if case .unverifiable = judged, let key = configuration.venueKey {
            judged = await vouch(url, from: peer, body: got.body, key: key)
        }
        switch judged {
        case .verified: break
        case .unverifiable(let why):
            logger.info("venue: \(url.lastPathComponent) from \(peer) not used: \(why)")
            return .declined
        case .failed(let why):
            proxy.stats.withLock {
                $0.verificationFailures += 1
                $0.peerBans += 1
            }
            ban(
                peer,
                why: """
                    \(url.lastPathComponent): \(why) (known \(String(format: "%.3f", Monotonic.now() - started)) s \
                    after asking)
                    """
            )
            return .gone  // every box that asked it now asks the same next owner: the CDN once
        }
        var headers = VenueProxy.kept(got.headers, personal: false).filter {
            !["marquee-source", "content-length", "content-range"].contains($0.0.lowercased())
        }
        headers.append(("Content-Length", "\(got.body.readableBytes)"))
        transfer.receive(head: TransferHead(status: 200, reason: "OK", headers: headers, url: url))
        proxy.stats.withLock {
            $0.bytesFromPeers += Int64(got.body.readableBytes - fromCDN)
            $0.bytesFromCDN += Int64(fromCDN)
        }
        transfer.receive(chunk: got.body)
        transfer.finish(.success(()))
        logger.debug(
            """
            venue: \(url.lastPathComponent) from \(peer), \(got.body.readableBytes) bytes in \
            \(String(format: "%.3f", Monotonic.now() - started)) s
            """
        )
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
        guard let answer = try? await fetcher.get(url, timeout: .milliseconds(Int(seconds * 1000)), maxBytes: limit)
        else {
            logger.info("venue: \(url.lastPathComponent): the CDN did not send the rest in time")
            return nil
        }
        if answer.status == 200 { return (answer.headers, answer.body, answer.body.readableBytes) }
        guard answer.status == 206, let range = answer.header("Content-Range"), range.hasPrefix("bytes \(have)-") else {
            return nil
        }
        var body = partial
        var rest = answer.body
        body.writeBuffer(&rest)
        logger.info(
            """
            venue: \(url.lastPathComponent): \(have) bytes from the peer, the other \(answer.body.readableBytes) from \
            the CDN
            """
        )
        return (answer.headers, body, answer.body.readableBytes)
    }

    /// Whether `peer` vouches for `body` as what it served for `url`: its HMAC under the venue
    /// key of a fresh nonce, the URL and its SHA-256 must check, and that SHA-256 be the body's.
    private func vouch(_ url: URL, from peer: PeerAddress, body: ByteBuffer, key: [UInt8]) async -> Outcome {
        guard let path = ProxyPath.path(for: url) else { return .unverifiable("no proxy path") }
        let vouchPath = Self.vouchPrefix + path.dropFirst(ProxyPath.prefix.count)
        let nonce = VenueProof.nonce()
        let fetcher = HTTPFetcher(
            client: client,
            headers: [
                (VenueProof.authHeader, VenueProof.mac(key, ["marquee-ask", vouchPath])),
                (VenueProof.nonceHeader, nonce),
            ])
        guard let target = URL(string: "http://\(peer)\(vouchPath)"),
            let answer = try? await fetcher.get(target, timeout: .seconds(2), maxBytes: 4096),
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView)) as? [String: Any],
            let said = object["sha256"] as? String, let mac = object["mac"] as? String
        else { return .unverifiable("the peer did not vouch for its bytes") }
        guard VenueProof.check(key, ["marquee-vouch", nonce, url.absoluteString, said], mac) else {
            return .failed("its vouch is not under the venue key")
        }
        let own = SHA256.hash(data: Array(body.readableBytesView)).map { String(format: "%02x", $0) }.joined()
        guard Secrets.equal(own, said) else { return .failed("the bytes it sent are not the bytes it vouches for") }
        return .verified
    }

    static let vouchPrefix = "/v/"

    /// The CDN's word on `url` (a HEAD), nil without an answer in time.
    private func describe(_ url: URL, deadline: Double) async -> Description? {
        let answer = try? await HTTPFetcher(client: cdn).get(
            url, method: .HEAD, timeout: .milliseconds(Int(deadline * 1000)), maxBytes: 0)
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

    /// A body judged against the CDN's word: a media segment must be whole; its SHA-256 must be
    /// the CDN's digest. Without a digest it is unverifiable (a length, an ETag are not enough:
    /// both are easy to match with other bytes).
    static func verify(_ body: ByteBuffer, headers: [(String, String)], against cdn: Description, path: String)
        -> Outcome
    {
        let bytes = body.readableBytesView
        if let length = cdn.length, length != bytes.count {
            return .failed("\(bytes.count) bytes, the CDN says \(length)")
        }
        let p = path.lowercased()
        let transportStream = p.hasSuffix(".ts")
        if transportStream || [".m4s", ".mp4", ".m4v", ".m4a", ".cmfv", ".cmfa", ".cmft"].contains(where: p.hasSuffix),
            let problem = SegmentShape.problem(bytes, transportStream: transportStream)
        {
            return .failed(problem)
        }
        guard let hash = cdn.sha256 else { return .unverifiable("the CDN gives no SHA-256 digest") }
        guard Array(SHA256.hash(data: Array(bytes))) == hash else { return .failed("SHA-256 differs from the CDN's") }
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

/// The venue key's proofs: HMAC-SHA256 over newline-joined parts, as lowercase hex, checked in
/// constant time. Each use has its own first part (`marquee-hello`, `marquee-ask`,
/// `marquee-vouch`), so one proof is never another.
enum VenueProof {
    static let authHeader = "Marquee-Peer-Auth"
    static let nonceHeader = "Marquee-Nonce"

    static func mac(_ key: [UInt8], _ parts: [String]) -> String {
        let code = HMAC<SHA256>.authenticationCode(
            for: Array(parts.joined(separator: "\n").utf8), using: SymmetricKey(data: key))
        return code.map { String(format: "%02x", $0) }.joined()
    }

    static func check(_ key: [UInt8], _ parts: [String], _ proof: String) -> Bool {
        Secrets.equal(mac(key, parts), proof.lowercased())
    }

    /// 16 random bytes, hex.
    static func nonce() -> String { (0..<16).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined() }

    /// Whether `text` is a nonce as sent: 16 to 64 hex digits.
    static func isNonce(_ text: String) -> Bool {
        (16...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}
