import Foundation

/// What a venue proxy has delivered, and from where (PolyNet's datasource figures). Bytes are
/// bodies only. Read it with ``VenueProxy/statistics``, or `GET /venue/stats` as JSON.
public struct VenueStatistics: Sendable, Codable, Equatable {
    /// Body bytes received from upstream (the CDN), manifests included.
    public var bytesFromCDN: Int64 = 0
    /// Body bytes received from peers and verified (bytes that failed verification are not counted).
    public var bytesFromPeers: Int64 = 0
    /// Body bytes this proxy sent to peers.
    public var bytesServedToPeers: Int64 = 0
    /// Body bytes this proxy sent to players.
    public var bytesServedToPlayers: Int64 = 0
    /// Requests from players.
    public var requests: Int = 0
    /// Player requests answered from the store.
    public var storeHits: Int = 0
    /// Requests that joined a transfer already under way instead of fetching again.
    public var coalesced: Int = 0
    /// Requests refused: an upstream host outside the configuration, a peer outside the policy.
    public var refused: Int = 0
    /// Upstream requests that failed (no answer, reset, cut short).
    public var upstreamErrors: Int = 0
    /// Peers answering now.
    public var peersConnected: Int = 0
    /// Segments a peer was asked for but that came from the CDN after all (late, failed, refused).
    public var peerFallbacks: Int = 0
    /// Peers banned for serving bytes that failed verification.
    public var peerBans: Int = 0
    /// Peer answers that failed verification.
    public var verificationFailures: Int = 0
    /// Boxes that answered a hello without the venue key's proof (or asked for a segment
    /// without it): never asked, never answered.
    public var peersUnkeyed: Int = 0
    /// Bytes in the segment store.
    public var storedBytes: Int = 0

    /// The share of the segment bytes this box received that came from peers (0 with none).
    public var peerEfficiency: Double {
        let total = bytesFromCDN + bytesFromPeers
        return total == 0 ? 0 : Double(bytesFromPeers) / Double(total)
    }

    public init() {}

    private enum CodingKeys: String, CodingKey {
        case bytesFromCDN, bytesFromPeers, bytesServedToPeers, bytesServedToPlayers, requests, storeHits, coalesced,
            refused
        case upstreamErrors, peersConnected, peerFallbacks, peerBans, verificationFailures, peersUnkeyed, storedBytes,
            peerEfficiency
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(bytesFromCDN, forKey: .bytesFromCDN)
        try c.encode(bytesFromPeers, forKey: .bytesFromPeers)
        try c.encode(bytesServedToPeers, forKey: .bytesServedToPeers)
        try c.encode(bytesServedToPlayers, forKey: .bytesServedToPlayers)
        try c.encode(requests, forKey: .requests)
        try c.encode(storeHits, forKey: .storeHits)
        try c.encode(coalesced, forKey: .coalesced)
        try c.encode(refused, forKey: .refused)
        try c.encode(upstreamErrors, forKey: .upstreamErrors)
        try c.encode(peersConnected, forKey: .peersConnected)
        try c.encode(peerFallbacks, forKey: .peerFallbacks)
        try c.encode(peerBans, forKey: .peerBans)
        try c.encode(verificationFailures, forKey: .verificationFailures)
        try c.encode(peersUnkeyed, forKey: .peersUnkeyed)
        try c.encode(storedBytes, forKey: .storedBytes)
        try c.encode(peerEfficiency, forKey: .peerEfficiency)
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        bytesFromCDN = try c.decode(Int64.self, forKey: .bytesFromCDN)
        bytesFromPeers = try c.decode(Int64.self, forKey: .bytesFromPeers)
        bytesServedToPeers = try c.decode(Int64.self, forKey: .bytesServedToPeers)
        bytesServedToPlayers = try c.decode(Int64.self, forKey: .bytesServedToPlayers)
        requests = try c.decode(Int.self, forKey: .requests)
        storeHits = try c.decode(Int.self, forKey: .storeHits)
        coalesced = try c.decode(Int.self, forKey: .coalesced)
        refused = try c.decode(Int.self, forKey: .refused)
        upstreamErrors = try c.decode(Int.self, forKey: .upstreamErrors)
        peersConnected = try c.decode(Int.self, forKey: .peersConnected)
        peerFallbacks = try c.decode(Int.self, forKey: .peerFallbacks)
        peerBans = try c.decode(Int.self, forKey: .peerBans)
        verificationFailures = try c.decode(Int.self, forKey: .verificationFailures)
        peersUnkeyed = try c.decodeIfPresent(Int.self, forKey: .peersUnkeyed) ?? 0
        storedBytes = try c.decode(Int.self, forKey: .storedBytes)
    }
}
