import Foundation
import MarqueeServing
import MarqueeStreaming

/// Where a box may take segments from besides the CDN (System73's PolyNet names).
///
/// - `never`: no sharing. The proxy still caches and coalesces for the players of this box.
/// - `onlyOnLAN`: peers whose address is on the box's own networks (RFC 1918, link-local, the
///   unique-local IPv6 range, loopback) are used; any other configured peer is ignored.
/// - `always`: every configured or discovered peer is used, wherever it is (a venue spread over
///   sites joined by a VPN). Marquee never reaches peers over the internet by itself: there is no
///   tracker and no NAT traversal, `always` only lifts the address check.
public enum SharingPolicy: String, Sendable, Codable, CaseIterable {
    case never, onlyOnLAN, always
}

/// What a venue proxy does. Bad values are refused by ``validated()`` with a ``VenueError``.
public struct VenueConfiguration: Sendable {
    /// Address the proxy listens on: loopback for this box's players only, `0.0.0.0` to serve
    /// peers (and players elsewhere in the venue).
    public var host: String
    /// Port (0: any free one).
    public var port: Int
    /// The upstream hosts served (`host` or `host:port`, case-insensitive; a `*.` prefix takes
    /// every subdomain). A host without a port is served on the schemes' default ports (80,
    /// 443) only. A name must resolve to public addresses: a host on a local network (a venue's
    /// own origin) is listed by its address. Any other target is refused with 403: never an
    /// open proxy.
    public var upstreams: [String] { didSet { entries = Self.parse(upstreams) } }
    /// ``upstreams`` parsed once (each request is checked against them); an entry that does
    /// not parse serves nothing (``validated()`` refuses it first).
    private var entries: [UpstreamEntry]
    /// Bytes the segment store may hold.
    public var storeBytes: Int
    public var sharing: SharingPolicy
    /// Peers given by address (`host:port` of their proxies), besides those discovered.
    public var peers: [String]
    /// This box's name among its peers (default: the host name).
    public var boxId: String
    /// Seconds a peer that served bytes that failed verification is not asked again.
    public var banSeconds: Double
    /// Seconds a segment may wait for a peer when nothing says how much buffer the player has.
    public var defaultPeerDeadline: Double
    /// Whether peers are also found with DNS-SD (Avahi; see ``VenueProxy``): this box is
    /// published and the others followed. Only when sharing.
    public var discovery: Bool = true
    /// The venue's key (read from a file or a systemd credential, never argv): peers prove they
    /// hold it in every hello, request and vouch (HMAC-SHA256), and a peer's bytes are used only
    /// when the CDN's digest or a keyed peer's vouch covers them. Nil: peers are not
    /// authenticated, and their bytes are used only under the CDN's SHA-256 digest.
    public var venueKey: [UInt8]?
    /// Peers asked at most (configured and discovered).
    static let maxPeers = 32
    /// What the proxy's server lets clients hold (connections, per address, idle seconds).
    var serverLimits = RunningServer.Limits(connections: 512, connectionsPerAddress: 64, idleSeconds: 15)

    public init(
        host: String = "127.0.0.1", port: Int = 0, upstreams: [String], storeBytes: Int = 256 << 20,
        sharing: SharingPolicy = .never,
        peers: [String] = [], boxId: String = ProcessInfo.processInfo.hostName, banSeconds: Double = 300,
        defaultPeerDeadline: Double = 1.5
    ) {
        self.host = host
        self.port = port
        self.upstreams = upstreams
        self.entries = Self.parse(upstreams)
        self.storeBytes = storeBytes
        self.sharing = sharing
        self.peers = peers
        self.boxId = boxId
        self.banSeconds = banSeconds
        self.defaultPeerDeadline = defaultPeerDeadline
    }

