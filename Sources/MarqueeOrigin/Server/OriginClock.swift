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
        let whole = Int64(seconds.rounded(.down))
        var days = whole / 86_400
        var rem = whole % 86_400
        if rem < 0 { rem += 86_400; days -= 1 }
        let weekday = Int((days % 7 + 11) % 7)   // 1970-01-01 was a Thursday
        let (y, m, d) = civil(days)
        let names = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return "\(names[weekday]), \(two(Int64(d))) \(months[m - 1]) \(y) \(two(rem / 3600)):\(two(rem % 3600 / 60)):\(two(rem % 60)) GMT"
    }

    /// Howard Hinnant's civil-from-days (public domain): days since 1970-01-01 -> (y, m, d).
    private static func civil(_ z0: Int64) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (Int(yoe + era * 400 + (m <= 2 ? 1 : 0)), Int(m), Int(d))
    }
}
