// Plays a live stream for a while through Marquee's public API, as a kiosk's firmware would:
// prints every event as it comes and the latency and buffer once a second, and stops after
// --seconds or on SIGINT (Ctrl-C).
//
//   kiosk-app <manifest-url> [--seconds N] [--audio SPEC] [--video SPEC]
//
// SPEC as in PlayerOptions: audio alsa[:<pcm>], wav:<path> or null (default); video drm[:…],
// frames:<dir> or headless (default). A box with a screen and a sound card uses
// `--audio alsa:default --video drm`.

import Foundation  // URL, DispatchSource: Marquee uses Foundation but does not re-export it
import Marquee

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("kiosk-app: \(message)\n".utf8))
    exit(1)
}

// MARK: arguments

var arguments = CommandLine.arguments.dropFirst()
var url: URL?
var seconds: Double?
var audio = AudioOutput.null
var video = VideoOutput.headless
while let argument = arguments.popFirst() {
    switch argument {
    case "--seconds":
        guard let text = arguments.popFirst(), let value = Double(text), value > 0 else {
            fail("--seconds needs a number > 0")
        }
        seconds = value
    case "--audio":
        guard let spec = arguments.popFirst(), let output = AudioOutput(spec: spec) else {
            fail("--audio needs alsa[:<pcm>], wav:<path> or null")
        }
        audio = output
    case "--video":
        guard let spec = arguments.popFirst(), let output = VideoOutput(spec: spec) else {
            fail("--video needs drm[:<card>[,<connector>]], frames:<dir> or headless")
        }
        video = output
    default:
        guard url == nil, let parsed = URL(string: argument), parsed.scheme != nil else {
            fail("usage: kiosk-app <manifest-url> [--seconds N] [--audio SPEC] [--video SPEC]")
        }
        url = parsed
    }
}
guard let url else { fail("usage: kiosk-app <manifest-url> [--seconds N] [--audio SPEC] [--video SPEC]") }

// MARK: the player

let options = PlayerOptions(sources: [url], targetLatency: 3, audioOutput: audio, videoOutput: video)
let player: Player
do {
    player = try Player(options: options)
} catch {
    fail("\(error)")
}

// Events, in order, as they come: one task reads the sequence until the player is closed.
let eventPrinter = Task {
    for await event in player.events {
        print("event: \(event)")
    }
}

do {
    try player.setVolume(0.8)  // linear gain, 0…1; applied when play() opens the output
    try await player.play()
} catch {
    await player.close()
    await eventPrinter.value
    fail("\(error)")
}

// Latency and buffer (seconds) once a second, until cancelled (the sleep throws).
let statusPrinter = Task {
    while (try? await Task.sleep(for: .seconds(1))) != nil {
        let status = player.status
        let latency = status.latency.map { String(format: "%.3f s", $0) } ?? "-"
        print("status: \(status.state) latency \(latency) buffer \(String(format: "%.3f", status.buffer)) s")
    }
}

// MARK: stopping: after --seconds, or on SIGINT

let (stopRequests, requestStop) = AsyncStream<String>.makeStream()
signal(SIGINT, SIG_IGN)  // delivered to the dispatch source below instead of ending the process
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
statusPrinter.cancel()
await statusPrinter.value
print("stopping: \(reason)")
await player.stop()  // closes the outputs
await player.close()  // finishes the event sequence
await eventPrinter.value
interrupt.cancel()
