public import Foundation
public import Marquee

extension Schedule {
    /// The largest JSON document read (bytes).
    package static let maxDocumentBytes = 8 << 20

    /// Reads the JSON document described in ``Schedule``; relative item URLs are resolved
    /// against `base`. Every problem is a `PlayerError.Code.schedule` error
    /// naming where it is (`slots[1].from: …`). Unknown keys are ignored.
    public init(json: Data, relativeTo base: URL? = nil) throws(PlayerError) {
        guard json.count <= Self.maxDocumentBytes else {
            throw PlayerError(.schedule, "the document is \(json.count) bytes: at most \(Self.maxDocumentBytes)")
        }
        let top: [String: Any]
        do {
            guard let object = try JSONSerialization.jsonObject(with: json) as? [String: Any] else {
                throw PlayerError(.schedule, "not a JSON object")
            }
            top = object
        } catch let error as PlayerError {
            throw error
        } catch {
            throw PlayerError(.schedule, "not JSON: \(error.localizedDescription)")
        }
        var zone = TimeZone(identifier: "UTC")!
        if let name = top["timeZone"] {
            guard let name = name as? String, let z = TimeZone(identifier: name) else {
                throw PlayerError(.schedule, "timeZone: \(name) is no IANA time zone name (e.g. \"Europe/Amsterdam\")")
            }
            zone = z
        }
        guard let lists = top["playlists"] as? [String: Any], !lists.isEmpty else {
            throw PlayerError(.schedule, "playlists: missing (an object of named playlists)")
        }
        var playlists: [String: Playlist] = [:]
        for (name, value) in lists {
            do {
                guard JSONSerialization.isValidJSONObject(value) else {
                    throw PlayerError(.playlist, "not a JSON object")
                }
                // A slot's playlist loops for the slot's length unless it says otherwise.
                playlists[name] = try Playlist(
                    json: try JSONSerialization.data(withJSONObject: value), relativeTo: base, defaultRepeat: .all)
            } catch let error as PlayerError {
                throw PlayerError(.schedule, "playlists.\(name): \(error.message)")
            } catch {
                throw PlayerError(.schedule, "playlists.\(name): \(error)")
            }
        }
        let defaultName: String
        if let name = top["default"] {
            guard let name = name as? String else { throw PlayerError(.schedule, "default: a playlist's name") }
            defaultName = name
        } else if playlists.count == 1 {
            defaultName = playlists.keys.first!
        } else {
            throw PlayerError(.schedule, "default: missing (the name of the playlist played when nothing else is)")
        }
        let slots = try Self.list(top, "slots").enumerated().map { (index, o) throws(PlayerError) in
            let at = "slots[\(index)]"
            return ScheduleSlot(
                id: try Self.string(o, "id", at) ?? String(index + 1), playlist: try Self.required(o, "playlist", at),
                when: try Self.recurrence(o, at), priority: try Self.priority(o, at))
        }
        let interrupts = try Self.list(top, "interrupts").enumerated().map { (index, o) throws(PlayerError) in
            let at = "interrupts[\(index)]"
            guard let share = try Self.number(o, "secondsPerHour", at) else {
                throw PlayerError(.schedule, "\(at).secondsPerHour: missing")
            }
            return ScheduleInterrupt(
                id: try Self.string(o, "id", at) ?? String(index + 1), playlist: try Self.required(o, "playlist", at),
                secondsPerHour: share,
                when: try Self.recurrence(o, at))
        }
        let events = try Self.list(top, "events").enumerated().map { (index, o) throws(PlayerError) in
            let at = "events[\(index)]"
            let text = try Self.required(o, "start", at)
            guard let start = Self.instant(text) else {
                throw PlayerError(.schedule, "\(at).start: \"\(text)\" is no ISO 8601 time with an offset")
            }
            guard let duration = try Self.number(o, "duration", at) else {
                throw PlayerError(.schedule, "\(at).duration: missing")
            }
            return ScheduleEvent(
                id: try Self.string(o, "id", at) ?? String(index + 1), playlist: try Self.required(o, "playlist", at),
                start: start, duration: duration)
        }
        try self.init(
            timeZone: zone, playlists: playlists, defaultPlaylist: defaultName, slots: slots, interrupts: interrupts,
            events: events)
    }

