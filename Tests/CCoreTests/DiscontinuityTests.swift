import CCore
import Foundation
import Testing

/// A new stream in a track's input (an encoder restart, a new Period): what was queued before
/// plays to its end, the new stream follows at its own offset.
@Suite struct DiscontinuityTests {
    /// V300 (4 s) and a 4 s tone, each pushed twice with a discontinuity between: the second
    /// copies' timestamps start again at 0 and are placed 4 s later (video: the offset given with
    /// the mark; audio: given after the mark and its init segment, as a measured offset is). Every
    /// picture of both copies is shown, in order, on time, and the sound has no gap at the joint.
    @Test func aNewStreamFollowsWithoutLosingWhatWasQueued() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let video = try Fixtures.segments("V300", [1, 2])
        let stream = dir.appendingPathComponent("v.mp4")
        try video.write(to: stream)
        async let refMD5 = Fixtures.frameMD5s(stream)
        let tone = try Data(
            contentsOf: try await Fixtures.makeAudio(
                "sine=frequency=440:sample_rate=48000:duration=4", seconds: 4, in: dir, name: "tone.mp4"))

        let player = try TestPlayer(audio: "wav:\(dir.path)/out.wav", video: "frames:\(dir.path)/out")
        let v = player.addTrack(MQ_TRACK_VIDEO)
        let a = player.addTrack(MQ_TRACK_AUDIO)
        player.push(v, video)
        player.push(a, tone)
        #expect(mq_player_end_segment(player.p, v) == 0)
        #expect(mq_player_push_discontinuity(player.p, v, 4.0) == 0)
        #expect(mq_player_push_discontinuity(player.p, a, .nan) == 0)
        player.push(v, video)
        player.push(a, tone)
        #expect(mq_player_set_track_offset(player.p, a, 4.0) == 0)  // for the new stream, not the old
        mq_player_end_track(player.p, v)
        mq_player_end_track(player.p, a)
        let offset = wallOffset()
        mq_player_set_wall_offset(player.p, offset)
        let firstPTS = 0.066667
        let anchor = mq_clock_now() + 0.2
        mq_player_set_timeline(player.p, anchor, firstPTS, 1)
        #expect(mq_player_start(player.p) == 0)
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 15) != nil)
        #expect(!player.events.contains { $0.type == Int32(MQ_EVENT_ERROR.rawValue) }, "\(player.events.map(\.text))")
        player.destroy()

        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        let md5 = try await refMD5
        #expect(rows.count == 2 * md5.count)
        #expect(rows.map(\.md5) == md5 + md5)
        var worst = 0.0
        var longest = 0.0
        for (i, r) in rows.enumerated() {
            let presentation = Double(r.pts)! + (i >= md5.count ? 4.0 : 0)
            worst = max(worst, abs(r.wall - offset - (anchor + presentation - firstPTS)))
            if i > 0 { longest = max(longest, r.wall - rows[i - 1].wall) }
        }
        #expect(worst < 1.0 / 30, "worst presentation error \(worst * 1000) ms")
        #expect(longest < 2.0 / 30, "longest gap between pictures \(longest * 1000) ms")

        let pcm = try PCM.wav(dir.appendingPathComponent("out.wav")).pcm
        let span = try #require(pcm.soundSpan())
        let seconds = Double(span.count) / pcm.rate
        #expect(abs(seconds - 8) < 0.1, "sound for \(seconds) s")
        // The tone's last AAC frame is half padding (4 s = 187.5 frames): 512 quiet samples at
        // its end, so the first stream's sound lasts 4.0107 s. The second one's begins at its
        // time, 4 s, or right after those samples (the audio writer, once locked, writes on
        // through errors under 20 ms rather than click): not later, with no gap. (When the ring
        // ran dry for a moment there, the sound after it fades in over 5 ms: its first samples
        // are quiet too, up to 64 of them at this tone's level.)
        var run = 0
        var joint = 0
        var quiet = 0
        for i in span where abs(Int(pcm.samples[i])) < 100 {
            run = i > 0 && abs(Int(pcm.samples[i - 1])) < 100 ? run + 1 : 1
            if run > quiet { (quiet, joint) = (run, i + 1) }
        }
        let second = Double(joint - span.lowerBound) / pcm.rate
        #expect(quiet <= 512 + 8 + 64, "a quiet run of \(quiet) samples inside the sound")
        #expect(
            second > 4 - 0.001 && second < (192_512 + 64) / 48_000 + 0.001,
            "the second stream's sound began \(second) s after the first's")
        print(
            """
            discontinuity: \(rows.count) pictures in order, worst \(String(format: "%.1f", worst * 1000)) ms, longest \
            gap \(String(format: "%.1f", longest * 1000)) ms; sound \(String(format: "%.3f", seconds)) s, the second \
            at \(String(format: "%.4f", second)) s after a quiet run of \(quiet) samples
            """
        )
    }
}

