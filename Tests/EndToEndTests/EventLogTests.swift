import Foundation
import MarqueeOrigin
import TestSupport
import Testing

/// `marquee play --events PATH`: every player event as a JSON line, timed on the wall clock that
/// `frames.tsv` uses, read back against the pictures the output presented.
@Suite struct EventLogTests {
    @Test func everyEventIsAJSONLineTimedWithThePictures() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("eventlog")
        let log = dir.appendingPathComponent("events.jsonl")
        let process = Process()
        process.executableURL = marquee
        process.arguments = [
            "play", origin.manifestURL(asset: "testpic_2s").absoluteString, "--audio", "null", "--video",
            "frames:\(dir.path)", "--duration", "4",
            "--events", log.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        // Awaited, not waited for: the origin answering it runs on this process's cooperative
        // threads, which a blocking wait (here and in a parallel test) would take from it.
        let exited = AsyncStream<Void> { done in
            process.terminationHandler = { _ in done.finish() }
        }
        try process.run()
        for await _ in exited {}
        #expect(process.terminationStatus == 0)
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n")
        let events = try lines.map { line in
            try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not a JSON object: \(line)")
        }
        let types = events.compactMap { $0["type"] as? String }
        #expect(
            types.count == events.count && events.allSatisfy { $0["wall_time"] is Double },
            "every line has a type and a wall time")
        // In the order a player goes through them.
        let order = ["sourceLoaded", "firstFrame"]
        let firsts = order.map { name in types.firstIndex(of: name) ?? Int.max }
        #expect(firsts == firsts.sorted() && firsts.last! < Int.max, "events: \(lines)")
        #expect(events.first?["type"] as? String == "stateChanged" && events.first?["state"] as? String == "loading")
        let source = try #require(events.first { $0["type"] as? String == "sourceLoaded" })
        #expect(source["streamType"] as? String == "live" && (source["url"] as? String)?.hasSuffix(".mpd") == true)
        // The first-frame event is logged when the first picture was presented (frames.tsv's
        // time is when it was due; the event is queued as it is handed to the output): the
        // join's still, when the start needed a catch-up.
        // (The line's time is when the command wrote it, after the event crossed the SDK's
        // stream and the file's writer: a loaded CI lane took 53 and 71 ms, so 100 ms here. The
        // event's own lateness, as an app hears it, is held to 30 ms by LatencyControlTests.)
        let shownFirst = try FramesFile.read(dir.appendingPathComponent("frames.tsv"), includingStill: true)
        let firstPicture = try #require(shownFirst.first).wallTime
        let firstFrame = try #require(events.first { $0["type"] as? String == "firstFrame" }?["wall_time"] as? Double)
        #expect(abs(firstFrame - firstPicture) < 0.1, "first picture at \(firstPicture), its event at \(firstFrame)")
        // Once a second while playing: the position presented then (a quarter second allows for
        // a loaded box; a wrong clock or unit is seconds off). The position is the due
        // pictures' (a join's still is shown before its time, not at it).
        // (The sound may start a few tens of ms before the first picture: an update then has
        // no picture to be compared with.)
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let firstDue = try #require(frames.first).wallTime
        let updates = events.filter {
            $0["type"] as? String == "timeUpdate" && ($0["wall_time"] as? Double ?? 0) >= firstDue
        }
        #expect(updates.count >= 2, "\(updates.count) time updates in 4 s")
        for update in updates {
            let (at, position) = (update["wall_time"] as! Double, update["position"] as! Double)
            let shown = try #require(frames.last { $0.wallTime <= at }, "no picture before \(at)")
            #expect(
                abs(shown.pts - position) < 0.25,
                "time update \(position) at \(at): the picture shown then is \(shown.pts)")
        }
    }
}

