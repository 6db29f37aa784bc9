public import Foundation
import Marquee

/// What a ``Schedule`` has in force over a stretch of time.
public struct ScheduleEntry: Sendable, Hashable, CustomStringConvertible {
    /// Why its playlist is in force.
    public enum Source: Sendable, Hashable, CustomStringConvertible {
        case defaultPlaylist
        case slot(String)
        case interrupt(String)
        case event(String)

        public var description: String {
            switch self {
            case .defaultPlaylist: "default"
            case .slot(let id): "slot \(id)"
            case .interrupt(let id): "interrupt \(id)"
            case .event(let id): "event \(id)"
            }
        }
    }

    public var source: Source
    /// The name of the playlist in force.
    public var playlist: String
    /// When it comes into force, and when the next entry does.
    public var start: Date
    public var end: Date

    public var description: String { "\(start)…\(end) \(source) (\(playlist))" }
}

extension Schedule {
    /// One interrupt's part of an hour: ``hourChunks``.
    public struct Chunk: Sendable, Hashable {
        /// The interrupt's index in ``interrupts``.
        public var interrupt: Int
        /// Seconds from the hour's start, and seconds long.
        public var offset: Double
        public var length: Double
    }

    /// How the interrupts share every hour (of Unix time: the same on every box and in every
    /// time zone). Each takes its ``ScheduleInterrupt/secondsPerHour`` in `n` chunks of equal
    /// length, `n` the whole passes of its playlist that fit (at least 1; 1 when an item's
    /// length is not known); the chunks of all of them are interleaved in proportion (smooth
    /// weighted round robin) and spread evenly: equal stretches of the rest between them, half
    /// a stretch at each end of the hour. Over a whole hour in force, each interrupt plays
    /// exactly its share.
    public var hourChunks: [Chunk] {
        guard !interrupts.isEmpty else { return [] }
        let counts = interrupts.map { interrupt -> Int in
            guard let pass = playlists[interrupt.playlist]?.passLength, pass > 0 else { return 1 }
            return min(Self.maxChunks, max(1, Int((interrupt.secondsPerHour / pass).rounded())))
        }
        let total = counts.reduce(0, +)
        var credit = [Int](repeating: 0, count: counts.count)
        var order: [Int] = []
        for _ in 0..<total {
            for i in counts.indices { credit[i] += counts[i] }
            let pick = credit.indices.max { credit[$0] < credit[$1] || (credit[$0] == credit[$1] && $0 > $1) }!
            credit[pick] -= total
            order.append(pick)
        }
        let rest = 3600 - interrupts.map(\.secondsPerHour).reduce(0, +)
        let gap = rest / Double(total)
        var at = gap / 2
        return order.map { i in
            let length = interrupts[i].secondsPerHour / Double(counts[i])
            defer { at += length + gap }
            return Chunk(interrupt: i, offset: at, length: length)
        }
    }

    /// The most chunks an interrupt takes in an hour (one every 30 s): a playlist of very short
    /// items gets longer chunks rather than thousands of switches.
    package static let maxChunks = 120

    /// What is in force at `time` (the server's clock), with when it began (looked for up to
    /// a day back) and when it ends (up to two days ahead).
    public func entry(at time: Date) -> ScheduleEntry {
        let entries = timeline(from: time.addingTimeInterval(-86_400), to: time.addingTimeInterval(2 * 86_400))
        return entries.last { $0.start <= time } ?? entries[0]
    }

