import Crypto
import Foundation
import MarqueeStreaming

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