/// `mq_player_set_label`: the `frames:` output's `item` column names what was presented when
/// each picture was, switching between two pictures at the call; `MQ_EVENT_LABEL_SHOWN` comes
/// once per label, with the first picture presented under it.
@Suite struct LabelTests {
    @Test func theItemColumnSwitchesAtTheCall() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let player = try TestPlayer(audio: "null", video: "frames:\(dir.path)/out")
        let v = player.addTrack(MQ_TRACK_VIDEO)
        player.push(v, try Fixtures.segments("V300", [1, 2]))
        mq_player_end_track(player.p, v)
        let offset = wallOffset()
        mq_player_set_wall_offset(player.p, offset)
        #expect(mq_player_set_label(player.p, "first") == 0)
        mq_player_set_timeline(player.p, mq_clock_now() + 0.2, 0.066667, 1)
        #expect(mq_player_start(player.p) == 0)
        // Switched 2 s in from a thread of its own (beside the parallel suites, a task's sleep
        // can resume seconds late); this task makes no call meanwhile.
        nonisolated(unsafe) let p = player.p
        let (switched, result) = await withCheckedContinuation { (done: CheckedContinuation<(Double, Int32), Never>) in
            Thread.detachNewThread {
                Thread.sleep(forTimeInterval: 2)
                let at = mq_clock_now() + offset
                done.resume(returning: (at, mq_player_set_label(p, "second item")))
            }
        }
        #expect(result == 0)
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 10) != nil)
        player.destroy()
        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        let labels = rows.map(\.item)
        let firstSecond = try #require(labels.firstIndex(of: "second item"))
        #expect(
            labels[..<firstSecond].allSatisfy { $0 == "first" }
                && labels[firstSecond...].allSatisfy { $0 == "second item" }, "\(Set(labels))")
        #expect(firstSecond > 0, "pictures presented before the call")
        // Switched between the last picture presented before the call and the first after it.
        #expect(
            rows[firstSecond - 1].wall <= switched + 0.001 && rows[firstSecond].wall >= switched - 0.001
                && rows[firstSecond].wall < switched + 0.05,
            "switch at \(switched), pictures at \(rows[firstSecond - 1].wall) and \(rows[firstSecond].wall)")
        let shown = player.events.filter { $0.type == Int32(MQ_EVENT_LABEL_SHOWN.rawValue) }
        #expect(shown.map(\.text) == ["first", "second item"], "\(shown.map(\.text))")
        if shown.count == 2 {
            #expect(
                String(format: "%.6f", shown[0].media_time) == rows[0].pts
                    && String(format: "%.6f", shown[1].media_time) == rows[firstSecond].pts,
                "label events at \(shown.map(\.media_time)), pictures \(rows[0].pts) and \(rows[firstSecond].pts)")
        }
    }
}

/// `MQ_CONTAINER_PROBED`: a still image pushed whole (a playlist's image item) decodes to one
/// picture, the image's own pixels, presented once on the timeline and held.
@Suite struct StillImageTests {
    @Test(arguments: ["png", "jpg"])
    func aStillImageIsOnePictureOfItsPixels(_ type: String) async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (image, md5, player, v) = try await Self.still(type, size: "640x360", in: dir)
        player.push(v, try Data(contentsOf: image))
        mq_player_end_track(player.p, v)
        mq_player_set_timeline(player.p, mq_clock_now() + 0.2, 0, 1)
        #expect(mq_player_start(player.p) == 0)
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 5) != nil)
        #expect(!player.events.contains { $0.type == Int32(MQ_EVENT_ERROR.rawValue) }, "\(player.events.map(\.text))")
        player.destroy()
        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        #expect(
            rows.count == 1 && rows.first?.md5 == md5.first && md5.count == 1,
            "\(rows.map(\.md5)) vs \(md5); events \(player.events.map(\.text))")
        #expect(rows.first?.width == 640 && rows.first?.height == 360)
    }

    /// A still decoded ahead (its schedule held) and then due a second ago (the display was
    /// busy redrawing: a slow box's refit took longer than the picture's 40 ms): shown late,
    /// not dropped (nothing would be shown at all).
    @Test func aStillDueInThePastIsShownNotDropped() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let (image, md5, player, v) = try await Self.still("png", size: "320x240", in: dir)
        mq_player_set_timeline(player.p, mq_clock_now() + 3600, 0, 1)  // held: decoded, not due
        #expect(mq_player_start(player.p) == 0)
        player.push(v, try Data(contentsOf: image))
        mq_player_end_track(player.p, v)
        #expect(try await player.waitFor(MQ_EVENT_TRACK_FORMAT, timeout: 5) != nil)
        try await Task.sleep(for: .milliseconds(50))  // queued
        mq_player_set_timeline(player.p, mq_clock_now() - 1, 0, 1)
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 5) != nil)
        let dropped = player.status().frames_dropped
        player.destroy()
        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        #expect(rows.map(\.md5) == md5 && dropped == 0, "\(rows.count) pictures, \(dropped) dropped")
    }

    /// An ffmpeg test picture of `size` as a `type` file in `dir`, ffmpeg's MD5 of its decode,
    /// and a player writing frames to `dir/out` with one probed video track.
    private static func still(_ type: String, size: String, in dir: URL) async throws -> (
        URL, [String], TestPlayer, Int32
    ) {
        let image = dir.appendingPathComponent("still.\(type)")
        _ = try await Fixtures.runAsync(
            "ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=s=\(size)", "-frames:v", "1", image.path])
        let md5 = try await Fixtures.frameMD5s(image)
        let player = try TestPlayer(audio: "null", video: "frames:\(dir.path)/out")
        let v = player.addTrack(MQ_TRACK_VIDEO)
        #expect(mq_player_set_track_container(player.p, v, Int32(MQ_CONTAINER_PROBED.rawValue)) == 0)
        return (image, md5, player, v)
    }
}
