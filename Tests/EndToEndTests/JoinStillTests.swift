import Foundation
import Marquee
import TestSupport
import Testing

/// A live start lands inside a group of pictures: the decoder starts at the group's keyframe and
/// catches up, unseen, to the position the schedule is at. That keyframe is shown at once as a
/// still (``PlayerOptions/joinStill``) until the first due picture replaces it; sync is not
/// touched. Against live HLS from packagers we did not write (MPEG-TS segments written as files
/// and served by our origin's static directory), read back against ffmpeg's own decode of the
/// segment files.
extension LivePlaybackTests {
    @Test(arguments: ["ffmpeg", "gstreamer"])
    func aLiveStartShowsItsKeyframeAtOnce(packager: String) async throws {
        let dir = try Tools.tempDirectory("still-\(packager)")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let encoder: Process
        if packager == "ffmpeg" {  // 1 s GOPs (-g 30) in 2 s segments
            encoder = try Tools.spawn(
                "ffmpeg",
                Self.ffmpegLiveHLS(["-hls_time", "2", "-hls_list_size", "6", "-hls_flags", "delete_segments"]), cwd: dir
            )
        } else {  // hlssink2, 2 s GOPs in 2 s segments
            try #require(
                FileManager.default.isExecutableFile(atPath: "/usr/bin/gst-launch-1.0"), "run scripts/setup (GStreamer)"
            )
            let pipeline = """
                videotestsrc is-live=true pattern=ball ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 \
                ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=60 ! h264parse ! hls.video \
                audiotestsrc is-live=true freq=440 ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 \
                ! voaacenc ! aacparse ! hls.audio hlssink2 name=hls target-duration=2 playlist-length=6 \
                max-files=0 location=seg%05d.ts playlist-location=out.m3u8
                """
            encoder = try Tools.spawn(
                "gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init), cwd: dir)
        }
        defer { Tools.stop(encoder) }
        // (the start must be listed: 6.5 s + a segment)
        _ = try await Self.waitForSegments(dir.appendingPathComponent("out.m3u8"), count: 5)
        let url = origin.baseURL.appendingPathComponent("static/out.m3u8")

        // A stream without date-times is placed with its last segment ending when the playlist
        // was answered: a target of whole segments starts on a segment's keyframe. 6.5 s (over
        // the 3-segment hold-back) starts 0.5 s into a group of pictures: 15 to catch up.
        let run = try await Self.play(url, seconds: 4, audio: { _ in .null }, target: 6.5)
        let shown = try FramesFile.read(run.dir.appendingPathComponent("frames.tsv"), includingStill: true)
        let due = try #require(shown.first { !$0.still }, "\(packager): no picture")
        // The segment file holding the first due picture: its keyframes, and every picture as
        // ffmpeg decodes it.
        let (keyframes, reference) = try await Tools.offPool { try Self.segmentHolding(due.pts, in: dir) }
        let key = try #require(keyframes.last { $0 <= due.pts + 0.001 }, "\(packager): no keyframe before \(due.pts)")
        let behind = Int(((due.pts - key) * 30).rounded())
        let latencies = shown.filter { !$0.still }.map { $0.wallTime - $0.pts }
        let steady = Stats.median(Array(latencies.dropFirst(30)))
        #expect(
            abs(latencies[0] - steady) < 0.05,
            "\(packager): the first due picture at \(latencies[0]) s behind its pts, then \(steady) s")
        if let still = shown.first, still.still {
            #expect(shown.filter(\.still).count == 1, "\(packager): one still")
            // The first keyframe decoded: the segment's (ffmpeg's 1 s GOPs: a later one, `key`,
            // may precede the position too).
            #expect(
                keyframes.contains { abs($0 - still.pts) < 0.001 } && still.pts <= key + 0.001,
                "\(packager): the still (\(still.pts)) is a keyframe (\(keyframes)) at or before \(key)")
            let decoded = reference.min { abs($0.pts - still.pts) < abs($1.pts - still.pts) }
            #expect(
                decoded.map { abs($0.pts - still.pts) < 0.017 && $0.md5 == still.md5 } == true,
                "\(packager): the still is ffmpeg's own decode of that keyframe (\(String(describing: decoded)))")
            #expect(still.wallTime < due.wallTime, "\(packager): the still comes first")
            // The app hears of the first picture as the still is shown.
            let heard = try #require(run.timed.first { if case .firstFrame = $0.event { true } else { false } }?.time)
            #expect(
                abs(heard - still.wallTime) < 0.05,
                "\(packager): first-frame event \(heard - still.wallTime) s after the still")
            print(
                String(
                    format: "%@ join: still (keyframe) shown %.1f ms before the first due picture, %d pictures later",
                    packager, (due.wallTime - still.wallTime) * 1000, behind))
        } else {
            // Only a start on (or a picture after) the keyframe has nothing to catch up.
            #expect(
                behind <= 2,
                "\(packager): the first due picture is \(behind) pictures after its keyframe and no still was shown")
            print("\(packager) join: no still; the first due picture is \(behind) after its keyframe")
        }

        // Turned off: nothing before the first due picture.
        let off = try await Self.play(
            url, seconds: 3, audio: { _ in .null }, target: 6.5, configure: { $0.joinStill = false })
        let offShown = try FramesFile.read(off.dir.appendingPathComponent("frames.tsv"), includingStill: true)
        #expect(!offShown.isEmpty && !offShown.contains(where: \.still), "\(packager): joinStill off")
        // (Each run places a stream without date-times by its own playlist answers: its own steady latency.)
        let offLatencies = offShown.map { $0.wallTime - $0.pts }
        let offSteady = Stats.median(Array(offLatencies.dropFirst(30)))
        #expect(
            abs(offLatencies[0] - offSteady) < 0.05,
            "\(packager): without the still, the first picture \(offLatencies[0]) s behind its pts, then \(offSteady) s"
        )
    }

    /// The `.ts` file in `dir` whose video holds the picture at `pts`: its keyframes' pts, and
    /// every picture (ffmpeg's decode of the file alone; its pts in the output's time base).
    static func segmentHolding(_ pts: Double, in dir: URL) throws -> (
        keyframes: [Double], pictures: [ReferenceDecode.Frame]
    ) {
        let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".ts") }
            .sorted()
        for name in files {
            let file = dir.appendingPathComponent(name)
            let packets = try Tools.run(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts_time,flags", "-of", "csv=p=0",
                    file.path,
                ])
            let rows = packets.split(separator: "\n").compactMap { line -> (Double, Bool)? in
                let f = line.split(separator: ",")
                guard f.count >= 2, let t = Double(f[0]) else { return nil }
                return (t, f[1].hasPrefix("K"))
            }
            guard let first = rows.map(\.0).min(), let last = rows.map(\.0).max(), first - 0.001 <= pts,
                pts <= last + 0.001
            else { continue }
            return (rows.filter(\.1).map(\.0).sorted(), try ReferenceDecode.frames(of: file))
        }
        throw ToolFailure(message: "no segment in \(dir.path) holds pts \(pts)")
    }
}
