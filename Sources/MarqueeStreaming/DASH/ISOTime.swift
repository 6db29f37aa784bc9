import Foundation

/// ISO 8601 durations as used by DASH (`PT2S`, `PT0H0M8.000S`, `P1DT2H`).
package enum ISO8601Duration {
    /// Seconds in `text`, or `nil` when it is not a duration. Years and months count as 365 and
    /// 30 days (DASH manifests use them only for very long values).
    package static func seconds(_ text: String) -> Double? {
        var s = Substring(text.trimmingCharacters(in: .whitespaces))
        var sign = 1.0
        if s.first == "-" {
            sign = -1
            s = s.dropFirst()
        }
        guard s.first == "P" else { return nil }
        s = s.dropFirst()
        var total = 0.0
        var inTime = false
        var number = ""
        var sawField = false
        for c in s {
            switch c {
            case "T":
                guard number.isEmpty, !inTime else { return nil }
                inTime = true
            case "0"..."9", ".", ",": number.append(c == "," ? "." : c)
            default:
                guard let value = Double(number) else { return nil }
                let unit: Double
                switch (c, inTime) {
                case ("Y", false): unit = 365 * 86_400
                case ("M", false): unit = 30 * 86_400
                case ("W", false): unit = 7 * 86_400
                case ("D", false): unit = 86_400
                case ("H", true): unit = 3_600
                case ("M", true): unit = 60
                case ("S", true): unit = 1
                default: return nil
                }
                total += value * unit
                number = ""
                sawField = true
            }
        }
        guard number.isEmpty, sawField else { return nil }
        return sign * total
    }

    /// `PT…S` text for `seconds` (millisecond precision, trailing zeros dropped).
    package static func string(_ seconds: Double) -> String {
        var ms = (seconds * 1000).rounded()
        let negative = ms < 0
        ms = abs(ms)
        let whole = Int(ms / 1000)
        let frac = Int(ms.truncatingRemainder(dividingBy: 1000))
        var text = "PT\(whole)"
        if frac != 0 {
            var f = String(format: "%03d", frac)
            while f.hasSuffix("0") { f.removeLast() }
            text += ".\(f)"
        }
        return (negative ? "-" : "") + text + "S"
    }
}

/// `xs:dateTime` values (`2026-11-22T03:20:00Z`, with optional fraction and offset; no zone = UTC).
package enum XSDateTime {
    package static func date(_ text: String) -> Date? {
        let t = Array(text.trimmingCharacters(in: .whitespaces).utf8)
        var i = 0
        func digits(_ n: Int) -> Int? {
            guard i + n <= t.count else { return nil }
            var v = 0
            for k in 0..<n {
                let c = t[i + k]
                guard c >= 48 && c <= 57 else { return nil }
                v = v * 10 + Int(c - 48)
            }
            i += n
            return v
        }
        func expect(_ c: Character) -> Bool {
            guard i < t.count, t[i] == c.asciiValue! else { return false }
            i += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
            expect("T"), let hour = digits(2), expect(":"), let minute = digits(2), expect(":"),
            let second = digits(2), (1...12).contains(month), (1...31).contains(day), hour < 25, minute < 60,
            second < 61
        else { return nil }
        var fraction = 0.0
        if i < t.count, t[i] == UInt8(ascii: ".") {
            i += 1
            var scale = 0.1
            let start = i
            while i < t.count, t[i] >= 48, t[i] <= 57 {
                fraction += Double(t[i] - 48) * scale
                scale /= 10
                i += 1
            }
            guard i > start else { return nil }
        }
        var offset = 0
        if i < t.count {
            if t[i] == UInt8(ascii: "Z") {
                i += 1
            } else if t[i] == UInt8(ascii: "+") || t[i] == UInt8(ascii: "-") {
                let sign = t[i] == UInt8(ascii: "-") ? -1 : 1
                i += 1
                guard let oh = digits(2), expect(":"), let om = digits(2) else { return nil }
                offset = sign * (oh * 3600 + om * 60)
            }
        }
        guard i == t.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        let seconds = Double(days * 86_400 + hour * 3600 + minute * 60 + second - offset) + fraction
        return Date(timeIntervalSince1970: seconds)
    }

    /// `YYYY-MM-DDTHH:MM:SS[.mmm]Z` in UTC.
    package static func string(_ date: Date, milliseconds: Bool = true) -> String {
        let totalMs = Int((date.timeIntervalSince1970 * 1000).rounded())
        let whole = Int((Double(totalMs) / 1000).rounded(.down))
        let ms = totalMs - whole * 1000
        var days = whole / 86_400
        var rem = whole % 86_400
        if rem < 0 {
            rem += 86_400
            days -= 1
        }
        let (y, m, d) = civilFromDays(days)
        let base = String(format: "%04d-%02d-%02dT%02d:%02d:%02d", y, m, d, rem / 3600, rem % 3600 / 60, rem % 60)
        return milliseconds ? base + String(format: ".%03dZ", ms) : base + "Z"
    }

    // Howard Hinnant's days-from-civil algorithm (public domain).
    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    static func civilFromDays(_ z0: Int) -> (Int, Int, Int) {
        let z = z0 + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }
}

extension JSONEncoder.DateEncodingStrategy {
    /// Dates as ``XSDateTime/string(_:milliseconds:)`` writes them (`2026-11-29T13:27:58Z`): what
    /// `.iso8601` writes, without its formatter, which loads a calendar and ICU's time zones
    /// (measured: 1.3 MiB of code and data paged in at a player's stop, its peak RSS).
    package static var xsDateTime: Self {
        .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(XSDateTime.string(date, milliseconds: false))
        }
    }
}
