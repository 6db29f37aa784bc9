import Foundation
import Marquee
import MarqueeSignage
import MarqueeStreaming
import TestSupport
import Testing

/// A schedule played by two boxes (two ``SchedulePlayer``s, started a second apart, each with
/// its own outputs): the default playlist live, a slot of an image, a one-shot event of an MP4
/// clip shorter than the event (its last picture held), then live again. Each switch is read
/// from frames.tsv: the first picture of the new entry's item on each box, against the
/// scheduled instant and against the other box.
extension LivePlaybackTests {
    @Test func twoBoxesOnOneScheduleSwitchOnTheSameFrame() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let ast = Double(Int(Date().timeIntervalSince1970) - 3600)
        let live = origin.manifestURL(asset: "generated", options: ["ast_\(Int(ast))"])
        let dir = try Tools.tempDirectory("schedule-two-boxes")
        let png = dir.appendingPathComponent("slot.png")
        _ = try Tools.run(
            "ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360", "-frames:v", "1", png.path])
        let clip = dir.appendingPathComponent("clip.mp4")
        _ = try Tools.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=2", "-c:v", "libx264", "-g", "30",
                "-pix_fmt", "yuv420p",
                "-movflags", "+faststart", clip.path,
            ])
        // Whole seconds, 8 s from now: the slot 4 s, the event 3 s (the clip 2 s of it).
        let t0 = (Date().timeIntervalSince1970 + 8).rounded(.up)
        let switches = [t0, t0 + 4, t0 + 7, t0 + 10]
        let clock = DateFormatter()
        clock.timeZone = TimeZone(identifier: "UTC")
        clock.dateFormat = "HH:mm:ss"
        let iso = ISO8601DateFormatter()
        let document = """
            {"timeZone": "UTC", "default": "main",
             "playlists": {"main": {"items": [{"id": "live", "url": "\(live.absoluteString)", "targetLatency": 3}]},
                           "slot": {"items": [{"id": "img", "url": "\(png.absoluteString)", "duration": 30}]},
                           "launch": {"items": [{"id": "clip", "url": "\(clip.absoluteString)"}], "repeat": "off"}},
             "slots": [{"id": "slot", "playlist": "slot", "from": \
            "\(clock.string(from: Date(timeIntervalSince1970: t0)))",
                        "to": "\(clock.string(from: Date(timeIntervalSince1970: t0 + 4)))"}],
             "events": [{"id": "launch", "playlist": "launch", "start": \
            "\(iso.string(from: Date(timeIntervalSince1970: t0 + 7)))", "duration": 3}]}
            """
        let schedule = try Schedule(json: Data(document.utf8))
        var boxes: [SchedulePlayer] = []
        for box in ["a", "b"] {
            let player = try SchedulePlayer(
                schedule: schedule,
                options: PlayerOptions(
                    sources: [live], audioOutput: .null, videoOutput: .frames(dir.appendingPathComponent(box).path)))
            try await player.play()
            boxes.append(player)
            try await Task.sleep(for: .seconds(1))
        }
        while Date().timeIntervalSince1970 < t0 + 12.5 { try await Task.sleep(for: .milliseconds(100)) }
        for box in boxes { await box.stop() }

        var firsts: [[Double]] = []
        for box in ["a", "b"] {
            let frames = try FramesFile.read(dir.appendingPathComponent(box).appendingPathComponent("frames.tsv"))
            let runs = FramesFile.runs(frames)
            #expect(runs.map(\.item) == ["live", "img", "live", "clip", "live"], "box \(box): \(runs.map(\.item))")
            guard runs.count == 5 else { return }
            let at = runs.dropFirst().map(\.first.wallTime)
            firsts.append(at)
            // On its instant: at most a frame late (1/30 s: the stream's and the clip's frame
            // rate; live: the picture due at its target latency then), plus the cut's own work
            // (35 ms: the item loop's wake-up at the instant, the activation of what was made
            // ready, the first picture's release; a CI run's live suite: 60 ms once). Every
            // entry's first item is made ready ahead for its instant, the file → live cut (the
            // event's playlist over, its last picture held) included: 3.5–13 ms, 2–26 ms with
            // the machine loaded (it was 30–106 ms when the live item was loaded at the cut).
            for (shown, due) in zip(at, switches) {
                #expect(shown >= due - 0.005, "box \(box): an entry's first picture at \(shown - due) s from its start")
                #expect(
                    shown < due + 1.0 / 30 + 0.035,
                    "box \(box): an entry's first picture at \(shown - due) s from its start")
            }
            // The clip played whole (60 pictures), its last held to the event's end.
            #expect(frames.filter { $0.item == "clip" }.count == 60, "box \(box)")
        }
        let apart = zip(firsts[0], firsts[1]).map { abs($0 - $1) }
        // Both boxes cut on the same frame: each cut's work (above) differs by a few ms between
        // them; 10 ms is under a third of a frame at 30 fps.
        #expect(apart.allSatisfy { $0 < 0.010 }, "the boxes switched \(apart) s apart")
        print(
            String(
                format: "schedule, two boxes: switches %@ ms after their instants (box a), %@ ms apart",
                zip(firsts[0], switches).map { String(format: "%.1f", ($0 - $1) * 1000) }.joined(separator: ", "),
                apart.map { String(format: "%.1f", $0 * 1000) }.joined(separator: ", ")))
    }
}
