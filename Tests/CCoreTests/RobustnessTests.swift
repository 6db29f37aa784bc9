import CCore
import Foundation
import Testing

/// Bad input never crashes or hangs the player; a reset recovers it.
@Suite struct RobustnessTests {
    @Test func garbageAndTruncationReportErrorsThenResetRecovers() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let player = try TestPlayer(audio: "null", video: "frames:\(dir.path)/out", videoQueue: 64)
        let v = player.addTrack(MQ_TRACK_VIDEO)
        #expect(mq_player_start(player.p) == 0)

        // 1. Garbage.
        var garbage = Data("this is not an mp4 at all; ".utf8)
        var seed: UInt32 = 12345
        for _ in 0..<8192 {
            seed = seed &* 1_103_515_245 &+ 12345
            garbage.append(UInt8(truncatingIfNeeded: seed >> 16))
        }
        player.push(v, garbage)
        let e1 = try await player.waitFor(MQ_EVENT_ERROR, track: v, timeout: 3)
        #expect(e1?.code == MQ_ERR_DEMUX.rawValue, "garbage: \(e1?.text ?? "no error event")")

        // 2. A segment cut in half, then the end of input.
        #expect(mq_player_reset_track(player.p, v) == 0)
        let good = try Fixtures.segments("V300", [1])
        let initSize = try Data(contentsOf: Fixtures.testpic.appendingPathComponent("V300/init.mp4")).count
        player.push(v, good.prefix(initSize + (good.count - initSize) / 2))
        mq_player_end_track(player.p, v)
        // (The decoder may complain first about the cut picture it was handed.)
        let e2 = try await player.waitFor(MQ_EVENT_ERROR, track: v, timeout: 3) { $0.text.contains("truncated") }
        #expect(
            e2 != nil,
            """
            truncated: no such error event among \
            \(player.events.filter { $0.type == Int32(MQ_EVENT_ERROR.rawValue) }.map(\.text))
            """
        )
        #expect(player.status().state != Int32(MQ_STATE_ERROR.rawValue))

        // 3. Reset, then a good init + segment plays from its first picture to ENDED.
        #expect(mq_player_reset_track(player.p, v) == 0)
        player.push(v, good)
        mq_player_end_track(player.p, v)
        mq_player_set_wall_offset(player.p, wallOffset())
        mq_player_set_timeline(player.p, mq_clock_now() + 0.2, 0.066667, 1)
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 6) != nil)
        player.destroy()

        let stream = dir.appendingPathComponent("seg1.mp4")
        try good.write(to: stream)
        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        let ref = try await Fixtures.frameMD5s(stream)
        #expect(rows.count == 60)
        #expect(rows.map(\.md5) == ref)
        print(
            """
            robustness: garbage → \(e1?.text ?? "-"); truncated → \(e2?.text ?? "-"); after reset \(rows.count) \
            pictures bit-exact
            """
        )
    }

    @Test func destroyNeverHangsWhileInputIsIncomplete() async throws {
        let player = try TestPlayer(audio: "null", video: "headless")
        let v = player.addTrack(MQ_TRACK_VIDEO)
        let a = player.addTrack(MQ_TRACK_AUDIO)
        let video = try Fixtures.segments("V300", [1])
        player.push(v, video.prefix(video.count - 1000))  // the demuxer waits for more
        player.push(a, try Fixtures.segments("A48", [1]).prefix(700))
        mq_player_start(player.p)
        try await Task.sleep(nanoseconds: 200_000_000)
        let t0 = mq_clock_now()
        player.destroy()
        #expect(mq_clock_now() - t0 < 0.5)
    }
}