    /// What is in force from `from` to `to`, in order: each entry from its start (the first
    /// from `from`) to the next one's (the last to `to`).
    public func timeline(from: Date, to: Date) -> [ScheduleEntry] {
        let (a, b) = (from.timeIntervalSince1970, max(from.timeIntervalSince1970, to.timeIntervalSince1970))
        let chunks = hourChunks
        var points = Set<Double>()
        for event in events {
            points.insert(event.start.timeIntervalSince1970)
            points.insert(event.start.timeIntervalSince1970 + event.duration)
        }
        // Each recurrence's stretches, once (nil: always in force).
        let ranges = Ranges(
            slots: slots.map { $0.when.isAlways ? nil : occurrences(of: $0.when, from: a, to: b) },
            interrupts: interrupts.map { $0.when.isAlways ? nil : occurrences(of: $0.when, from: a - 3600, to: b) })
        for case let stretches? in ranges.slots {
            points.formUnion(stretches.flatMap { [$0.lowerBound, $0.upperBound] })
        }
        if !chunks.isEmpty {
            for hour in stride(from: (a / 3600).rounded(.down) * 3600, through: b, by: 3600) {
                for chunk in chunks { points.formUnion([hour + chunk.offset, hour + chunk.offset + chunk.length]) }
            }
        }
        let starts = [a] + points.filter { $0 > a && $0 < b }.sorted()
        var out: [ScheduleEntry] = []
        for start in starts {
            let (source, playlist) = inForce(at: start, chunks: chunks, ranges: ranges)
            if let last = out.last, last.source == source, last.playlist == playlist { continue }
            if !out.isEmpty { out[out.count - 1].end = Date(timeIntervalSince1970: start) }
            out.append(
                ScheduleEntry(
                    source: source, playlist: playlist, start: Date(timeIntervalSince1970: start),
                    end: Date(timeIntervalSince1970: b)))
        }
        return out
    }

    /// The stretches the slots' and the interrupts' recurrences are in force (nil: always).
    private struct Ranges {
        var slots: [[Range<Double>]?]
        var interrupts: [[Range<Double>]?]

        static func contains(_ stretches: [Range<Double>]?, _ t: Double) -> Bool {
            stretches?.contains { $0.contains(t) } ?? true
        }
    }

    /// The source in force at Unix second `t`, by the precedence above.
    private func inForce(at t: Double, chunks: [Chunk], ranges: Ranges) -> (ScheduleEntry.Source, String) {
        let live = events.filter {
            $0.start.timeIntervalSince1970 <= t && t < $0.start.timeIntervalSince1970 + $0.duration
        }
        if let event = live.max(by: { $0.start < $1.start }) { return (.event(event.id), event.playlist) }
        let hour = (t / 3600).rounded(.down) * 3600
        if let chunk = chunks.first(where: { hour + $0.offset <= t && t < hour + $0.offset + $0.length }) {
            let interrupt = interrupts[chunk.interrupt]
            if Ranges.contains(ranges.interrupts[chunk.interrupt], hour + chunk.offset) {
                return (.interrupt(interrupt.id), interrupt.playlist)
            }
        }
        var best: ScheduleSlot?
        for (slot, stretches) in zip(slots, ranges.slots)
        where Ranges.contains(stretches, t) && (best == nil || slot.priority > best!.priority) {
            best = slot
        }
        if let best { return (.slot(best.id), best.playlist) }
        return (.defaultPlaylist, defaultPlaylist)
    }

