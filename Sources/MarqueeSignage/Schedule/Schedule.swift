public import Foundation
public import Marquee

/// When a slot or an interrupt is in force: days of the week and a time of day in the
/// schedule's time zone, within a range of dates. Every part is optional (all days, all day,
/// no end). A time range whose end is not after its start runs overnight (22:00–06:00), and
/// belongs to the day it starts on (its weekday, its date).
///
/// Local times at a daylight-saving change: a time that does not exist (the hour skipped in
/// spring) is the same time after the change (02:30 → 03:30); one that occurs twice (autumn),
/// its first occurrence.
public struct ScheduleRecurrence: Sendable, Hashable {
    /// Weekdays, 1 = Sunday … 7 = Saturday (`Calendar`'s); empty: every day.
    public var weekdays: Set<Int>
    /// Seconds into the local day it starts (0 by default).
    public var from: Int
    /// Seconds into the local day it ends (86400, midnight, by default); not after `from`: the
    /// next day's.
    public var to: Int
    /// The first and last local date it runs on (inclusive), as year, month, day; nil: no bound.
    public var startDate: DateComponents?
    public var endDate: DateComponents?

    public init(
        weekdays: Set<Int> = [], from: Int = 0, to: Int = 86_400, startDate: DateComponents? = nil,
        endDate: DateComponents? = nil
    ) {
        self.weekdays = weekdays
        self.from = from
        self.to = to
        self.startDate = startDate
        self.endDate = endDate
    }

    /// Whether it runs all day, every day, without dates.
    var isAlways: Bool { weekdays.isEmpty && from == 0 && to == 86_400 && startDate == nil && endDate == nil }
}

/// A playlist in force at certain times (``ScheduleRecurrence``), over the default. When slots
/// overlap, the one of the highest ``priority`` is in force (of equal ones, the first listed).
public struct ScheduleSlot: Sendable, Hashable {
    public var id: String
    /// The name of its playlist in ``Schedule/playlists``.
    public var playlist: String
    public var when: ScheduleRecurrence
    public var priority: Int

    public init(id: String, playlist: String, when: ScheduleRecurrence, priority: Int = 0) {
        self.id = id
        self.playlist = playlist
        self.when = when
        self.priority = priority
    }
}

/// A playlist that takes ``secondsPerHour`` of every hour (its share of voice) from whatever
/// else is in force (the default or a slot; never an event), while ``when`` allows. Its time
/// is cut into ``Schedule/hourChunks`` spread evenly over the hour, each about one pass of its
/// playlist (at most `maxChunks`).
public struct ScheduleInterrupt: Sendable, Hashable {
    public var id: String
    public var playlist: String
    /// Seconds of each hour (0 < s ≤ 3600; all interrupts together at most 3600).
    public var secondsPerHour: Double
    public var when: ScheduleRecurrence

    public init(id: String, playlist: String, secondsPerHour: Double, when: ScheduleRecurrence = ScheduleRecurrence()) {
        self.id = id
        self.playlist = playlist
        self.secondsPerHour = secondsPerHour
        self.when = when
    }
}

/// A playlist in force once, from ``start`` for ``duration`` seconds, over everything else.
/// When events overlap, the one that started last is in force.
public struct ScheduleEvent: Sendable, Hashable {
    public var id: String
    public var playlist: String
    public var start: Date
    public var duration: Double

    public init(id: String, playlist: String, start: Date, duration: Double) {
        self.id = id
        self.playlist = playlist
        self.start = start
        self.duration = duration
    }
}