/// `marquee play --playlist FILE --repeat off --filter …`: the items the filter keeps play in
/// order, each for its duration; frames.tsv's `item` column names them; `--events` logs their
/// analytics; the process exits 0 when the playlist is over. (In the serialized live suite: a
/// real-time player beside the parallel suites would slow their own.)
extension LivePlaybackTests {
    @Test func aPlaylistFilePlaysToItsEndAndTheCommandExits() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let origin = try await LivePlaybackTests.origin(
            staticRoot: Tools.packageRoot.appendingPathComponent("assets").path)
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("playlist-cli")
        let vod = origin.baseURL.appendingPathComponent("static/generated/manifest.mpd").absoluteString
        let document = """
            {"repeat": "all", "items": [
              {"id": "first", "url": "\(vod)", "duration": 2, "tags": ["Lobby"]},
              {"id": "hidden", "url": "\(vod)", "duration": 2, "tags": ["office"]},
              {"id": "second", "url": "\(origin.manifestURL(asset: "generated").absoluteString)", "duration": 2, \
            "tags": ["lobby", "live"]}
            ]}
            """
        let file = dir.appendingPathComponent("playlist.json")
        try Data(document.utf8).write(to: file)
        let log = dir.appendingPathComponent("events.jsonl")
        let process = Process()
        process.executableURL = marquee
        process.arguments = [
            "play", "--playlist", file.path, "--filter", "(or lobby kiosk)", "--repeat", "off", "--audio", "null",
            "--video", "frames:\(dir.path)",
            "--duration", "20", "--events", log.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let exited = AsyncStream<Void> { done in process.terminationHandler = { _ in done.finish() } }
        let began = Date()
        try process.run()
        for await _ in exited {}
        #expect(process.terminationStatus == 0)
        #expect(Date().timeIntervalSince(began) < 12, "the playlist's end ended the command (not --duration)")
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        var runs: [String] = []
        for frame in frames where runs.last != frame.item { runs.append(frame.item) }
        #expect(runs == ["first", "second"], "pictures by item: \(runs)")
        let events = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        }
        let items = events.filter { $0["type"] as? String == "item" }.map { "\($0["id"] ?? "")/\($0["event"] ?? "")" }
        for expected in [
            "first/started", "first/impression", "first/finished", "second/started", "second/impression",
            "second/finished",
        ] {
            #expect(items.contains(expected), "\(expected) missing from \(items)")
        }
        #expect(items.firstIndex(of: "first/finished") ?? .max < items.firstIndex(of: "second/started") ?? -1)
        #expect(events.last?["type"] as? String == "ended" || events.contains { $0["type"] as? String == "ended" })
    }
}

/// `marquee schedule FILE --at TIME --for LENGTH`: the preview, in the schedule's time zone.
@Suite struct ScheduleCommandTests {
    @Test func thePreviewPrintsWhatPlaysWhenInTheZone() throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let dir = try Tools.tempDirectory("schedule-cli")
        let file = dir.appendingPathComponent("schedule.json")
        try Data(
            """
            {"timeZone": "America/New_York", "default": "main",
             "playlists": {"main": {"items": [{"url": "main.png", "id": "main", "duration": 60}], "repeat": "all"},
                           "ads": {"items": [{"url": "ad.mp4", "id": "ad", "duration": 30}]}},
             "interrupts": [{"id": "ads", "playlist": "ads", "secondsPerHour": 60}]}
            """.utf8
        ).write(to: file)
        let out = try Tools.run(
            marquee.path, ["schedule", file.path, "--at", "2026-12-01T12:00:00Z", "--for", "1h", "--entries"])
        let lines = out.split(separator: "\n").map(String.init)
        // Two 30-s chunks an hour, 1770 s apart, the first 885 s in (07:14:45, 07:44:45); New York
        // is UTC−5 in December.
        #expect(lines.count == 6 && lines[0].contains("America/New_York"), "\(out)")
        #expect(
            lines[1].hasPrefix("2026-12-01 07:00:00") && lines[2].hasPrefix("2026-12-01 07:14:45")
                && lines[2].contains("interrupt ads"), "\(out)")
        #expect(lines[4].hasPrefix("2026-12-01 07:44:45") && lines[4].contains("interrupt ads"), "\(out)")
        let bad = try? Tools.run(marquee.path, ["schedule", file.path, "--for", "forever"])
        #expect(bad == nil, "a bad --for is refused")
    }
}
