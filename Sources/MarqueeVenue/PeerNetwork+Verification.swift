import Crypto
import Foundation
import MarqueeStreaming
import NIOCore

/// Bytes judged against the CDN's word: whole media segments, SHA-256 digests.
extension PeerNetwork {
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
}