    /// The stretches (Unix seconds) `when` is in force that meet [a, b]: one per local date it
    /// runs on, from the day before `a`'s to `b`'s.
    func occurrences(of when: ScheduleRecurrence, from a: Double, to b: Double) -> [Range<Double>] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        guard !when.isAlways else { return [] }  // (no boundaries)
        var day = calendar.startOfDay(for: Date(timeIntervalSince1970: a)).addingTimeInterval(-86_400 * 1.5)
        day = calendar.startOfDay(for: day)
        let lastDay = calendar.startOfDay(for: Date(timeIntervalSince1970: b))
        var out: [Range<Double>] = []
        while day <= lastDay {
            let date = calendar.dateComponents([.year, .month, .day, .weekday], from: day)
            defer { day = calendar.date(byAdding: .day, value: 1, to: day) ?? day.addingTimeInterval(86_400) }
            if !when.weekdays.isEmpty, let weekday = date.weekday, !when.weekdays.contains(weekday) { continue }
            if let first = when.startDate, Self.compare(date, first) < 0 { continue }
            if let last = when.endDate, Self.compare(date, last) > 0 { continue }
            guard let start = instant(date, seconds: when.from, calendar),
                let end = instant(date, seconds: when.to, calendar, nextDay: when.to <= when.from)
            else { continue }
            if end > start, end >= a, start <= b { out.append(start..<end) }
        }
        return out
    }

    /// Unix second of `seconds` into local `date` (or the day after).
    private func instant(_ date: DateComponents, seconds: Int, _ calendar: Calendar, nextDay: Bool = false) -> Double? {
        var parts = DateComponents(year: date.year, month: date.month, day: date.day)
        var seconds = seconds
        var days = nextDay ? 1 : 0
        if seconds >= 86_400 { (days, seconds) = (days + 1, seconds - 86_400) }
        parts.hour = seconds / 3600
        parts.minute = seconds % 3600 / 60
        parts.second = seconds % 60
        guard var moment = calendar.date(from: parts) else { return nil }
        if days > 0 {
            // The next local day at that time (not 24 h later: a DST change may lie between).
            guard
                let next = calendar.date(
                    byAdding: .day, value: days,
                    to: calendar.date(from: DateComponents(year: date.year, month: date.month, day: date.day))!)
            else { return nil }
            var later = calendar.dateComponents([.year, .month, .day], from: next)
            (later.hour, later.minute, later.second) = (parts.hour, parts.minute, parts.second)
            guard let m = calendar.date(from: later) else { return nil }
            moment = m
        }
        return moment.timeIntervalSince1970
    }

    private static func compare(_ a: DateComponents, _ b: DateComponents) -> Int {
        let x = (a.year ?? 0, a.month ?? 0, a.day ?? 0)
        let y = (b.year ?? 0, b.month ?? 0, b.day ?? 0)
        return x < y ? -1 : (x == y ? 0 : 1)
    }
}

extension Playlist {
    /// Seconds of one pass through the items, nil when one has no known length (a live item
    /// or a file without a duration).
    public var passLength: Double? {
        var total = 0.0
        for item in items {
            guard let t = item.playingTime else { return nil }
            total += t
        }
        return total
    }
}

/// One item's turn in a schedule's preview (``Schedule/plays(from:to:)``).
public struct ScheduledPlay: Sendable, Hashable {
    /// The entry it plays in.
    public var entry: ScheduleEntry
    /// The item, nil for the rest of an entry whose playlist ended (repeat off: its last
    /// picture stays).
    public var item: PlaylistItem?
    public var start: Date
    /// Its end: its length's, or the entry's when that comes first or its length is not known.
    public var end: Date
}

extension Schedule {
    /// The most plays ``plays(from:to:)`` lists.
    package static let maxPlays = 100_000

    /// What plays when from `from` to `to`: each entry's playlist from its first item, in its
    /// listed order (a shuffled one's order is drawn as it plays), each item for its
    /// ``PlaylistItem/playingTime``; an item of unknown length (a live stream, a file without a
    /// duration) to the entry's end. As ``SchedulePlayer`` plays it.
    public func plays(from: Date, to: Date) -> [ScheduledPlay] {
        var out: [ScheduledPlay] = []
        for entry in timeline(from: from, to: to) {
            guard let playlist = playlists[entry.playlist], !playlist.items.isEmpty else { continue }
            var at = entry.start
            var index = 0
            while at < entry.end, out.count < Self.maxPlays {
                guard index < playlist.items.count else {
                    out.append(ScheduledPlay(entry: entry, item: nil, start: at, end: entry.end))  // (repeat off: held)
                    break
                }
                let item = playlist.items[index]
                let end = item.playingTime.map { min(entry.end, at.addingTimeInterval($0)) } ?? entry.end
                out.append(ScheduledPlay(entry: entry, item: item, start: at, end: end))
                at = end
                switch playlist.repeatMode {
                case .one: break
                case .all: index = (index + 1) % playlist.items.count
                case .off: index += 1
                }
            }
        }
        return out
    }
}
