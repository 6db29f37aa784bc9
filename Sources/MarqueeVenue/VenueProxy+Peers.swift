import Crypto
import Foundation
import Hummingbird
import HummingbirdCore

/// What peers ask of this box: a segment, and its word on the bytes it served.
extension VenueProxy {
    /// A peer's `/v/` request: this box's word, under the venue key, on the bytes it served for
    /// `url` (from the store; a transfer under way is waited for, up to 2 s).
    func vouch(for url: URL, nonce: String) async -> Response {
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
    func serveToPeer(_ url: URL) async -> Response {
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
