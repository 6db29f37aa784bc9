import Foundation
import Marquee
import TestSupport
import Testing

/// HLS subtitle renditions (`EXT-X-MEDIA TYPE=SUBTITLES`, segmented WebVTT) written by ffmpeg's
/// HLS muxer from a SubRip file beside the video: MPEG-TS (its clock started at 0, the cue
/// times on it), fMP4, and MPEG-TS with its usual 1.4 s start whose segments carry the
/// `X-TIMESTAMP-MAP` that ties the cue times to it (as Apple's, Shaka's and AWS's packagers
/// write it; added to ffmpeg's segments here, since its muxer writes none). Each picture shows
/// the cues FFmpeg's own decode of the segments says are on at its time (overlapping ones
/// together), drawn over it, and nothing between them (±1 frame at each cue's edges). A
/// segment that 404s costs its own cues only.
extension LivePlaybackTests {
    static let subtitleSRT = """
        1
        00:00:01,000 --> 00:00:02,500
        FIRST CUE

        2
        00:00:02,000 --> 00:00:04,000
        Overlapping <i>second</i>

        3
        00:00:05,000 --> 00:00:07,500
        Third, on
        two lines

        4
        00:00:09,000 --> 00:00:10,000
        Last

        """

    @Test(arguments: ["ts", "fmp4", "ts-timestamp-map", "ts-404"])
    func subtitleRenditionsAreShownOnTheirPictures(packaging: String) async throws {
        let dir = try Tools.tempDirectory("subtitles-\(packaging)")
        try Self.subtitleSRT.write(to: dir.appendingPathComponent("cues.srt"), atomically: true, encoding: .utf8)
        // The 90 kHz clock's start: what the map ties cue time 0 to (ffmpeg's usual 1.4 s).
        let mapped = packaging == "ts-timestamp-map"
        try await Tools.offPool {
            let format =
                packaging == "fmp4"
                ? ["-hls_segment_type", "fmp4"] : mapped ? [] : ["-muxdelay", "0", "-muxpreload", "0"]
            _ = try Tools.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-f",
                    "lavfi", "-i", "sine=frequency=440:sample_rate=48000", "-i", "cues.srt", "-t", "12", "-map", "0:v",
                    "-map", "1:a", "-map", "2:s", "-c:v", "libx264", "-bf", "0", "-g", "30", "-pix_fmt", "yuv420p",
                    "-c:a", "aac", "-c:s", "webvtt",
                ] + format + [
                    "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-var_stream_map",
                    "v:0,a:0,s:0,sgroup:subs", "-master_pl_name", "out.m3u8", "v%v.m3u8",
                ], cwd: dir)
        }
        let segments = try FileManager.default.contentsOfDirectory(atPath: dir.path).filter { $0.hasSuffix(".vtt") }
            .sorted()
        try #require(segments.count >= 5, "\(segments)")
        if mapped {
            for name in segments {
                let url = dir.appendingPathComponent(name)
                let body = try String(contentsOf: url, encoding: .utf8)
                try body.replacingOccurrences(
                    of: "WEBVTT\n", with: "WEBVTT\nX-TIMESTAMP-MAP=MPEGTS:126000,LOCAL:00:00:00.000\n"
                ).write(to: url, atomically: true, encoding: .utf8)
            }
        }
        // FFmpeg's decode of each segment: the cues, on the media's clock.
        var cues: [(start: Double, end: Double, text: String)] = []
        for name in segments {
            let srt = try await Tools.offPool {
                try Tools.run("ffmpeg", ["-hide_banner", "-loglevel", "error", "-i", name, "-f", "srt", "-"], cwd: dir)
            }
            cues += Self.srtCues(srt.replacingOccurrences(of: "\r\n", with: "\n")).map {
                ($0.start + (mapped ? 1.4 : 0), $0.end + (mapped ? 1.4 : 0), $0.text)
            }
        }
        try #require(cues.count == 4, "\(cues)")
        var missing: (start: Double, end: Double)?
        if packaging == "ts-404" {
            // The segment holding the third cue gone: its cue is not shown, the others are.
            let third = try #require(
                segments.first {
                    (try? String(contentsOf: dir.appendingPathComponent($0), encoding: .utf8))?.contains("Third")
                        == true
                })
            try FileManager.default.removeItem(at: dir.appendingPathComponent(third))
            let gone = try #require(cues.first { $0.text.hasPrefix("Third") })
            missing = (gone.start, gone.end)
            cues.removeAll { $0.text.hasPrefix("Third") }
        }

        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        // Muted, captions auto (the default): drawn.
        let run = try await Self.play(
            origin.baseURL.appendingPathComponent("static/out.m3u8"), seconds: 13, audio: { _ in .null },
            configure: { $0.muted = true })
        var (checked, wrong) = (0, [String]())
        for frame in run.frames where !frame.still {
            let t = frame.pts
            guard !cues.contains(where: { abs(t - $0.start) < 0.035 || abs(t - $0.end) < 0.035 }) else { continue }
            let want = cues.filter { $0.start <= t && t < $0.end }.map(\.text).joined(separator: "\n")
            checked += 1
            if frame.caption != want { wrong.append(String(format: "%.3f s: '%@', not '%@'", t, frame.caption, want)) }
            if frame.captionsDrawn.isEmpty != want.isEmpty {
                wrong.append(String(format: "%.3f s: '%@' drawn as '%@'", t, want, frame.captionsDrawn))
            }
        }
        #expect(
            checked > 300 && wrong.isEmpty,
            "\(packaging): \(checked) pictures checked, \(wrong.count) wrong: \(wrong.prefix(6))")
        let covered = run.frames.filter { f in cues.contains { $0.start <= f.pts && f.pts < $0.end } }
        #expect(covered.count > 100, "\(packaging): \(covered.count) pictures under a cue")
        if let missing {
            #expect(
                run.frames.filter { $0.pts > missing.start + 0.05 && $0.pts < missing.end - 0.05 }.allSatisfy {
                    $0.caption.isEmpty
                }, "the lost segment's time shows nothing")
            #expect(
                run.events.contains {
                    if case .error(_, false) = $0 { true } else { false }
                }, "the 404 was said")
        }
        #expect(!run.events.contains { if case .error(_, true) = $0 { true } else { false } })
        print("subtitles, \(packaging): \(checked) pictures checked, \(covered.count) under a cue")
    }
}