    private static func list(_ top: [String: Any], _ key: String) throws(PlayerError) -> [[String: Any]] {
        guard let value = top[key] else { return [] }
        guard let list = value as? [[String: Any]] else { throw PlayerError(.schedule, "\(key): a list of objects") }
        return list
    }

    private static func string(_ o: [String: Any], _ key: String, _ at: String) throws(PlayerError) -> String? {
        guard let value = o[key] else { return nil }
        guard let text = value as? String, !text.isEmpty else {
            throw PlayerError(.schedule, "\(at).\(key): a non-empty string")
        }
        return text
    }

    private static func required(_ o: [String: Any], _ key: String, _ at: String) throws(PlayerError) -> String {
        guard let text = try string(o, key, at) else { throw PlayerError(.schedule, "\(at).\(key): missing") }
        return text
    }

    private static func number(_ o: [String: Any], _ key: String, _ at: String) throws(PlayerError) -> Double? {
        guard let value = o[key] else { return nil }
        guard let n = value as? NSNumber, n.doubleValue.isFinite else {
            throw PlayerError(.schedule, "\(at).\(key): a number")
        }
        return n.doubleValue
    }

    private static func priority(_ o: [String: Any], _ at: String) throws(PlayerError) -> Int {
        guard let value = try number(o, "priority", at) else { return 0 }
        guard value.magnitude <= 1_000_000 else {
            throw PlayerError(.schedule, "\(at).priority: \(value) is outside ±1000000")
        }
        return Int(value.rounded(.down))
    }

    private static let dayNames = ["sun": 1, "mon": 2, "tue": 3, "wed": 4, "thu": 5, "fri": 6, "sat": 7]

    private static func recurrence(_ o: [String: Any], _ at: String) throws(PlayerError) -> ScheduleRecurrence {
        var when = ScheduleRecurrence()
        if let value = o["days"] {
            guard let names = value as? [String] else {
                throw PlayerError(.schedule, "\(at).days: a list of mon … sun")
            }
            for name in names {
                guard let day = dayNames[String(name.lowercased().prefix(3))] else {
                    throw PlayerError(.schedule, "\(at).days: \"\(name)\" is none of mon … sun")
                }
                when.weekdays.insert(day)
            }
        }
        if let text = try string(o, "from", at) {
            guard let s = timeOfDay(text), s < 86_400 else {
                throw PlayerError(.schedule, "\(at).from: \"\(text)\" is no time of day (HH:MM or HH:MM:SS)")
            }
            when.from = s
        }
        if let text = try string(o, "to", at) {
            guard let s = timeOfDay(text) else {
                throw PlayerError(.schedule, "\(at).to: \"\(text)\" is no time of day (HH:MM, HH:MM:SS or 24:00)")
            }
            when.to = s
        }
        for (key, path) in [("startDate", \ScheduleRecurrence.startDate), ("endDate", \ScheduleRecurrence.endDate)] {
            guard let text = try string(o, key, at) else { continue }
            guard let date = localDate(text) else {
                throw PlayerError(.schedule, "\(at).\(key): \"\(text)\" is no date (YYYY-MM-DD)")
            }
            when[keyPath: path] = date
        }
        if let first = when.startDate, let last = when.endDate,
            (first.year!, first.month!, first.day!) > (last.year!, last.month!, last.day!)
        {
            throw PlayerError(.schedule, "\(at): endDate is before startDate")
        }
        return when
    }

    /// `HH:MM` or `HH:MM:SS` as seconds into the day (24:00 allowed).
    static func timeOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false).map { Int($0) }
        guard parts.count == 2 || parts.count == 3, parts.allSatisfy({ $0 != nil }) else { return nil }
        let (h, m, s) = (parts[0]!, parts[1]!, parts.count == 3 ? parts[2]! : 0)
        guard (0...24).contains(h), (0..<60).contains(m), (0..<60).contains(s) else { return nil }
        let total = h * 3600 + m * 60 + s
        return total <= 86_400 ? total : nil
    }

    private static func localDate(_ text: String) -> DateComponents? {
        let parts = text.split(separator: "-").map { Int($0) }
        guard parts.count == 3, let y = parts[0], let m = parts[1], let d = parts[2], (1...12).contains(m),
            (1...31).contains(d)
        else { return nil }
        return DateComponents(year: y, month: m, day: d)
    }

    /// An ISO 8601 time with an offset (fractional seconds allowed).
    static func instant(_ text: String) -> Date? { isoInstant(text) }
}
