import ArgumentParser
import Foundation
import Marquee
import MarqueeSignage

struct ScheduleCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "schedule", abstract: "Preview a schedule: what plays when, in the schedule's time zone.")

    @Argument(help: "The schedule: a JSON document (see the Schedule type's documentation).")
    var file: String

    @Option(help: "From when: an ISO 8601 time with an offset (2026-12-01T12:00:00+01:00), or \"now\".")
    var at: String = "now"

    @Option(name: .customLong("for"), help: "For how long: seconds, or with a unit (90s, 45m, 6h, 2d).")
    var duration: String = "24h"

    @Flag(help: "Only the entries (what is in force), not each item.")
    var entries = false

    func run() throws {
        let url = URL(fileURLWithPath: file)
        let schedule: Schedule
        do {
            schedule = try Schedule(json: try Data(contentsOf: url), relativeTo: url)
        } catch let error as PlayerError {
            throw ValidationError("\(file): \(error.message)")
        }
        guard let from = at == "now" ? Date() : ScheduleCommand.instant(at) else {
            throw ValidationError("--at \(at): an ISO 8601 time with an offset, or now")
        }
        guard let seconds = Self.seconds(duration), seconds > 0, seconds <= 366 * 86_400 else {
            throw ValidationError("--for \(duration): a length of time up to a year (90s, 45m, 6h, 2d)")
        }
        let to = from.addingTimeInterval(seconds)
        let day = DateFormatter()
        day.timeZone = schedule.timeZone
        day.dateFormat = "yyyy-MM-dd HH:mm:ss zzz"
        let time = DateFormatter()
        time.timeZone = schedule.timeZone
        time.dateFormat = "HH:mm:ss"
        print(
            """
            schedule \(file) in \(schedule.timeZone.identifier), \(day.string(from: from)) → \(day.string(from: to))
            """)
        if entries {
            for entry in schedule.timeline(from: from, to: to) {
                print(
                    """
                    \(day.string(from: entry.start))  \
                    \(Self.length(entry.end.timeIntervalSince(entry.start)))  \
                    \(entry.source) (playlist \(entry.playlist))
                    """
                )
            }
            return
        }
        var last: ScheduleEntry?
        let plays = schedule.plays(from: from, to: to)
        for play in plays {
            if play.entry != last {
                print(
                    """
                    \(day.string(from: play.entry.start))  \(play.entry.source) (playlist \(play.entry.playlist)) \
                    until \(day.string(from: play.entry.end))
                    """
                )
                last = play.entry
            }
            let what =
                play.item.map { "\($0.id)  \($0.url.absoluteString)" } ?? "(the playlist ended: its last picture stays)"
            print("  \(time.string(from: play.start))  \(Self.length(play.end.timeIntervalSince(play.start)))  \(what)")
        }
        if plays.count >= Schedule.maxPlays {
            print("(the first \(Schedule.maxPlays) plays; a shorter --for shows the rest)")
        }
    }

    static func instant(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        plain.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return plain.date(from: text)
    }

    /// `90`, `90s`, `45m`, `6h`, `2d` as seconds.
    static func seconds(_ text: String) -> Double? {
        let units: [Character: Double] = ["s": 1, "m": 60, "h": 3600, "d": 86_400]
        if let last = text.last, let unit = units[last] { return Double(text.dropLast()).map { $0 * unit } }
        return Double(text)
    }

    static func length(_ seconds: Double) -> String {
        seconds >= 3600
            ? String(format: "%5.2f h", seconds / 3600)
            : seconds >= 60 ? String(format: "%5.1f m", seconds / 60) : String(format: "%5.1f s", seconds)
    }
}
