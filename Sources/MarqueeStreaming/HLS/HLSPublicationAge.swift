import Foundation

/// What a venue proxy tells its boxes with a live HLS playlist that has no program date-times:
/// how long before it made this answer the packager published the newest segment listed, as a
/// range (`Marquee-Published-Age: <least>,<most>`, seconds). The proxy learns it from every
/// upstream answer it receives for all its boxes (an ``HLSLiveAnchor`` of its own), so the
/// boxes behind it place the publication at one instant from their first answers, whenever
/// each started, instead of each learning it from its own probes within a few milliseconds.
///
/// A box takes it as the proxy's word on the answer it made, widened by the box's own round
/// trip (``HLSPublicationPhase/record(sentAt:receivedAt:newestEnd:nextDuration:published:)``):
/// the proxy is its source of the stream itself. Parsed, then checked: two decimals, in order,
/// under an hour; anything else is no age.
package struct HLSPublicationAge: Sendable, Equatable {
    /// Seconds: the newest segment was published at least `least` and at most `most` before
    /// the answer was made.
    package let least: Double
    package let most: Double

    /// The response header that carries it.
    package static let header = "Marquee-Published-Age"
    /// Ages over this are refused (seconds): a live playlist's newest segment is seconds old.
    package static let limit = 3600.0

    package init?(least: Double, most: Double) {
        guard least.isFinite, most.isFinite, least >= 0, least <= most, most <= Self.limit else { return nil }
        self.least = least
        self.most = most
    }

    /// Parses the header's value (two decimal numbers, a comma between); nil for anything else.
    package init?(header value: String) {
        guard value.utf8.count <= 64 else { return nil }
        let parts = value.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2,
            parts.allSatisfy({
                $0.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".") }
            }),
            let least = Double(parts[0]), let most = Double(parts[1])
        else { return nil }
        self.init(least: least, most: most)
    }

    /// The header's value (microseconds).
    package var headerValue: String { String(format: "%.6f,%.6f", least, most) }
}
