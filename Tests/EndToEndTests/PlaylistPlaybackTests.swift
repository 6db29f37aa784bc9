import Foundation
import Marquee
import MarqueeSignage
import MarqueeStreaming
import TestSupport
import Testing

/// A playlist played end to end (``PlaylistPlayer``): a live item capped at 5 s, the ffmpeg-made
/// on-demand DASH presentation the origin's assets come from (served as plain files, capped at
/// 6 s), an item whose manifest is missing (404), a PNG shown for 2 s, an MP4 file (2 s, with
/// sound, from 1 s in), repeat all. Read back from frames.tsv (its `item` column) and the item events.
extension LivePlaybackTests {
    @Test func aPlaylistPlaysItsItemsInOrderSkipsAFailingOneAndWraps() async throws {
        let origin = try await Self.origin(staticRoot: Tools.packageRoot.appendingPathComponent("assets").path)
        defer { Task { await origin.stop() } }
        let vod = origin.baseURL.appendingPathComponent("static/generated/manifest.mpd")
        let dir = try Tools.tempDirectory("playlist")
        let png = dir.appendingPathComponent("still.png")
        _ = try Tools.run(
            "ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=1280x720", "-frames:v", "1", png.path])
        let stillMD5 = try ReferenceDecode.frames(of: png).map(\.md5)
        let clip = dir.appendingPathComponent("clip.mp4")
        _ = try Tools.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30:d=2", "-f", "lavfi", "-i",
                "sine=frequency=440:d=2",
                "-c:v", "libx264", "-g", "30", "-pix_fmt", "yuv420p", "-c:a", "aac", "-movflags", "+faststart",
                clip.path,
            ])
        let clipMD5 = try ReferenceDecode.frames(of: clip).map(\.md5)
        let document = """
            {"repeat": "all", "items": [
              {"id": "live", "url": "\(origin.manifestURL(asset: "generated").absoluteString)", "duration": 5},
              {"id": "vod", "url": "\(vod.absoluteString)", "duration": 6, "tags": ["film"]},
              {"id": "gone", "url": "\(origin.baseURL.appendingPathComponent("static/missing.mpd").absoluteString)"},
              {"id": "still", "url": "\(png.absoluteString)", "duration": 2},
              {"id": "clip", "url": "\(clip.absoluteString)", "start": 1}
            ]}
            """
        let playlist = try Playlist(json: Data(document.utf8))
        let options = PlayerOptions(sources: [vod], audioOutput: .null, videoOutput: .frames(dir.path))
        let player = try PlaylistPlayer(playlist: playlist, options: options)
        let collected = SignageLog()
        let pauseRefused = Locked<PlayerError?>(nil)
        let listener = Task {
            for await e in player.events {
                collected.append(e)
                // An image is not paused: a typed error, and it goes on.
                if case .item(let i) = e, i.id == "still", i.kind == .started, pauseRefused.withLock({ $0 == nil }) {
                    do throws(PlayerError) { try player.pause() } catch { pauseRefused.withLock { $0 = error } }
                }
            }
        }
        try await player.play()
        try await Task.sleep(for: .seconds(20))
        await player.stop()
        listener.cancel()
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let items = collected.events.compactMap { if case .item(let e) = $0 { e } else { nil } }

        // In order, the failing item skipped with its error, then round again.
        let runs = FramesFile.runs(frames)
        #expect(
            runs.map(\.item).prefix(5) == ["live", "vod", "still", "clip", "live"],
            "pictures by item: \(runs.map(\.item))")
        let starts = items.filter { $0.kind == .started }.map(\.id)
        #expect(starts.prefix(5) == ["live", "vod", "still", "clip", "live"], "started: \(starts)")
        let failure = items.first { if case .failed = $0.kind { true } else { false } }
        #expect(failure?.id == "gone" && failure?.index == 2, "\(String(describing: failure))")
        if case .failed(let error) = failure?.kind {
            #expect(error.code == .manifest || error.code == .network, "\(error)")
        }
        #expect(items.filter { $0.kind == .finished }.map(\.id).prefix(4) == ["live", "vod", "still", "clip"])
        // The file, from its start offset (1 s: picture #30; the one after if the decode up to
        // it took longer than a frame): every picture of it from there, in order, its own.
        let clipFrames = frames.filter { $0.item == "clip" }
        let from = clipFrames.first.flatMap { clipMD5.firstIndex(of: $0.md5) }
        let clipOrder = clipFrames.map { f in "\(clipMD5.firstIndex(of: f.md5) ?? -1)@\(f.pts)" }.joined(separator: " ")
        #expect(
            from.map { (30...31).contains($0) && clipFrames.map(\.md5) == Array(clipMD5[$0...]) } == true,
            "\(clipFrames.count) of the file's \(clipMD5.count) pictures, from #\(from ?? -1): \(clipOrder)")
        // The image: one picture, its pixels, held for its 2 s (the next item's first picture
        // comes after), without a buffering band (a display would show it; frames: records
        // each picture once).
        let still = frames.filter { $0.item == "still" }
        #expect(still.map(\.md5) == stillMD5, "the still's pictures \(still.map(\.md5)), the PNG's \(stillMD5)")
        #expect(
            pauseRefused.withLock { $0?.code } == .state,
            "pause during the still: \(String(describing: pauseRefused.withLock { $0 }))")
        #expect(!collected.events.contains(.ended))

        // Each item plays for its duration from its first picture (within two frames).
        for run in runs.dropLast() where run.item == "live" || run.item == "vod" {
            let length = run.last.wallTime - run.first.wallTime
            let cap = run.item == "live" ? 5.0 : 6.0
            #expect(abs(length - cap) < 2.0 / 30 + 1.0 / 30, "\(run.item): pictures for \(length) s")
        }

        // The on-demand item's quartiles (its first turn): each when the picture at its media
        // time was presented.
        let vodRun = try #require(runs.first { $0.item == "vod" })
        let vodFrames = frames.filter { $0.item == "vod" && $0.wallTime <= vodRun.last.wallTime }
        let quartiles = Array(
            items.filter { $0.id == "vod" && { if case .quartile = $0.kind { true } else { false } }($0) }.prefix(4))
        #expect(quartiles.map(\.kind) == [.quartile(25), .quartile(50), .quartile(75), .quartile(100)])
        var worst = 0.0
        for q in quartiles {
            let time = try #require(q.mediaTime)
            let frame = try #require(vodFrames.last { $0.pts <= time + 0.001 })
            worst = max(worst, abs(q.serverTime - frame.wallTime))
        }
        #expect(worst < 1.0 / 30, "quartile events off their pictures by up to \(worst * 1000) ms")

        // Between items the last picture stays until the next item's first (no black frame on
        // a display), which follows within 1.5 frame intervals (the last picture's own 33 ms
        // included): each next item was made ready and decoded ahead while the one before
        // played (a stream's first picture held on staged tracks, a file's bytes read), and the
        // failing one was found out then and skipped at once (it cost 0.4–0.6 s at the cut).
        let gaps = zip(runs, runs.dropFirst()).map {
            $1.first.wallTime - $0.last.wallTime - ($0.item == "still" ? 2 : 0)
        }
        #expect(gaps.allSatisfy { $0 > 0 }, "an item cut short: \(gaps)")
        #expect(gaps.allSatisfy { $0 < 1.5 / 30 }, "gaps between items: \(gaps)")
        // No picture presented twice (a held picture shown again at the cut would be).
        let repeated = zip(frames, frames.dropFirst()).filter { $0.md5 == $1.md5 && $0.pts == $1.pts }
        #expect(repeated.isEmpty, "pictures presented twice: \(repeated.map { "\($0.0.item) \($0.0.pts)" })")
        print(
            String(
                format: "playlist: %d pictures, items %@, quartiles off by up to %.1f ms, gaps between items %@",
                frames.count,
                runs.map(\.item).joined(separator: ","), worst * 1000,
                gaps.map { String(format: "%.3f s", $0) }.joined(separator: ", ")))
    }
}

