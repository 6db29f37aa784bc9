import Foundation
import Marquee
import MarqueeSignage
import Testing

/// Schedules as a pure function of time: slots by day, time and date in a named zone (overnight,
/// across daylight-saving changes), priorities, one-shot events, interrupts with an exact share
/// of every hour.
@Suite struct ScheduleTests {
    static func playlist(_ seconds: [Double], repeat mode: String = "all") -> String {
        let items = seconds.enumerated().map {
            #"{"url": "file:///m/\#($0.offset).png", "id": "i\#($0.offset)", "duration": \#($0.element)}"#
        }
        return #"{"items": [\#(items.joined(separator: ", "))], "repeat": "\#(mode)"}"#
    }

    static func schedule(_ body: String, zone: String = "Europe/Amsterdam") throws -> Schedule {
        let json = """
            {"timeZone": "\(zone)", "default": "main",
             "playlists": {"main": \(playlist([10])), "night": \(playlist([60])), "lunch": \(playlist([20])), \
            "ads": \(playlist([15, 15])),
                           "promo": \(playlist([36])), "launch": \(playlist([5]))},
             \(body)}
            """
        return try Schedule(json: Data(json.utf8))
    }

    static func at(_ text: String) -> Date { ISO8601DateFormatter().date(from: text)! }

    /// The stretches `source` is in force between two times, as (start, end) ISO strings (UTC).
    static func spans(_ s: Schedule, _ source: ScheduleEntry.Source, from: String, to: String) -> [String] {
        let f = ISO8601DateFormatter()
        return s.timeline(from: at(from), to: at(to)).filter { $0.source == source }.map {
            "\(f.string(from: $0.start))–\(f.string(from: $0.end))"
        }
    }

