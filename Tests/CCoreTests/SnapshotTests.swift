import CCore
import Foundation
import Testing

/// `mq_player_keep_last_picture` / `mq_player_snapshot_png`: the picture presented last, held
/// by reference, as a PNG that ffmpeg's own conversion of the same picture matches.
@Suite struct SnapshotTests {
    @Test func theLastPresentedPictureBecomesAPNG() async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let bytes = try Fixtures.segments("V300", [1, 2])  // 4 s, 640x360, untagged
        let stream = dir.appendingPathComponent("v300.mp4")
        try bytes.write(to: stream)
        let player = try TestPlayer(audio: "null", video: "frames:\(dir.path)/out")
        func snapshot(_ maxWidth: Int32 = 0) -> (rc: Int32, png: Data, pts: Double, width: Int32, height: Int32) {
            var png: UnsafeMutablePointer<UInt8>?
            var size = 0
            var pts = 0.0
            var width: Int32 = 0
            var height: Int32 = 0
            let rc = mq_player_snapshot_png(player.p, maxWidth, &png, &size, &pts, &width, &height)
            defer { mq_free(png) }
            return (rc, png.map { Data(bytes: $0, count: size) } ?? Data(), pts, width, height)
        }
        #expect(snapshot().rc == MQ_ERR_STATE.rawValue, "not kept: no screenshot")
        #expect(mq_player_keep_last_picture(player.p, true) == 0)
        #expect(snapshot().rc == MQ_ERR_NOT_FOUND.rawValue, "kept, but nothing presented yet")
        #expect(snapshot(-1).rc == MQ_ERR_INVALID_ARGUMENT.rawValue)

        let track = player.addTrack(MQ_TRACK_VIDEO)
        player.push(track, bytes)
        #expect(mq_player_end_track(player.p, track) == 0)
        mq_player_set_wall_offset(player.p, wallOffset())
        mq_player_set_timeline(player.p, mq_clock_now() + 0.1, 0.066667, 1)
        #expect(mq_player_start(player.p) == 0)
        #expect(try await player.waitFor(MQ_EVENT_ENDED, timeout: 15) != nil)

        // The picture on screen at the end: the stream's last, as frames.tsv has it.
        let shot = snapshot()
        #expect(
            shot.rc == 0 && shot.width == 640 && shot.height == 360 && shot.png.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        let small = snapshot(320)
        #expect(small.rc == 0 && small.width == 320 && small.height == 180 && small.pts == shot.pts)
        #expect(mq_player_keep_last_picture(player.p, false) == 0)
        #expect(snapshot().rc == MQ_ERR_STATE.rawValue, "let go")
        player.destroy()
        let rows = try FrameRow.read(dir.appendingPathComponent("out"))
        #expect(
            abs((Double(rows.last?.pts ?? "") ?? 0) - shot.pts) < 0.001,
            "last row \(rows.last?.pts ?? "-"), screenshot \(shot.pts)")

        // Pixel for pixel against ffmpeg's RGB of the stream's last picture (BT.601, untagged SD).
        let png = dir.appendingPathComponent("shot.png")
        try shot.png.write(to: png)
        func rgb(_ input: URL, _ filter: String) throws -> [UInt8] {
            let out = dir.appendingPathComponent("\(input.lastPathComponent).rgb")
            _ = try Fixtures.run(
                "ffmpeg",
                ["-v", "error", "-y", "-i", input.path, "-vf", filter, "-frames:v", "1", "-f", "rawvideo", out.path])
            return Array(try Data(contentsOf: out))
        }
        let mine = try rgb(png, "format=rgb24")
        let reference = try rgb(
            stream,
            """
            select=eq(n\\,\(rows.count - 1)),\
            scale=in_color_matrix=bt601:in_range=tv:out_range=pc:flags=bicubic+accurate_rnd+full_chroma_int,format=rgb24
            """
        )
        #expect(mine.count == 640 * 360 * 3 && mine.count == reference.count)
        var sum = 0.0
        for i in 0..<min(mine.count, reference.count) {
            let d = Double(mine[i]) - Double(reference[i])
            sum += d * d
        }
        let psnr = sum == 0 ? 99 : 10 * log10(255 * 255 / (sum / Double(max(mine.count, 1))))
        #expect(psnr >= 45, "screenshot vs ffmpeg's RGB of the last picture: \(psnr) dB")
    }
}