    /// The configuration with its upstream patterns normalised, or the first thing wrong with it.
    public func validated() throws(VenueError) -> VenueConfiguration {
        var copy = self
        guard !upstreams.isEmpty else {
            throw VenueError(
                .invalidConfiguration,
                "no upstream host: a proxy that serves none is useless, one that serves any is open")
        }
        copy.upstreams = try upstreams.map { (pattern) throws(VenueError) -> String in
            do throws(ProxyRefusal) { _ = try UpstreamEntry(parsing: pattern) } catch {
                throw VenueError(.invalidConfiguration, "upstream: \(error.reason)")
            }
            return pattern.trimmingCharacters(in: .whitespaces).lowercased()
        }
        guard (0...65535).contains(port) else {
            throw VenueError(.invalidConfiguration, "port \(port) is out of range")
        }
        guard storeBytes >= 1 << 20 else {
            throw VenueError(.invalidConfiguration, "a store of \(storeBytes) bytes holds no segment (at least 1 MiB)")
        }
        guard banSeconds >= 0, banSeconds.isFinite, defaultPeerDeadline > 0, defaultPeerDeadline.isFinite else {
            throw VenueError(.invalidConfiguration, "ban and deadline seconds must be finite and positive")
        }
        if let venueKey, venueKey.count < 16 {
            throw VenueError(.invalidConfiguration, "a venue key of \(venueKey.count) bytes is too short (at least 16)")
        }
        guard peers.count <= Self.maxPeers else {
            throw VenueError(.invalidConfiguration, "\(peers.count) peers: at most \(Self.maxPeers)")
        }
        for peer in peers where PeerAddress(peer) == nil {
            throw VenueError(.invalidConfiguration, "peer \"\(peer)\" is not host:port")
        }
        return copy
    }

    /// The allowlist entry that serves `url` (nil: none does; see ``upstreams``).
    func entry(for target: UpstreamTarget) -> UpstreamEntry? {
        entries.first { $0.matches(target) }
    }

    private static func parse(_ upstreams: [String]) -> [UpstreamEntry] {
        upstreams.compactMap { try? UpstreamEntry(parsing: $0) }
    }

    /// Whether `url` (an http or https URL) may be served: its scheme, host and port as parsed,
    /// against ``upstreams``.
    public func allows(_ url: URL) -> Bool {
        UpstreamTarget(url: url).flatMap { entry(for: $0) } != nil
    }
}

/// A peer proxy's address, `host:port`.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    public var host: String
    public var port: Int

    public init?(_ text: String) {
        let t = text.trimmingCharacters(in: .whitespaces)
        guard let colon = t.lastIndex(of: ":"), let port = Int(t[t.index(after: colon)...]), (1...65535).contains(port)
        else { return nil }
        var host = String(t[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        guard !host.isEmpty, !host.contains("/") else { return nil }
        self.host = host
        self.port = port
    }

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// Whether `host` (a literal address, parsed) is on a local network: RFC 1918, loopback,
    /// link-local, shared address space (RFC 6598), IPv6 unique-local and link-local. A name is
    /// not (it would have to be resolved first; discovery hands addresses), but `localhost`.
    public static func isLocal(_ host: String) -> Bool {
        guard let address = IPAddress(host) else { return host.lowercased() == "localhost" }
        return address.isLoopback || address.isPrivate || address.isLinkLocal
    }
}

/// Why the venue proxy refused something: `code` says what kind, `message` what exactly (the
/// shape of every error here: ``PlayerError``'s).
public struct VenueError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure: one of the constants below, compared with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable { case invalidConfiguration, notAllowed, invalidURL, notRunning }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A configuration value cannot be used.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The URL's host is not an allowed upstream.
        public static let notAllowed = Code(.notAllowed)
        /// Not an http(s) URL the proxy can serve.
        public static let invalidURL = Code(.invalidURL)
        /// The proxy is not running.
        public static let notRunning = Code(.notRunning)

        /// The code's name, as spelled above.
        public var description: String { base.rawValue }
    }

    /// What kind of failure.
    public var code: Code
    /// What exactly failed, in English.
    public var message: String

    /// An error of kind `code` with `message`.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