    @Test func anOvernightSlotBelongsToTheDayItStarts() throws {
        let s = try Self.schedule(
            #""slots": [{"id": "night", "playlist": "night", "days": ["fri"], "from": "22:00", "to": "06:00"}]"#)
        // Friday 2026-11-27 22:00 CET (21:00Z) to Saturday 06:00 CET (05:00Z); not Saturday night.
        #expect(
            Self.spans(s, .slot("night"), from: "2026-11-26T00:00:00Z", to: "2026-11-30T00:00:00Z") == [
                "2026-11-27T21:00:00Z–2026-11-28T05:00:00Z"
            ])
        #expect(s.entry(at: Self.at("2026-11-28T04:59:59Z")).source == .slot("night"))
        #expect(s.entry(at: Self.at("2026-11-28T05:00:00Z")).source == .defaultPlaylist)
        #expect(
            s.entry(at: Self.at("2026-11-28T22:00:00Z")).source == .defaultPlaylist, "Saturday night is not Friday's")
        let e = s.entry(at: Self.at("2026-11-28T01:00:00Z"))
        #expect(
            e.start == Self.at("2026-11-27T21:00:00Z") && e.end == Self.at("2026-11-28T05:00:00Z")
                && e.playlist == "night")
    }

    @Test func slotsAcrossDaylightSavingChanges() throws {
        let s = try Self.schedule(
            """
            "slots": [{"id": "early", "playlist": "night", "from": "01:30", "to": "03:30"},
                      {"id": "work", "playlist": "lunch", "from": "09:00", "to": "17:00", "startDate": "2026-03-28", \
            "endDate": "2026-03-29"}]
            """)
        let overnight = try Self.schedule(
            #"""
            "slots": [{"id": "over", "playlist": "ads", "days": ["sat"], "from": "22:00", "to": "06:00", \#
            "startDate": "2026-10-24", "endDate": "2026-10-24"}]
            """#
        )
        // Spring forward (2026-03-29 02:00 CET → 03:00 CEST): 01:30 CET to 03:30 CEST is one hour.
        #expect(
            Self.spans(s, .slot("early"), from: "2026-03-28T12:00:00Z", to: "2026-03-29T12:00:00Z") == [
                "2026-03-29T00:30:00Z–2026-03-29T01:30:00Z"
            ])
        // 09:00–17:00 local: 08:00Z the day before the change, 07:00Z on it; eight hours each.
        #expect(
            Self.spans(s, .slot("work"), from: "2026-03-28T00:00:00Z", to: "2026-03-30T00:00:00Z")
                == ["2026-03-28T08:00:00Z–2026-03-28T16:00:00Z", "2026-03-29T07:00:00Z–2026-03-29T15:00:00Z"])
        // Fall back (2026-10-25 03:00 CEST → 02:00 CET): 01:30 CEST to 03:30 CET is three hours.
        #expect(
            Self.spans(s, .slot("early"), from: "2026-10-24T12:00:00Z", to: "2026-10-25T12:00:00Z") == [
                "2026-10-24T23:30:00Z–2026-10-25T02:30:00Z"
            ])
        // Overnight across the change: Saturday 22:00 CEST to Sunday 06:00 CET is nine hours.
        #expect(
            Self.spans(overnight, .slot("over"), from: "2026-10-24T00:00:00Z", to: "2026-10-26T00:00:00Z") == [
                "2026-10-24T20:00:00Z–2026-10-25T05:00:00Z"
            ])
    }

    @Test func theHighestPriorityAndTheLatestEventWin() throws {
        let s = try Self.schedule(
            """
            "slots": [{"id": "day", "playlist": "night", "from": "08:00", "to": "20:00"},
                      {"id": "lunch", "playlist": "lunch", "from": "12:00", "to": "13:00", "priority": 5},
                      {"id": "low", "playlist": "ads", "from": "12:30", "to": "14:00", "priority": 5}],
            "events": [{"id": "launch", "playlist": "launch", "start": "2026-12-01T12:10:00+01:00", "duration": 600},
                       {"id": "flash", "playlist": "promo", "start": "2026-12-01T12:15:00+01:00", "duration": 60}]
            """, zone: "Europe/Amsterdam")
        let f = ISO8601DateFormatter()
        let line = s.timeline(from: Self.at("2026-12-01T10:00:00Z"), to: Self.at("2026-12-01T14:00:00Z")).map {
            "\(f.string(from: $0.start)) \($0.source)"
        }
        #expect(
            line == [
                "2026-12-01T10:00:00Z slot day",
                "2026-12-01T11:00:00Z slot lunch",
                "2026-12-01T11:10:00Z event launch",
                "2026-12-01T11:15:00Z event flash",  // started later: in force over the first
                "2026-12-01T11:16:00Z event launch",
                "2026-12-01T11:20:00Z slot lunch",  // equal priority from 11:30Z: the first listed stays
                "2026-12-01T12:00:00Z slot low",
                "2026-12-01T13:00:00Z slot day",
            ], "\(line)")
    }

    /// Two interrupts of 360 s and 36 s an hour (Xibo's complaint: weights 2000 and 200 both
    /// ran ~60 plays an hour): exactly their seconds and their plays in every hour, spread.
    @Test func shareOfVoiceIsExactOverEveryHour() throws {
        let s = try Self.schedule(
            """
            "interrupts": [{"id": "ads", "playlist": "ads", "secondsPerHour": 360},
                           {"id": "promo", "playlist": "promo", "secondsPerHour": 36, "from": "08:00", "to": "20:00"}]
            """)
        let day = s.timeline(from: Self.at("2026-12-01T00:00:00Z"), to: Self.at("2026-12-02T00:00:00Z"))
        for hour in 0..<24 {
            let (a, b) = (
                Self.at("2026-12-01T00:00:00Z").addingTimeInterval(Double(hour) * 3600),
                Self.at("2026-12-01T00:00:00Z").addingTimeInterval(Double(hour + 1) * 3600)
            )
            let inHour = day.filter { $0.start >= a && $0.end <= b }
            func seconds(_ id: String) -> Double {
                inHour.filter { $0.source == .interrupt(id) }.map { $0.end.timeIntervalSince($0.start) }.reduce(0, +)
            }
            func plays(_ id: String) -> Int { inHour.filter { $0.source == .interrupt(id) }.count }
            #expect(
                abs(seconds("ads") - 360) < 1e-6 && plays("ads") == 12,
                "hour \(hour): ads \(seconds("ads")) s in \(plays("ads"))")
            // 08:00–20:00 Amsterdam (CET) is 07:00–19:00Z.
            let promo = (7..<19).contains(hour)
            #expect(
                abs(seconds("promo") - (promo ? 36 : 0)) < 1e-6 && plays("promo") == (promo ? 1 : 0),
                "hour \(hour): promo \(seconds("promo")) s")
        }
        // Spread: the ads' chunks are 30 s each (one pass of their playlist), never two in a
        // row: the rest of the hour in equal stretches between the chunks (246–270 s; a
        // promo chunk between two ads chunks makes two of them).
        let ads = day.filter { $0.source == .interrupt("ads") }
        #expect(ads.allSatisfy { abs($0.end.timeIntervalSince($0.start) - 30) < 1e-6 })
        let gaps = zip(ads.dropFirst(), ads).map { $0.start.timeIntervalSince($1.end) }
        #expect(gaps.min()! > 240 && gaps.max()! < 2 * 270 + 36 + 1, "gaps \(gaps.min()!)…\(gaps.max()!)")
        // An hour simulated picture by picture (0.1 s steps): within 1 %.
        var counted: [ScheduleEntry.Source: Double] = [:]
        let start = Self.at("2026-12-01T09:00:00Z")
        let hour = s.timeline(from: start, to: start.addingTimeInterval(3600))
        var k = 0
        for step in 0..<36_000 {
            let t = start.addingTimeInterval(Double(step) / 10)
            while hour[k].end <= t { k += 1 }
            counted[hour[k].source, default: 0] += 0.1
        }
        #expect(
            abs(counted[.interrupt("ads")]! - 360) < 3.6 && abs(counted[.interrupt("promo")]! - 36) < 0.36, "\(counted)"
        )
    }

    /// An interrupt over a playlist of 1-ms items: its hour in at most ``Schedule/maxChunks``
    /// chunks (not 360,000), still exactly its share.
    @Test func anInterruptOfTinyItemsTakesBoundedChunks() throws {
        let json = """
            {"default": "main", "playlists": {"main": {"items": [{"url": "m.png", "duration": 60}]},
                                              "tiny": {"items": [{"url": "t.png", "duration": 0.001}], \
            "repeat": "all"}},
             "interrupts": [{"id": "tiny", "playlist": "tiny", "secondsPerHour": 360}]}
            """
        let s = try Schedule(json: Data(json.utf8))
        #expect(s.hourChunks.count == Schedule.maxChunks)
        let hour = s.timeline(from: Self.at("2026-12-01T09:00:00Z"), to: Self.at("2026-12-01T10:00:00Z"))
        let share = hour.filter { $0.source == .interrupt("tiny") }.map { $0.end.timeIntervalSince($0.start) }.reduce(
            0, +)
        #expect(abs(share - 360) < 1e-6, "\(share) s")
    }

    @Test func aScheduleIsTheSameFunctionOfTimeOnEveryBox() throws {
        let body = #"""
            "slots": [{"id": "lunch", "playlist": "lunch", "from": "12:00", "to": "13:00"}], \#
            "interrupts": [{"id": "ads", "playlist": "ads", "secondsPerHour": 120}]
            """#
        let (a, b) = (try Self.schedule(body), try Self.schedule(body))
        for t in stride(from: 0.0, to: 86_400, by: 397.3) {
            let time = Self.at("2026-12-01T00:00:00Z").addingTimeInterval(t)
            #expect(a.entry(at: time) == b.entry(at: time))
            let e = a.entry(at: time)
            #expect(e.start <= time && time < e.end)
        }
    }

    @Test(arguments: [
        (#""slots": [{"playlist": "nope"}]"#, "slots[0].playlist: \"nope\" is not in playlists"),
        (#""slots": [{"playlist": "lunch", "from": "25:00"}]"#, "slots[0].from"),
        (#""slots": [{"playlist": "lunch", "days": ["someday"]}]"#, "slots[0].days"),
        (
            #""slots": [{"playlist": "lunch", "startDate": "2026-12-05", "endDate": "2026-12-01"}]"#,
            "endDate is before startDate"
        ),
        (
            #"""
            "interrupts": [{"playlist": "ads", "secondsPerHour": 3000}, {"playlist": "promo", "secondsPerHour": 1000}]
            """#,
            "more than an hour"
        ),
        (#""events": [{"playlist": "launch", "start": "tomorrow", "duration": 5}]"#, "events[0].start"),
        (#""slots": [{"playlist": "lunch", "priority": "high"}]"#, "slots[0].priority: a number"),
        (#""slots": [{"id": "x", "playlist": "lunch"}, {"id": "x", "playlist": "night"}]"#, "used twice"),
        (#""slots": [{"playlist": "lunch", "priority": 1e300}]"#, "slots[0].priority: 1e+300 is outside"),
    ])
    func aBadScheduleIsATypedErrorSayingWhere(_ body: String, _ says: String) throws {
        #expect {
            _ = try Self.schedule(body)
        } throws: { error in
            guard let e = error as? PlayerError else { return false }
            return e.code == .schedule && e.message.contains(says)
        }
        #expect(throws: PlayerError.self) { _ = try Self.schedule("", zone: "Mars/Olympus") }
    }
}

@Suite struct SchedulePreviewTests {
    /// What plays when: each entry's playlist from its first item, each item for its length,
    /// cut at the entry's end; a live item to the entry's end; a playlist with repeat off held.
    @Test func thePreviewListsEachItemInItsEntry() throws {
        let json = """
            {"timeZone": "UTC", "default": "main",
             "playlists": {"main": {"items": [{"url": "http://cdn/live.mpd", "id": "live"}]},
                           "lunch": {"items": [{"url": "menu.png", "id": "menu", "duration": 20}, {"url": "dish.mp4", \
            "id": "dish", "duration": 40}], "repeat": "all"},
                           "once": {"items": [{"url": "hello.png", "id": "hello", "duration": 10}], "repeat": "off"}},
             "slots": [{"id": "lunch", "playlist": "lunch", "from": "12:00", "to": "12:01:30"}],
             "events": [{"id": "hi", "playlist": "once", "start": "2026-12-01T12:05:00Z", "duration": 30}]}
            """
        let s = try Schedule(json: Data(json.utf8), relativeTo: URL(fileURLWithPath: "/signage/schedule.json"))
        let plays = s.plays(
            from: ScheduleTests.at("2026-12-01T11:59:00Z"), to: ScheduleTests.at("2026-12-01T12:06:00Z"))
        let f = ISO8601DateFormatter()
        let text = plays.map {
            "\(f.string(from: $0.start)) \($0.item?.id ?? "-") \(Int($0.end.timeIntervalSince($0.start)))"
        }
        #expect(
            text == [
                "2026-12-01T11:59:00Z live 60",
                "2026-12-01T12:00:00Z menu 20", "2026-12-01T12:00:20Z dish 40", "2026-12-01T12:01:00Z menu 20",
                "2026-12-01T12:01:20Z dish 10",
                "2026-12-01T12:01:30Z live 210",
                "2026-12-01T12:05:00Z hello 10", "2026-12-01T12:05:10Z - 20",
                "2026-12-01T12:05:30Z live 30",
            ], "\(text)")
        #expect(plays[1].item?.url.path == "/signage/menu.png", "relative to the schedule")
    }

    /// A schedule's playlist that names no repeat mode loops for its slot (a signage user's
    /// default): a 25 s event of one 10 s picture shows it three times, the last cut at the end.
    @Test func aSlotsPlaylistLoopsUnlessItSaysOtherwise() throws {
        let json = """
            {"timeZone": "UTC", "default": "main",
             "playlists": {"main": {"items": [{"url": "http://cdn/live.mpd", "id": "live"}]},
                           "once": {"items": [{"url": "hello.png", "id": "hello", "duration": 10}]}},
             "events": [{"id": "hi", "playlist": "once", "start": "2026-12-01T12:05:00Z", "duration": 25}]}
            """
        let s = try Schedule(json: Data(json.utf8))
        #expect(s.playlists["once"]?.repeatMode == .all)
        let plays = s.plays(
            from: ScheduleTests.at("2026-12-01T12:05:00Z"), to: ScheduleTests.at("2026-12-01T12:05:25Z"))
        let text = plays.map { "\($0.item?.id ?? "-") \(Int($0.end.timeIntervalSince($0.start)))" }
        #expect(text == ["hello 10", "hello 10", "hello 5"], "\(text)")
        // A playlist on its own still ends after its last item.
        let alone = try Playlist(json: Data(#"{"items": [{"url": "hello.png", "duration": 10}]}"#.utf8))
        #expect(alone.repeatMode == .off)
    }
}
