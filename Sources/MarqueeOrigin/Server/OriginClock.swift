import Foundation
import MarqueeStreaming

/// The origin's wall clock: real time plus the `timeoffset_` of the request, and the text forms
/// the time endpoints and `Date` headers use.
struct OriginClock: Sendable {
    /// Seconds the origin's clock runs ahead of real time (negative: behind).
    var offset: Double = 0

    /// Unix seconds on the origin's clock.
    func now() -> Double { Date().timeIntervalSince1970 + offset }

    /// `2026-11-22T10:00:00.123Z`: xs:dateTime with milliseconds, UTC (also ISO 8601).
    static func xsDate(_ seconds: Double) -> String {
        XSDateTime.string(Date(timeIntervalSince1970: seconds), milliseconds: true)
    }

    /// Unix milliseconds as decimal text.
    static func milliseconds(_ seconds: Double) -> String {
        String(Int64((seconds * 1000).rounded(.down)))
    }

    /// RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT` (whole seconds, truncated).
    static func httpDate(_ seconds: Double) -> String {
        HTTPDate.string(Date(timeIntervalSince1970: seconds.rounded(.down)))
    }
}