/// What a signage box plays by the clock: a pure function of time (``entry(at:)``,
/// ``timeline(from:to:)``), so boxes that share a schedule and a clock (the server's) switch
/// together.
///
/// Precedence: an event (one-shot) over everything; else an interrupt's share of the hour;
/// else the slot of the highest priority in force; else the default playlist.
///
/// Read from JSON with ``init(json:relativeTo:)``:
///
/// ```json
/// {
///   "timeZone": "Europe/Amsterdam",
///   "default": "main",
///   "playlists": {
///     "main":  {"items": [{"url": "https://cdn.example/live/main.mpd", "id": "live"}]},
///     "lunch": {"items": [{"url": "menu.png", "duration": 20}, {"url": "dish.mp4"}], "repeat": "all"},
///     "ads":   {"items": [{"url": "ad1.mp4", "duration": 15}, {"url": "ad2.mp4", "duration": 15}]},
///     "night": {"items": [{"url": "closed.png", "duration": 60}], "repeat": "all"}
///   },
///   "slots": [
///     {"id": "lunch", "playlist": "lunch", "days": ["mon", "tue", "wed", "thu", "fri"],
///      "from": "11:30", "to": "14:00", "priority": 1},
///     {"id": "night", "playlist": "night", "from": "22:00", "to": "06:00", "startDate": "2026-12-01"}
///   ],
///   "interrupts": [{"id": "ads", "playlist": "ads", "secondsPerHour": 360, "from": "08:00", "to": "20:00"}],
///   "events": [{"id": "launch", "playlist": "main", "start": "2026-12-03T18:00:00+01:00", "duration": 600}]
/// }
/// ```
///
/// `timeZone`: an IANA name (default UTC). `days`: `mon` … `sun`. `from`/`to`: `HH:MM` or
/// `HH:MM:SS` (`to` may be `24:00`). `startDate`/`endDate`: `YYYY-MM-DD`, inclusive. `start`:
/// ISO 8601 with an offset or `Z`. Playlists are ``Playlist/init(json:relativeTo:defaultRepeat:)``'s
/// documents; item URLs are resolved against the schedule's. Every problem is a
/// `PlayerError.Code.schedule` error naming where it is.
public struct Schedule: Sendable, Equatable {
    public var timeZone: TimeZone
    /// The playlists, by name.
    public var playlists: [String: Playlist]
    /// The playlist in force when nothing else is.
    public var defaultPlaylist: String
    public var slots: [ScheduleSlot]
    public var interrupts: [ScheduleInterrupt]
    public var events: [ScheduleEvent]

    /// A schedule; every playlist named must be in `playlists`, ids unique within their kind,
    /// shares of voice within an hour (else `PlayerError.Code.schedule`).
    public init(
        timeZone: TimeZone = TimeZone(identifier: "UTC")!, playlists: [String: Playlist], defaultPlaylist: String,
        slots: [ScheduleSlot] = [],
        interrupts: [ScheduleInterrupt] = [], events: [ScheduleEvent] = []
    ) throws(PlayerError) {
        func check(_ name: String, _ at: String) throws(PlayerError) {
            guard playlists[name] != nil else {
                throw PlayerError(.schedule, "\(at).playlist: \"\(name)\" is not in playlists")
            }
        }
        try check(defaultPlaylist, "default")
        for (kind, ids) in [
            ("slots", slots.map(\.id)), ("interrupts", interrupts.map(\.id)), ("events", events.map(\.id)),
        ] {
            var seen = Set<String>()
            for (index, id) in ids.enumerated() where !seen.insert(id).inserted {
                throw PlayerError(.schedule, "\(kind)[\(index)].id: \"\(id)\" is used twice")
            }
        }
        for (index, slot) in slots.enumerated() { try check(slot.playlist, "slots[\(index)]") }
        for (index, interrupt) in interrupts.enumerated() {
            try check(interrupt.playlist, "interrupts[\(index)]")
            guard interrupt.secondsPerHour > 0, interrupt.secondsPerHour <= 3600 else {
                throw PlayerError(
                    .schedule, "interrupts[\(index)].secondsPerHour: \(interrupt.secondsPerHour) is outside 0…3600")
            }
        }
        let share = interrupts.map(\.secondsPerHour).reduce(0, +)
        guard share <= 3600 else {
            throw PlayerError(.schedule, "interrupts: \(share) seconds per hour in all, more than an hour")
        }
        for (index, event) in events.enumerated() {
            try check(event.playlist, "events[\(index)]")
            guard event.duration > 0, event.duration.isFinite else {
                throw PlayerError(.schedule, "events[\(index)].duration: \(event.duration) s must be > 0")
            }
        }
        self.timeZone = timeZone
        self.playlists = playlists
        self.defaultPlaylist = defaultPlaylist
        self.slots = slots
        self.interrupts = interrupts
        self.events = events
    }
}
