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
    let state = Locked(State())

    struct Peer {
        var address: PeerAddress
        var box: String?
        var lastAnswer: Double?
        var bannedUntil: Double?
        var discovered: Bool
        /// It answered a hello without the venue key's proof.
        var unkeyed = false
    }

    /// Signalled when discovery or a peer's answer changes what ``settle()`` waits for. Several
    /// segments may settle at once: each waits on its own turn of the loop (a wake may be another's).
    let changed = Wakeup()

    struct State {
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
    func discovering(_ on: Bool) {
        state.withLock { $0.discovering = on }
        changed.signal()
    }

    /// Right after the start, until discovery has settled and every peer known then answered
    /// once, or ``settling`` passed: boxes of a
    /// venue start together (after a power cut), and without this every box would fetch the
    /// first segments from the CDN itself, all at once.
    func settle() async {
        while true {
            let until = state.withLock { s -> Double? in
                guard let started = s.startedAt, Monotonic.now() - started < Self.settling else { return nil }
                let waiting =
                    s.discovering || s.peers.values.contains { $0.box == nil && accepts(remote: $0.address.host) }
                return waiting ? started + Self.settling : nil
            }
            guard let until else { return }
            // Woken by each discovery change and hello answer (``changed``), else at the end.
            await changed.wait(until: until)
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
        changed.signal()
    }

    /// Boxes that answered a hello without the venue key's proof.
    var unkeyedCount: Int { state.withLock { $0.unkeyed } }

    /// Forgets a discovered peer (its service went away); a configured one stays.
    func remove(discovered address: PeerAddress) {
        state.withLock { s in
            if s.peers[address]?.discovered == true { s.peers[address] = nil }
        }
        changed.signal()
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
        changed.signal()  // an answer: ``settle()`` looks again
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
}
