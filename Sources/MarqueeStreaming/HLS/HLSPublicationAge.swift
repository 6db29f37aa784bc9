import Foundation

/// What a venue proxy tells its boxes with a live HLS playlist that has no program date-times:
/// how long before it made this answer the packager published the newest segment listed, as a
/// range, and how long it held the box's request before it made the answer (its own upstream
/// fetch): `Marquee-Published-Age: <least>,<most>[,<held>]`, seconds. The proxy learns the
/// publication from every upstream answer it receives for all its boxes (an ``HLSLiveAnchor`` of
/// its own), so the boxes behind it place it at one instant from their first answers, whenever
/// each started, instead of each learning it from its own probes within a few milliseconds.
///
/// A box takes it as the proxy's word on the answer it made, made between the box's request
/// plus the time held and the answer's arrival
/// (``HLSPublicationPhase/record(sentAt:receivedAt:newestEnd:nextDuration:published:)``): the
/// proxy is its source of the stream itself. Parsed, then checked: two or three decimals, the
/// first two in order, each under an hour; anything else is no age.
package struct HLSPublicationAge: Sendable, Equatable {
    /// Seconds: the newest segment was published at least `least` and at most `most` before
    /// the answer was made.
    package let least: Double
    package let most: Double
    /// Seconds the proxy held the request before it made the answer (0: not said).
    package let held: Double

    /// The response header that carries it.
    package static let header = "Marquee-Published-Age"
    /// Ages over this are refused (seconds): a live playlist's newest segment is seconds old.
    package static let limit = 3600.0

    package init?(least: Double, most: Double, held: Double = 0) {
        guard least.isFinite, most.isFinite, held.isFinite, least >= 0, least <= most, most <= Self.limit, held >= 0,
            held <= Self.limit
        else { return nil }
        self.least = least
        self.most = most
        self.held = held
    }

    /// Parses the header's value (two or three decimal numbers, commas between); nil for
    /// anything else.
    package init?(header value: String) {
        guard value.utf8.count <= 64 else { return nil }
        let parts = value.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3,
            parts.allSatisfy({
                !$0.isEmpty
                    && $0.utf8.allSatisfy {
                        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".")
                    }
            })
        else { return nil }
        let numbers = parts.compactMap { Double($0) }
        guard numbers.count == parts.count else { return nil }
        self.init(least: numbers[0], most: numbers[1], held: numbers.count == 3 ? numbers[2] : 0)
    }

    /// The header's value (microseconds).
    package var headerValue: String { String(format: "%.6f,%.6f,%.6f", least, most, held) }
}
