import Foundation

/// What a venue proxy tells its boxes with a live HLS playlist that has no program date-times:
/// how long before it made this answer the packager published the newest segment listed, as a
/// range, and how long it held the box's request before it made the answer (its own upstream
/// fetch), and the phase its estimate is now on its own anchor with that anchor's placement
/// (``HLSLiveAnchor/placement``): `Marquee-Published-Age: <least>,<most>[,<held>[,<phase>,<placement>]]`,
/// seconds (the placement a number). The proxy learns the
/// publication from every upstream answer it receives for all its boxes (an ``HLSLiveAnchor`` of
/// its own), so the boxes behind it place it at one instant from their first answers, whenever
/// each started, instead of each learning it from its own probes within a few milliseconds.
///
/// A box takes it as the proxy's word on the answer it made, made between the box's request
/// plus the time held and the answer's arrival
/// (``HLSPublicationPhase/record(sentAt:receivedAt:newestEnd:nextDuration:published:)``): the
/// proxy is its source of the stream itself. The phase and placement let a box read the
/// proxy's answers together across its estimate's moves (each answer's bound less the phase it
/// told bounds one constant while the placement is one: ``HLSPublicationPhase/interval``).
/// Parsed, then checked: two, three or five numbers, the first two in order, each under an
/// hour, the phase alone signed, the placement a whole number of 32 bits; anything else is no age.
package struct HLSPublicationAge: Sendable, Equatable {
    /// The phase a proxy told (seconds, against the ends its anchor gave the segments) and that
    /// anchor's placement (``HLSLiveAnchor/placement``).
    package struct Told: Sendable, Equatable {
        package var phase: Double
        package var placement: UInt32

        package init(phase: Double, placement: UInt32) {
            self.phase = phase
            self.placement = placement
        }
    }

    /// Seconds: the newest segment was published at least `least` and at most `most` before
    /// the answer was made.
    package let least: Double
    package let most: Double
    /// Seconds the proxy held the request before it made the answer (0: not said).
    package let held: Double
    /// The proxy's estimate of the phase (seconds; the middle of `least`…`most` is it) against
    /// the ends its anchor gave the segments, and that anchor's placement; nil: not said.
    package let told: Told?

    /// The response header that carries it.
    package static let header = "Marquee-Published-Age"
    /// Ages over this are refused (seconds): a live playlist's newest segment is seconds old.
    package static let limit = 3600.0

    package init?(least: Double, most: Double, held: Double = 0, told: Told? = nil) {
        guard least.isFinite, most.isFinite, held.isFinite, least >= 0, least <= most, most <= Self.limit, held >= 0,
            held <= Self.limit, told.map({ $0.phase.isFinite && abs($0.phase) <= Self.limit }) ?? true
        else { return nil }
        self.least = least
        self.most = most
        self.held = held
        self.told = told
    }

    /// Parses the header's value (two, three or five numbers, commas between: decimals, the
    /// fourth signed, the fifth a whole number); nil for anything else.
    package init?(header value: String) {
        guard value.utf8.count <= 96 else { return nil }
        let parts = value.split(separator: ",", omittingEmptySubsequences: false)
        func decimal(_ part: Substring, signed: Bool = false) -> Double? {
            let digits = signed && part.first == "-" ? part.dropFirst() : part
            guard !digits.isEmpty,
                digits.utf8.allSatisfy({
                    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || $0 == UInt8(ascii: ".")
                })
            else { return nil }
            return Double(part)
        }
        guard parts.count == 2 || parts.count == 3 || parts.count == 5,
            let least = decimal(parts[0]), let most = decimal(parts[1])
        else { return nil }
        let held = parts.count >= 3 ? decimal(parts[2]) : 0
        var told: Told?
        if parts.count == 5 {
            guard let phase = decimal(parts[3], signed: true), parts[4].utf8.count <= 10,
                parts[4].utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let placement = UInt32(parts[4])
            else { return nil }
            told = Told(phase: phase, placement: placement)
        }
        guard let held else { return nil }
        self.init(least: least, most: most, held: held, told: told)
    }

    /// The header's value (microseconds).
    package var headerValue: String {
        let value = String(format: "%.6f,%.6f,%.6f", least, most, held)
        guard let told else { return value }
        return value + String(format: ",%.6f,", told.phase) + String(told.placement)
    }
}
