import CCore
import Foundation
import TestSupport
import Testing

/// `mq_player_add_staged_track` / `mq_player_activate_tracks`: the next item decoded while the
/// current one plays, from a position inside a segment (its keyframe 1 s earlier), its first
/// picture held; activated, it replaces the current one on the next picture: no repeated
/// picture, no wait for a decode.
@Suite struct StagedTrackTests {
    @Test func aStagedTrackEntersMidSegmentOnTheNextPicture() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try Fixtures.segments("V300", [1, 2])
        let b = try Fixtures.segments("V300", [3, 4])
        let bFile = dir.appendingPathComponent("b.mp4")
        try b.write(to: bFile)
        let bMD5 = try await Fixtures.frameMD5s(bFile)
        let bPTS = try await Fixtures.framePTS(bFile).compactMap(Double.init)
        try #require(bMD5.count == bPTS.count && bPTS.count > 60)
        let interval = bPTS[1] - bPTS[0]
        let start = bPTS[0] + 1.0 + interval / 2  // between two pictures: the one before it is due
        let entry = try #require(bPTS.lastIndex { $0 <= start })

        let player = try TestPlayer(audio: "null", video: "frames:\(dir.path)/out")
        let offset = wallOffset()
        mq_player_set_wall_offset(player.p, offset)
        let v = player.addTrack(MQ_TRACK_VIDEO)
        player.push(v, a)
        mq_player_end_track(player.p, v)
        mq_player_set_label(player.p, "a")
        mq_player_set_timeline(player.p, mq_clock_now() + 0.2, 0, 1)
        #expect(mq_player_start(player.p) == 0)
        try await Task.sleep(for: .seconds(1))
        var staged: Int32 = -1
        #expect(mq_player_add_staged_track(player.p, MQ_TRACK_VIDEO, 0, start, &staged) == 0)
        #expect(
            mq_player_add_staged_track(player.p, MQ_TRACK_VIDEO, 0, start, &staged) != 0, "one staged track of a kind")
        player.push(staged, b)
        mq_player_end_track(player.p, staged)
        try await Task.sleep(for: .seconds(1))  // decoded ahead meanwhile, its picture held
        let before = player.status().frames_presented
        let switched = mq_clock_now()
        mq_player_set_label(player.p, "b")
        mq_player_set_timeline(player.p, switched, start, 1)
        #expect(mq_player_activate_tracks(player.p) == 0)
        #expect(
            try await player.waitFor(MQ_EVENT_ENDED, timeout: 10) != nil,
            "the staged track's end ends the player (the replaced one is gone)")
        player.destroy()

        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        let firstB = try #require(rows.firstIndex { $0.item == "b" })
        #expect(rows[firstB...].allSatisfy { $0.item == "b" }, "a picture of the replaced track after the switch")
        #expect(
            firstB == Int(before) || firstB == Int(before) + 1,
            "\(firstB) pictures before the staged one, \(before) presented at the call")
        let bRows = Array(rows[firstB...])
        // The picture due at the entry, then every one after it: ffmpeg's, in order.
        #expect(
            bRows.map(\.md5) == Array(bMD5[entry...]),
            """
            \(bRows.count) pictures from the staged track; the first is ffmpeg's \
            #\(bMD5.firstIndex(of: bRows[0].md5) ?? -1), want #\(entry)
            """
        )
        let shown = bRows[0].wall - offset - switched
        #expect(shown >= -0.001 && shown < interval, "the staged picture shown \(shown * 1000) ms after the switch")
        let gap = bRows[0].wall - rows[firstB - 1].wall
        #expect(
            gap < 1.5 * interval,
            "\(gap * 1000) ms between the last picture of the replaced track and the first of the staged one")
        print(
            String(
                format: """
                    staged: entered at picture #%d, shown %.1f ms after the switch, %.1f ms after the last replaced \
                    picture
                    """,
                entry, shown * 1000, gap * 1000))
    }

    /// `mq_player_activate_tracks_at`: the cut timed by the core. A file staged whole (its first
    /// picture held, whatever its time), the activation armed for an instant 0.4 s ahead from a
    /// thread that blocks until then: the staged file's first picture is presented on the
    /// instant (its timeline anchored there, its label with it), the replaced stream's pictures
    /// until then; without a staged track it is refused at once.
    @Test func theCoreCutsOnTheInstantItWasGiven() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try Fixtures.segments("V300", [1, 2])
        let b = try Fixtures.segments("V300", [3, 4])
        let bFile = dir.appendingPathComponent("b.mp4")
        try b.write(to: bFile)
        let bMD5 = try await Fixtures.frameMD5s(bFile)
        let interval = try await { () async throws -> Double in
            let pts = try await Fixtures.framePTS(bFile).compactMap(Double.init)
            return pts[1] - pts[0]
        }()

        let player = try TestPlayer(audio: "null", video: "frames:\(dir.path)/out")
        let offset = wallOffset()
        mq_player_set_wall_offset(player.p, offset)
        var refused = mq_activation(
            at: mq_clock_now() + 0.1, media_anchor: .nan, wall_offset: .nan, lead: 0.03, label: nil)
        #expect(mq_player_activate_tracks_at(player.p, &refused) == MQ_ERR_STATE.rawValue, "no staged track")
        let v = player.addTrack(MQ_TRACK_VIDEO)
        player.push(v, a)
        mq_player_end_track(player.p, v)
        mq_player_set_label(player.p, "a")
        mq_player_set_timeline(player.p, mq_clock_now() + 0.2, 0, 1)
        #expect(mq_player_start(player.p) == 0)
        try await Task.sleep(for: .seconds(0.5))
        var staged: Int32 = -1
        #expect(mq_player_add_staged_track(player.p, MQ_TRACK_VIDEO, 0, -1e9, &staged) == 0)
        player.push(staged, b)
        mq_player_end_track(player.p, staged)
        try await Task.sleep(for: .seconds(0.5))  // decoded ahead meanwhile, its first picture held
        let at = mq_clock_now() + 0.4
        nonisolated(unsafe) let p = player.p
        let rc = await withCheckedContinuation { (done: CheckedContinuation<Int32, Never>) in
            Thread {
                var cut = mq_activation(at: at, media_anchor: .nan, wall_offset: .nan, lead: 0.03, label: nil)
                let rc = "b".withCString { label in
                    cut.label = label
                    return mq_player_activate_tracks_at(p, &cut)
                }
                done.resume(returning: rc)
            }.start()
        }
        let returned = mq_clock_now()
        #expect(rc == 0)
        #expect(returned >= at - 0.0015, "returned \((returned - at) * 1000) ms from the instant")
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 10) != nil)
        player.destroy()

        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        let firstB = try #require(rows.firstIndex { $0.item == "b" })
        #expect(rows[..<firstB].allSatisfy { $0.item == "a" } && rows[firstB...].allSatisfy { $0.item == "b" })
        #expect(Array(rows[firstB...].map(\.md5)) == bMD5, "the staged file whole, from its first picture, in order")
        let shown = rows[firstB].wall - offset - at
        let due = try #require(rows[firstB].due) - offset - at
        let lastA = rows[firstB - 1].wall - offset - at
        // On the instant: its due time (the presentation is timed to it), within the video
        // thread's own wake-up; the replaced stream's last picture within a frame before it.
        // Apart: the core's timing (the picture due on the instant: within 1 µs in three runs
        // here) and the machine's wake-up (shown − due), so a miss says which moved.
        #expect(abs(due) < 0.0001, "the staged picture due \(due * 1000) ms from the instant")
        #expect(shown >= -0.0005 && shown < 0.004, "the staged picture shown \(shown * 1000) ms from the instant")
        #expect(lastA < 0 && lastA > -(interval + 0.035), "the last replaced picture \(lastA * 1000) ms before it")
        let summary =
            "cut at an instant: the staged picture due %.3f ms, shown %.2f ms from it; the last replaced %.1f ms before"
        print(String(format: summary, due * 1000, shown * 1000, -lastA * 1000))
    }

    /// The sound at the cut: the old stream's last frame fades out and the new one fades in
    /// over 5 ms (a 1 kHz tone cut mid-wave, a 440 Hz one entered at its peak): no sample steps
    /// further than the tones themselves do; cut bare, the steps were 0.7–0.9 of the tones'
    /// amplitude (on a busy machine also where the new schedule made the old sound early, before
    /// the switch: a jump fades too).
    @Test func theSoundAtTheCutHasNoClick() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let a = try Data(
            contentsOf: try await Fixtures.makeAudio("sine=f=1000:r=48000", seconds: 4, in: dir, name: "a.mp4"))
        let b = try Data(
            contentsOf: try await Fixtures.makeAudio("sine=f=440:r=48000", seconds: 3, in: dir, name: "b.mp4"))
        let player = try TestPlayer(audio: "wav:\(dir.path)/out.wav", video: nil)
        let ta = player.addTrack(MQ_TRACK_AUDIO)
        player.push(ta, a)
        mq_player_end_track(player.p, ta)
        let began = mq_clock_now() + 0.2
        mq_player_set_timeline(player.p, began, 0, 1)
        #expect(mq_player_start(player.p) == 0)
        try await Task.sleep(for: .seconds(1))
        let start = 1.0 + 0.25 / 440  // a quarter wave in: the 440 Hz tone enters at its peak
        var tb: Int32 = -1
        #expect(mq_player_add_staged_track(player.p, MQ_TRACK_AUDIO, 0, start, &tb) == 0)
        player.push(tb, b)
        mq_player_end_track(player.p, tb)
        try await Task.sleep(for: .milliseconds(700))
        let cutAt = mq_clock_now()
        mq_player_set_timeline(player.p, cutAt, start, 1)
        #expect(mq_player_activate_tracks(player.p) == 0)
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 10) != nil)
        player.destroy()
        let pcm = try PCM.wav(dir.appendingPathComponent("out.wav")).pcm
        let span = try #require(pcm.soundSpan())
        // The cut: where 10 ms windows go from the 1 kHz tone's 20 zero crossings to the 440 Hz
        // one's 9. Judged within 25 ms of it (an underrun elsewhere on a busy machine is not this).
        let x = pcm.samples
        func crossings(_ at: Int) -> Int { (at..<at + 480).filter { (x[$0] < 0) != (x[$0 + 1] < 0) }.count }
        let cut = try #require(
            stride(from: span.lowerBound + 4800, to: span.upperBound - 4800, by: 48).first {
                crossings($0) < 14 && crossings($0 + 480) < 12
            })
        let body = x[(cut - 1200)..<(cut + 1200)]
        let steps = zip(body, body.dropFirst()).map { abs(Int($1) - Int($0)) }
        let peak = x[span].map { abs(Int($0)) }.max() ?? 0
        // A 1 kHz sine of amplitude A moves at most A·2π·1000/48000 ≈ 0.13 A a sample.
        let worst = steps.max() ?? 0
        #expect(peak > 2000 && Double(worst) < 0.16 * Double(peak), "largest step \(worst) with tones of \(peak)")
        // The first tone until the cut (about 1.5 s; later on a busy machine), then the second's last 2 s.
        let seconds = Double(span.count) / pcm.rate
        let expected = (cutAt - began) + (3 - start)
        #expect(
            abs(seconds - expected) < 0.1,
            "\(seconds) s of sound, \(expected) s expected: the first tone until the cut, the second's last 2 s")
        print(
            String(
                format: "cut: largest step %d, tones of %d (%.3f); %.2f s of sound", worst, peak,
                Double(worst) / Double(peak), seconds))
    }
}
