import Foundation
import Marquee
import MarqueeOrigin
import MarqueeSignage
import TestSupport
import Testing

/// Offline content: a schedule's images and files fetched ahead from the origin (real HTTP),
/// kept by content hash, checked against announced hashes, bounded; then played with the
/// origin stopped.
@Suite struct ContentCacheTests {
    /// Images and an MP4 served by the origin's /static, with their SHA-256s.
    static func media(in dir: URL) throws -> [(name: String, sha256: String)] {
        var out: [(String, String)] = []
        for (i, colour) in ["red", "green", "blue", "yellow"].enumerated() {
            let name = "c\(i).png"
            _ = try Tools.run(
                "ffmpeg",
                [
                    "-v", "error", "-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1",
                    dir.appendingPathComponent(name).path,
                ])
            out.append((name, sha256Hex([UInt8](try Data(contentsOf: dir.appendingPathComponent(name))))))
        }
        _ = try Tools.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=2", "-c:v", "libx264", "-g", "30",
                "-pix_fmt", "yuv420p",
                "-movflags", "+faststart", dir.appendingPathComponent("ad.mp4").path,
            ])
        out.append(("ad.mp4", sha256Hex([UInt8](try Data(contentsOf: dir.appendingPathComponent("ad.mp4"))))))
        return out
    }

    /// A 30-minute schedule: a default loop of three images, a slot of the fourth 10 minutes
    /// in, the MP4 as an interrupt (60 s an hour); every item announced with its hash.
    static func schedule(base: URL, media: [(name: String, sha256: String)], start: Date, badHash: Bool = false) throws
        -> Schedule
    {
        func item(_ i: Int, _ seconds: Double) -> String {
            let sha = badHash && i == 1 ? String(repeating: "0", count: 64) : media[i].sha256
            return
                #"""
                {"id": "\#(media[i].name)", "url": "\#(base.appendingPathComponent(media[i].name).absoluteString)", \#
                "duration": \#(seconds), "sha256": "\#(sha)"}
                """#
        }
        let clock = DateFormatter()
        clock.timeZone = TimeZone(identifier: "UTC")
        clock.dateFormat = "HH:mm:ss"
        let json = """
            {"timeZone": "UTC", "default": "loop",
             "playlists": {"loop": {"repeat": "all", "items": [\(item(0, 1.5)), \(item(1, 1.5)), \(item(2, 1.5))]},
                           "slot": {"repeat": "all", "items": [\(item(3, 2))]},
                           "ads": {"items": [{"id": "ad", "url": \
            "\(base.appendingPathComponent("ad.mp4").absoluteString)", \
            "sha256": "\(media[4].sha256)", "duration": 2}]}},
             "slots": [{"id": "s", "playlist": "slot", "from": "\(clock.string(from: start.addingTimeInterval(600)))", \
            "to": "\(clock.string(from: start.addingTimeInterval(720)))"}],
             "interrupts": [{"id": "ads", "playlist": "ads", "secondsPerHour": 60}]}
            """
        return try Schedule(json: Data(json.utf8))
    }

    @Test func aSchedulesContentIsFetchedAheadCheckedAndKept() async throws {
        let dir = try Tools.tempDirectory("cache-media")
        let media = try Self.media(in: dir)
        let origin = try await LivePlaybackTests.origin(staticRoot: dir.path)
        let base = origin.baseURL.appendingPathComponent("static")
        let cacheDir = try Tools.tempDirectory("cache")
        let cache = try ContentCache(directory: cacheDir)
        let now = Date()
        // One item announced with a wrong hash: fetched, refused, not kept (and tried again later).
        let wrong = try Self.schedule(base: base, media: media, start: now, badHash: true)
        let first = await cache.prefetch(wrong, from: now, horizon: 1800)
        #expect(first.fetched == 4 && first.failed.count == 1 && first.failed[0].1.code == .media, "\(first)")
        #expect(!cache.contains(base.appendingPathComponent(media[1].name)))
        let right = try Self.schedule(base: base, media: media, start: now)
        #expect(await cache.prefetch(right, from: now, horizon: 1800).fetched == 1)
        #expect(await cache.prefetch(right, from: now, horizon: 1800).fetched == 0, "kept: nothing fetched again")
        await origin.stop()
        // The origin is gone: every image and file the 30 minutes play is there, byte-exact.
        let needs = ContentCache.needs(right, from: now, horizon: 1800)
        #expect(needs.count == 5)
        for item in needs {
            let bytes = cache.bytes(for: item.url, sha256: item.sha256)
            #expect(bytes.map(sha256Hex) == item.sha256, "\(item.id)")
        }
        // Found again by a new cache on the same directory (a reboot), one object per content.
        let reopened = try ContentCache(directory: cacheDir)
        #expect(needs.allSatisfy { reopened.contains($0.url, sha256: $0.sha256) })
        let objects = try FileManager.default.contentsOfDirectory(
            atPath: cacheDir.appendingPathComponent("objects").path)
        #expect(Set(objects) == Set(media.map(\.sha256)), "\(objects)")
    }

    @Test func theLeastRecentlyUsedUnscheduledContentIsEvicted() async throws {
        let dir = try Tools.tempDirectory("cache-evict")
        let media = try Self.media(in: dir)
        let origin = try await LivePlaybackTests.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let base = origin.baseURL.appendingPathComponent("static")
        let sizes = media.map {
            (try? FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent($0.name).path)[.size] as? Int)
                ?? 0
        }
        // Room for the MP4 and one image.
        let cache = try ContentCache(
            directory: try Tools.tempDirectory("cache-small"), maxBytes: sizes[4] + sizes[0] + 10)
        for i in [0, 1, 2] { try await cache.fetch(base.appendingPathComponent(media[i].name)) }
        _ = cache.bytes(for: base.appendingPathComponent(media[0].name))  // used: the most recent
        try await cache.fetch(base.appendingPathComponent(media[4].name))
        cache.evict(keeping: [base.appendingPathComponent(media[4].name)])
        #expect(cache.contains(base.appendingPathComponent(media[4].name)), "scheduled: kept")
        #expect(cache.contains(base.appendingPathComponent(media[0].name)), "the most recently used: kept")
        #expect(
            !cache.contains(base.appendingPathComponent(media[1].name))
                && !cache.contains(base.appendingPathComponent(media[2].name)))
        #expect(cache.totalBytes <= sizes[4] + sizes[0] + 10)
    }

    /// The schedule played by a ``SchedulePlayer`` with the origin stopped: every item of the
    /// first 12 s (the loop, the interrupt if it falls there) shows its own picture from the
    /// cache, none fails.
    @Test func aScheduleFetchedAheadPlaysWithTheOriginStopped() async throws {
        let dir = try Tools.tempDirectory("cache-offline")
        let media = try Self.media(in: dir)
        let origin = try await LivePlaybackTests.origin(staticRoot: dir.path)
        let base = origin.baseURL.appendingPathComponent("static")
        let cache = try ContentCache(directory: try Tools.tempDirectory("cache-offline-store"))
        let now = Date()
        let schedule = try Self.schedule(base: base, media: media, start: now)
        #expect(await cache.prefetch(schedule, from: now, horizon: 1800).failed.isEmpty)
        await origin.stop()
        let out = try Tools.tempDirectory("cache-offline-out")
        let journal = try ProofOfPlayJournal(url: out.appendingPathComponent("plays.jsonl"), box: "offline")
        let player = try SchedulePlayer(
            schedule: schedule,
            options: PlayerOptions(sources: [base], audioOutput: .null, videoOutput: .frames(out.path)),
            journal: journal,
            cache: cache)
        let collected = SignageLog()
        let listener = Task { for await e in player.events { collected.append(e) } }
        try await player.play()
        try await Task.sleep(for: .seconds(12))
        await player.stop()
        listener.cancel()
        let failed = collected.events.compactMap {
            if case .item(let e) = $0, case .failed(let error) = e.kind { "\(e.id): \(error)" } else { nil }
        }
        #expect(failed.isEmpty, "\(failed)")
        let frames = try FramesFile.read(out.appendingPathComponent("frames.tsv"))
        let runs = FramesFile.runs(frames).map(\.item)
        #expect(runs.count >= 6 && Set(runs).isSuperset(of: ["c0.png", "c1.png", "c2.png"]), "\(runs)")
        // Each image's picture is its own colour (the red one: red).
        let red = try #require(frames.first { $0.item == "c0.png" })
        let reference = try ReferenceDecode.frames(of: dir.appendingPathComponent("c0.png"))
        #expect(red.md5 == reference.first?.md5)
        // Proof of play names each content by the hash its bytes have.
        var hashes = Dictionary(media.map { ($0.name, $0.sha256) }, uniquingKeysWith: { a, _ in a })
        hashes["ad"] = media[4].sha256  // (the interrupt's item, if its chunk falls in these 12 s)
        let records = journal.records(after: 0)
        #expect(
            records.count >= 5 && records.allSatisfy { $0.contentHash == hashes[$0.item] },
            "\(records.map { ($0.item, $0.contentHash ?? "-") })")
    }
}

/// A schedule replaced while it plays (a refreshed document) that puts another entry in force
/// now: switched to at once (``SchedulePlayer/replaceLead`` after), not at the old entry's end.
@Suite struct ScheduleReplacementTests {
    @Test func aReplacedScheduleTakesEffectAtOnce() async throws {
        let dir = try Tools.tempDirectory("schedule-replace")
        for colour in ["red", "green"] {
            _ = try Tools.run(
                "ffmpeg",
                [
                    "-v", "error", "-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1",
                    dir.appendingPathComponent("\(colour).png").path,
                ])
        }
        func schedule(slot: Bool) throws -> Schedule {
            let clock = DateFormatter()
            clock.timeZone = TimeZone(identifier: "UTC")
            clock.dateFormat = "HH:mm:ss"
            let now = Date()
            let slots =
                slot
                ? #"""
                , "slots": [{"id": "news", "playlist": "green", "from": \#
                "\#(clock.string(from: now.addingTimeInterval(-60)))", "to": \#
                "\#(clock.string(from: now.addingTimeInterval(120)))"}]
                """#
                : ""
            return try Schedule(
                json: Data(
                    """
                    {"timeZone": "UTC", "default": "red",
                     "playlists": {"red": {"repeat": "all", "items": [{"id": "red", "url": \
                    "\(dir.appendingPathComponent("red.png").absoluteString)", "duration": 60}]},
                                   "green": {"repeat": "all", "items": [{"id": "green", "url": \
                    "\(dir.appendingPathComponent("green.png").absoluteString)", "duration": 60}]}}\(slots)}
                    """.utf8))
        }
        let out = try Tools.tempDirectory("schedule-replace-out")
        let player = try SchedulePlayer(
            schedule: try schedule(slot: false),
            options: PlayerOptions(sources: [dir], audioOutput: .null, videoOutput: .frames(out.path)))
        let collected = SignageLog()
        let listener = Task { for await e in player.events { collected.append(e) } }
        defer { listener.cancel() }
        try await player.play()
        try await Task.sleep(for: .seconds(2))
        let replaced = Date().timeIntervalSince1970
        player.replace(with: try schedule(slot: true))
        for _ in 0..<100 where player.entry?.source != .slot("news") { try await Task.sleep(for: .milliseconds(100)) }
        try await Task.sleep(for: .milliseconds(500))
        #expect(player.entry?.source == .slot("news"))
        await player.stop()
        let entries = collected.events.compactMap { if case .scheduleEntry(let e) = $0 { e.source } else { nil } }
        #expect(entries == [.defaultPlaylist, .slot("news")], "scheduleEntry events: \(entries)")
        let runs = FramesFile.runs(try FramesFile.read(out.appendingPathComponent("frames.tsv")))
        #expect(runs.map(\.item) == ["red", "green"], "\(runs.map(\.item))")
        if runs.count == 2 {
            // replaceLead (0.5 s) after the replacement when the machine is free; a suite running
            // beside it on two cores can hold the schedule's task back a few seconds. Either way
            // long before the old entry's end (the red item had 58 s left, its entry two days).
            let after = runs[1].first.wallTime - replaced
            #expect(after > 0 && after < 6, "switched \(after) s after the replacement")
            print(String(format: "schedule replaced: the new entry's first picture %.3f s after", after))
        }
    }
}

/// A schedule from a URL (``ScheduleFeed``): fetched over real HTTP, refreshed conditionally, a
/// change published, a broken document a typed failure while the last good schedule stays.
@Suite struct ScheduleFeedTests {
    @Test func aScheduleFeedFollowsItsDocument() async throws {
        let dir = try Tools.tempDirectory("schedule-feed")
        let file = dir.appendingPathComponent("schedule.json")
        func write(_ slotPlaylist: String) throws {
            try Data(
                """
                {"default": "a", "playlists": {"a": {"items": [{"url": "a.png", "duration": 5}]}, "b": {"items": \
                [{"url": "b.png", "duration": 5}]}},
                 "slots": [{"id": "s", "playlist": "\(slotPlaylist)", "from": "00:00", "to": "00:01"}]}
                """.utf8
            ).write(to: file)
        }
        try write("a")
        let origin = try await LivePlaybackTests.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let url = origin.baseURL.appendingPathComponent("static/schedule.json")
        let feed = try await ScheduleFeed(url: url, interval: 3600, security: SDKTests.loopback)
        defer { feed.stop() }
        #expect(feed.current.slots.first?.playlist == "a")
        #expect(
            feed.current.playlists["b"]?.items.first?.url == origin.baseURL.appendingPathComponent("static/b.png"),
            "relative to the feed")
        #expect(await feed.refresh() == false, "unchanged (a 304)")
        try await Task.sleep(for: .milliseconds(1100))  // (Last-Modified has a one-second grain)
        try write("b")
        #expect(await feed.refresh() == true && feed.current.slots.first?.playlist == "b")
        try await Task.sleep(for: .milliseconds(1100))
        try Data(#"{"default": "nope", "playlists": {"a": {"items": [{"url": "a.png"}]}}}"#.utf8).write(to: file)
        var failures = feed.failures.makeAsyncIterator()
        #expect(
            await feed.refresh() == false && feed.current.slots.first?.playlist == "b", "the last good schedule stays")
        let failure = await failures.next()
        #expect(
            failure?.code == .schedule && failure?.message.contains("default") == true, "\(String(describing: failure))"
        )
    }
}
