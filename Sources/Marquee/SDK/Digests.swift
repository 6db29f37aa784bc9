import Crypto
package import Foundation

/// SHA-256 of `bytes`, lowercase hex (a document's digest, an item's content hash).
package func sha256Hex(_ bytes: [UInt8]) -> String {
    SHA256.hash(data: bytes).map { String(format: "%02x", $0) }.joined()
}

/// An ISO 8601 instant as documents carry them, with or without fractional seconds (nil: not one).
package func isoInstant(_ text: String) -> Date? {
    let plain = ISO8601DateFormatter()
    if let date = plain.date(from: text) { return date }
    let fractional = ISO8601DateFormatter()
    fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    return fractional.date(from: text)
}