/// A content feed refreshed while its first item plays, the new list without that item: the
/// item plays to its end (its full duration, not cut), then the new list goes on.
extension LivePlaybackTests {
    @Test func aFeedRefreshThatDropsThePlayingItemLetsItFinish() async throws {
        let dir = try Tools.tempDirectory("feed-play")
        try FileManager.default.createSymbolicLink(
            at: dir.appendingPathComponent("generated"),
            withDestinationURL: Tools.packageRoot.appendingPathComponent("assets/generated"))
        _ = try Tools.run(
            "ffmpeg",
            [
                "-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360", "-frames:v", "1",
                dir.appendingPathComponent("menu.png").path,
            ])
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let feedFile = dir.appendingPathComponent("lobby.json")
        try Data(
            #"""
            {"repeat": "all", "items": [{"id": "a", "url": "generated/manifest.mpd", "duration": 3}, \#
            {"id": "b", "url": "generated/manifest.mpd", "duration": 2}]}
            """#
            .utf8
        )
        .write(to: feedFile)
        let feed = try await ContentFeed(
            url: origin.baseURL.appendingPathComponent("static/lobby.json"), interval: 3600, security: SDKTests.loopback
        )
        defer { feed.stop() }
        let frames = dir.appendingPathComponent("out")
        let player = try PlaylistPlayer(
            playlist: feed.current,
            options: PlayerOptions(
                sources: [feed.current.items[0].url], audioOutput: .null, videoOutput: .frames(frames.path)))
        let collected = SignageLog()
        let listener = Task { for await e in player.events { collected.append(e) } }
        try await player.play()
        try await Task.sleep(for: .seconds(1.5))
        try Data(
            #"""
            {"repeat": "all", "items": [{"id": "b", "url": "generated/manifest.mpd", "duration": 2}, \#
            {"id": "menu", "url": "menu.png", "duration": 1}]}
            """#
            .utf8
        )
        .write(to: feedFile)
        #expect(await feed.refresh())
        player.replace(with: feed.current)
        try await Task.sleep(for: .seconds(6.5))
        await player.stop()
        listener.cancel()
        let rows = try FramesFile.read(frames.appendingPathComponent("frames.tsv"))
        let runs = FramesFile.runs(rows).map { (item: $0.item, first: $0.first.wallTime, last: $0.last.wallTime) }
        let log = collected.timed.compactMap {
            if case .item(let e) = $0.event {
                String(format: "%@/%@ %.3f", e.id, e.kind.name, $0.time.truncatingRemainder(dividingBy: 100))
            } else {
                nil
            }
        }
        #expect(
            runs.map(\.item).prefix(3) == ["a", "b", "menu"], "pictures by item: \(runs.map(\.item)); events \(log)")
        let a = try #require(runs.first)
        #expect(abs(a.last - a.first - 3) < 0.1, "the dropped item played \(a.last - a.first) s of its 3")
        let finished = collected.events.compactMap {
            if case .item(let e) = $0, e.kind == .finished { e.id } else { nil }
        }
        #expect(finished.prefix(2) == ["a", "b"], "finished: \(finished)")
        let skipped = collected.events.contains {
            if case .item(let e) = $0 { e.kind == .skipped && e.id == "a" } else { false }
        }
        #expect(!skipped, "the playing item was not cut by the refresh")
    }
}

/// A playlist that starts with an image (no stream has opened the outputs or measured a clock),
/// then a live item decoded ahead while the image shows (on staged core tracks, its picture due
/// at its target latency when the image's slot ends held), then an image again; repeat off.
extension LivePlaybackTests {
    @Test func aPlaylistStartingWithAnImageEntersLiveAtItsTargetAndEnds() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let ast = Double(Int(Date().timeIntervalSince1970) - 3600)
        let live = origin.manifestURL(asset: "generated", options: ["ast_\(Int(ast))"])
        let dir = try Tools.tempDirectory("playlist-image-first")
        let png = dir.appendingPathComponent("still.png")
        _ = try Tools.run(
            "ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=640x360", "-frames:v", "1", png.path])
        let document = """
            {"items": [
              {"id": "a", "url": "\(png.absoluteString)", "duration": 3},
              {"id": "live", "url": "\(live.absoluteString)", "duration": 3},
              {"id": "b", "url": "\(png.absoluteString)", "duration": 1}
            ]}
            """
        let player = try PlaylistPlayer(
            playlist: try Playlist(json: Data(document.utf8)),
            options: PlayerOptions(
                sources: [live], targetLatency: 3, audioOutput: .null, videoOutput: .frames(dir.path)))
        let collected = SignageLog()
        let listener = Task { for await e in player.events { collected.append(e) } }
        let began = Date().timeIntervalSince1970
        try await player.play()
        for _ in 0..<120 where !collected.events.contains(.ended) { try await Task.sleep(for: .milliseconds(100)) }
        await player.stop()
        listener.cancel()
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let runs = FramesFile.runs(frames)
        #expect(runs.map(\.item) == ["a", "live", "b"], "pictures by item: \(runs.map(\.item))")
        #expect(collected.events.contains(.ended), "repeat off: the playlist ends after its last item")
        try #require(runs.count == 3)
        // The image's picture is stamped on the wall clock (no stream measured one yet).
        #expect(
            abs(runs[0].first.wallTime - began) < 2, "the image shown at \(runs[0].first.wallTime), play() at \(began)")
        // Live, entered at its target latency: its first picture is the one due when it was
        // decoded (at most a frame late: the decode from the segment's keyframe ends between
        // two), the rest on time.
        let liveFrames = frames.filter { $0.item == "live" }
        let latencies = liveFrames.map { $0.wallTime - ast - $0.pts }
        #expect(
            latencies[0] > 3 - 0.005 && latencies[0] < 3 + 1.0 / 30 + 0.005, "live entered at latency \(latencies[0])")
        let settled = liveFrames.filter { $0.wallTime > liveFrames[0].wallTime + 0.1 }.map {
            $0.wallTime - ast - $0.pts
        }
        #expect(
            settled.count > 60 && settled.allSatisfy { abs($0 - 3) < 0.020 },
            "live latency \(settled.min() ?? .nan)…\(settled.max() ?? .nan)")
        // On the monotonic clock (the image's pictures are stamped on this machine's wall clock,
        // the live item's on its server's: a CI run's −48 µs); the image's slot ends 3 s after
        // its picture was due.
        let gaps = [
            runs[1].first.monoTime - (runs[0].first.dueMono ?? .nan) - 3,
            runs[2].first.monoTime - runs[1].last.monoTime,
        ]
        #expect(gaps.allSatisfy { $0 > 0 && $0 < 1.5 / 30 }, "gaps between items: \(gaps)")
        print(
            String(
                format: "image first: live entered at latency %.4f s; gaps image→live %.3f s, live→image %.3f s",
                latencies[0], gaps[0], gaps[1]))
    }
}
