// Follows a signage schedule through the public API of Marquee and MarqueeSignage, as a signage
// box's firmware would: prints each entry as it comes into force and each item's analytics, and
// stops after --seconds or on SIGINT (Ctrl-C).
//
//   schedule-app <schedule.json> [--seconds N] [--video SPEC]
//
// The schedule is a local JSON file (see MarqueeSignage's `Schedule`); its relative item URLs are
// resolved against it. SPEC as in PlayerOptions: frames:<dir>, headless (default) or drm[:…].

import Foundation  // URL, Data, DispatchSource
import Marquee
import MarqueeSignage

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("schedule-app: \(message)\n".utf8))
    exit(1)
}

// MARK: arguments

var arguments = CommandLine.arguments.dropFirst()
var path: String?
var seconds: Double?
var video = VideoOutput.headless
while let argument = arguments.popFirst() {
    switch argument {
    case "--seconds":
        guard let text = arguments.popFirst(), let value = Double(text), value > 0 else {
            fail("--seconds needs a number > 0")
        }
        seconds = value
    case "--video":
        guard let spec = arguments.popFirst(), let output = VideoOutput(spec: spec) else {
            fail("--video needs drm[:<card>[,<connector>]], frames:<dir> or headless")
        }
        video = output
    default:
        guard path == nil else { fail("usage: schedule-app <schedule.json> [--seconds N] [--video SPEC]") }
        path = argument
    }
}
guard let path else { fail("usage: schedule-app <schedule.json> [--seconds N] [--video SPEC]") }

// MARK: the schedule and its player

let file = URL(fileURLWithPath: path)
let schedule: Schedule
do {
    schedule = try Schedule(json: try Data(contentsOf: file), relativeTo: file)
} catch {
    fail("\(path): \(error)")
}
let player: SchedulePlayer
do {
    // The sources are the items'; the options give the outputs and the defaults.
    player = try SchedulePlayer(schedule: schedule, options: PlayerOptions(sources: [], videoOutput: video))
    try await player.play()
} catch {
    fail("\(error)")
}

// Its events, in order: the schedule's entries, the items' analytics, the player's errors.
let eventPrinter = Task {
    for await event in player.events {
        switch event {
        case .scheduleEntry(let entry): print("entry: \(entry.source) plays \(entry.playlist) until \(entry.end)")
        case .item(let item): print("item: \(item.id) \(item.kind.name)")
        case .player(.error(let error, _)): print("error: \(error)")
        case .player: continue
        case .ended: print("the playlist ended")
        }
    }
}

// MARK: stopping: after --seconds, or on SIGINT

let (stopRequests, requestStop) = AsyncStream<String>.makeStream()
signal(SIGINT, SIG_IGN)
let interrupt = DispatchSource.makeSignalSource(signal: SIGINT, queue: .global())
interrupt.setEventHandler { requestStop.yield("SIGINT") }
interrupt.resume()
if let seconds {
    Task {
        try? await Task.sleep(for: .seconds(seconds))
        requestStop.yield("\(seconds) s played")
    }
}
var reason = "the stop requests ended"
for await request in stopRequests {
    reason = request
    break
}
print("stopping: \(reason)")
await player.stop()
eventPrinter.cancel()
interrupt.cancel()
