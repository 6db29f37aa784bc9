import Foundation
import Marquee
import TestSupport
import Testing

/// Closed captions carried in the video (CEA-608 in ATSC A/53 user data, as broadcast encoders
/// write them; `rigs/captions/cc608.py` adds them to an x264 stream, since no muxer or encoder
/// here can), packaged by ffmpeg's HLS muxer (MPEG-TS; fMP4 with B-frames, the captions carried
/// on by libx264 from the pictures it re-encodes, `-a53cc`), its DASH muxer (fMP4) and
/// GStreamer's hlssink2 (MPEG-TS, B-frames, video only), served as files: each change of the
/// caption screen is reported with the picture that made it, at its presentation time, with
/// FFmpeg's own reading of the same stream as the reference.
extension LivePlaybackTests {
    /// The captions: pop-on on rows 15 and 14, each cleared, then a line rolled up.
    static let captionScript = """
        [{"at": 1.0, "text": "HELLO WORLD", "row": 15},
         {"at": 3.0, "clear": true},
         {"at": 4.0, "text": "SECOND LINE.", "row": 14},
         {"at": 6.0, "clear": true},
         {"at": 7.0, "text": "ROLL UP", "mode": "rollup", "row": 15}]
        """

    /// SubRip cues: start and end (seconds) and the text without its markup (`<font …>`, `{\\an7}`).
    static func srtCues(_ srt: String) -> [(start: Double, end: Double, text: String)] {
        func seconds(_ s: Substring) -> Double? {
            let p = s.trimmingCharacters(in: .whitespaces).split(whereSeparator: { ":,".contains($0) }).compactMap {
                Double($0)
            }
            return p.count == 4 ? p[0] * 3600 + p[1] * 60 + p[2] + p[3] / 1000 : nil
        }
        return srt.components(separatedBy: "\n\n").compactMap { block in
            let lines = block.split(separator: "\n", omittingEmptySubsequences: true)
            guard let times = lines.firstIndex(where: { $0.contains("-->") }) else { return nil }
            let ends = lines[times].components(separatedBy: "-->")
            guard ends.count == 2, let start = seconds(Substring(ends[0])), let end = seconds(Substring(ends[1])) else {
                return nil
            }
            let text = lines[(times + 1)...].joined(separator: "\n")
                .replacingOccurrences(of: "<[^>]*>", with: "", options: .regularExpression)
                .replacingOccurrences(of: "\\{[^}]*\\}", with: "", options: .regularExpression)
            return (start, end, text)
        }
    }

    @Test(arguments: ["hls", "dash", "hls-fmp4-bframes", "gstreamer"])
    func captionsInTheVideoAreReportedWithTheirPicture(packaging: String) async throws {
        let dir = try Tools.tempDirectory("captions-\(packaging)")
        try await Tools.offPool {
            _ = try Tools.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t",
                    "9", "-c:v", "libx264", "-bf", "0", "-g", "30", "-pix_fmt", "yuv420p", "-f", "h264", "plain.h264",
                ], cwd: dir)
            try Self.captionScript.write(
                to: dir.appendingPathComponent("captions.json"), atomically: true, encoding: .utf8)
            _ = try Tools.run(
                "python3",
                [
                    Tools.packageRoot.appendingPathComponent("rigs/captions/cc608.py").path, "plain.h264", "cc.h264",
                    "30", "captions.json",
                ], cwd: dir)
            let quiet = ["-hide_banner", "-loglevel", "error"]
            let bframes = ["-c:v", "libx264", "-bf", "3", "-g", "30", "-a53cc", "1"]  // (B-frames: captions re-encoded)
            if packaging == "gstreamer" {
                _ = try Tools.run(
                    "ffmpeg", quiet + ["-framerate", "30", "-i", "cc.h264"] + bframes + ["-f", "mpegts", "bf.ts"],
                    cwd: dir)
                // Bounded: gst-launch once never exited in a CI run (26 min, the lane held), its
                // playlist written or not. What it wrote by then is judged: the whole listing
                // (`#EXT-X-ENDLIST`) or the test fails here.
                do {
                    _ = try Tools.run(
                        "timeout",
                        [
                            "-s", "KILL", "30", "gst-launch-1.0", "-q", "filesrc", "location=bf.ts", "!", "tsdemux",
                            "!",
                            "h264parse", "!", "hlssink2", "target-duration=2", "playlist-length=0", "max-files=0",
                            "location=seg%05d.ts", "playlist-location=out.m3u8",
                        ], cwd: dir)
                } catch {
                    let listing = try? String(contentsOf: dir.appendingPathComponent("out.m3u8"), encoding: .utf8)
                    guard listing?.contains("#EXT-X-ENDLIST") == true else { throw error }
                }
                return
            }
            let input =
                quiet + [
                    "-framerate", "30", "-i", "cc.h264", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000",
                    "-t",
                    "9", "-map", "0:v", "-map", "1:a", "-c:a", "aac",
                ] + (packaging == "hls-fmp4-bframes" ? bframes : ["-c:v", "copy"])
            let out: [String] =
                switch packaging {
                case "hls": ["-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "out.m3u8"]
                case "dash": ["-f", "dash", "-seg_duration", "2", "-use_timeline", "1", "out.mpd"]
                default:
                    [
                        "-f", "hls", "-hls_segment_type", "fmp4", "-hls_time", "2", "-hls_playlist_type", "vod",
                        "out.m3u8",
                    ]
                }
            _ = try Tools.run("ffmpeg", input + out, cwd: dir)
        }
        // FFmpeg's reading of the packaged stream: its caption cues (SubRip times, from the start).
        let reference = try await Self.ffmpegCaptions(in: dir, packaging: packaging, as: "srt")
        try #require(reference.contains("HELLO WORLD") && reference.contains("SECOND LINE."), "\(reference)")

        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let url = origin.baseURL.appendingPathComponent("static/out.\(packaging == "dash" ? "mpd" : "m3u8")")
        // Muted, captions auto (the default): drawn.
        let run = try await Self.play(url, seconds: 11, audio: { _ in .null }, configure: { $0.muted = true })
        let captions = run.timed.compactMap { item -> (time: Double, text: String, position: Double)? in
            guard case .captionChanged(let text, let position) = item.event else { return nil }
            return (item.time, text, position)
        }
        let texts = captions.map(\.text)
        // The screens in order: each pop-on shown whole at once, cleared, and the roll-up line
        // growing pair by pair to its whole text.
        let popOn = texts.filter { !$0.hasPrefix("R") }
        #expect(popOn == ["HELLO WORLD", "", "SECOND LINE.", ""], "\(packaging): \(texts)")
        let rolled = texts.filter { $0.hasPrefix("R") }
        #expect(
            rolled.last == "ROLL UP" && zip(rolled, rolled.dropFirst()).allSatisfy { $1.hasPrefix($0) },
            "\(packaging): \(rolled)")
        // On the picture each came with: the screens' positions apart as the script has them
        // (to the frame), and each reported within 0.1 s of its picture being shown.
        let hello = try #require(captions.first { $0.text == "HELLO WORLD" })
        let firstFrame = try #require(run.frames.first)
        var after = hello.position
        for (at, text) in [(3.0, ""), (4.0, "SECOND LINE."), (6.0, "")] {
            let caption = try #require(captions.first { $0.text == text && $0.position > after + 0.5 })
            after = caption.position
            #expect(
                abs(caption.position - hello.position - (at - 1)) < 0.017,
                "\(packaging): '\(text)' at \(caption.position - hello.position) s after HELLO WORLD, \(at - 1) written"
            )
        }
        for caption in captions.prefix(4) {
            let offset = caption.position - hello.position + 1  // seconds into the stream
            let picture = try #require(
                run.frames.first { abs($0.pts - firstFrame.pts - offset) < 0.017 },
                "\(packaging): no picture at \(offset) s")
            #expect(
                caption.time >= picture.wallTime - 0.001 && caption.time - picture.wallTime < 0.1,
                "\(packaging): '\(caption.text)' reported \(caption.time - picture.wallTime) s after its picture")
        }
        // Each picture's caption column (frames.tsv: the screen with it) follows FFmpeg's cues:
        // timed from the first picture showing the first cue, every picture before the roll-up
        // shows the cue of its time and nothing between cues (±1 frame at each cue's edges).
        let cues = Self.srtCues(reference).filter { $0.start < 6.9 }
        let firstCue = try #require(cues.first, "\(packaging): no cue in \(reference)")
        let shown = try #require(
            run.frames.first { $0.caption == firstCue.text }, "\(packaging): no picture with '\(firstCue.text)'")
        var (checked, wrong) = (0, [String]())
        for frame in run.frames {
            let t = frame.pts - shown.pts + firstCue.start
            guard t >= 0, t < 6.9, !cues.contains(where: { abs(t - $0.start) < 0.035 || abs(t - $0.end) < 0.035 })
            else { continue }
            let want = cues.first { $0.start <= t && t < $0.end }?.text ?? ""
            checked += 1
            if frame.caption != want { wrong.append(String(format: "%.3f s: '%@', not '%@'", t, frame.caption, want)) }
            // Drawn over the picture while on screen, nothing drawn between cues.
            if frame.captionsDrawn.isEmpty != want.isEmpty {
                wrong.append(String(format: "%.3f s: '%@' drawn as '%@'", t, want, frame.captionsDrawn))
            }
        }
        #expect(
            cues.count == 2 && checked > 150 && wrong.isEmpty,
            "\(packaging): \(cues.count) cues, \(checked) pictures checked, \(wrong.count) wrong: \(wrong.prefix(5))")
        try await Self.checkDrawnCaptions(run.frames, dir: dir, run: run.dir, packaging: packaging)
        print(
            String(
                format: "captions, %@: %d screens; reported %.1f–%.1f ms after their pictures", packaging,
                captions.count,
                captions.prefix(4).compactMap { c in
                    run.frames.first { abs($0.pts - firstFrame.pts - (c.position - hello.position + 1)) < 0.017 }.map {
                        (c.time - $0.wallTime) * 1000
                    }
                }.min() ?? .nan,
                captions.prefix(4).compactMap { c in
                    run.frames.first { abs($0.pts - firstFrame.pts - (c.position - hello.position + 1)) < 0.017 }.map {
                        (c.time - $0.wallTime) * 1000
                    }
                }.max() ?? .nan))
    }

    /// FFmpeg's reading of the packaged stream in `dir`: its caption decoder's cues, written as
    /// `format` (`srt`, `ass`).
    static func ffmpegCaptions(in dir: URL, packaging: String, as format: String) async throws -> String {
        try await Tools.offPool {
            try Tools.run(
                "ffmpeg",
                [
                    "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                    "movie=out.\(packaging == "dash" ? "mpd" : "m3u8")[out0+subcc]", "-map", "0:s", "-f", format, "-",
                ], cwd: dir)
        }
    }

    /// The pixels drawn for each pop-on screen (frames.tsv's `captions_drawn`: the caption layer
    /// over black) against FFmpeg's own: its caption decoder's events of the packaged stream, in
    /// its own script, drawn by its `ass` filter (libass finding the script's `Monospace` face
    /// through fontconfig) over black in the 4:3 middle of the picture, as 608 places captions.
    /// Within 2 levels per channel; nothing drawn beside the 4:3 area.
    static func checkDrawnCaptions(_ frames: [PresentedFrame], dir: URL, run: URL, packaging: String) async throws {
        let script = try await Self.ffmpegCaptions(in: dir, packaging: packaging, as: "ass")
        let lines = script.split(whereSeparator: \.isNewline)  // (CRLF, as the ASS muxer writes)
        let header = lines.prefix { !$0.hasPrefix("Dialogue:") }.joined(separator: "\n")
        for text in ["HELLO WORLD", "SECOND LINE."] {
            let frame = try #require(frames.first { $0.caption == text }, "\(packaging): no picture with '\(text)'")
            let layer = try Data(contentsOf: run.appendingPathComponent("captions/\(frame.captionsDrawn).ppm"))
            let (w, h) = (frame.width, frame.height)
            let pixels = [UInt8](layer.suffix(w * h * 3))
            try #require(layer.starts(with: Array("P6\n\(w) \(h)\n255\n".utf8)) && pixels.count == w * h * 3)
            // FFmpeg's event for the text, shown from 0 for 10 s over a 4:3 black picture.
            let event = try #require(
                lines.first { $0.hasPrefix("Dialogue:") && $0.hasSuffix(text) },
                "\(packaging): no event '\(text)' in \(script)")
            let fields = event.split(separator: ",", maxSplits: 3, omittingEmptySubsequences: false)
            let line = "Dialogue: 0,0:00:00.00,0:00:10.00,\(fields[3])"
            try (header + "\n" + line + "\n").write(
                to: dir.appendingPathComponent("ref-\(w).ass"), atomically: true, encoding: .utf8)
            let aw = h * 4 / 3
            _ = try await Tools.offPool {
                try Tools.run(
                    "ffmpeg",
                    [
                        "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                        "color=c=black:s=\(aw)x\(h):d=1",
                        "-vf", "format=rgb24,ass=ref-\(w).ass", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24",
                        "ref.rgb",
                    ], cwd: dir)
            }
            let reference = [UInt8](try Data(contentsOf: dir.appendingPathComponent("ref.rgb")))
            try #require(reference.count == aw * h * 3)
            let x0 = (w - aw) / 2
            var (worst, inked, beside) = (0, 0, 0)
            for y in 0..<h {
                for x in 0..<w {
                    for k in 0..<3 {
                        let ours = Int(pixels[(y * w + x) * 3 + k])
                        if x < x0 || x >= x0 + aw {
                            beside += ours > 0 ? 1 : 0
                        } else {
                            worst = max(worst, abs(ours - Int(reference[(y * aw + x - x0) * 3 + k])))
                            inked += ours > 0 ? 1 : 0
                        }
                    }
                }
            }
            #expect(
                inked > 100 && worst <= 2 && beside == 0,
                "\(packaging) '\(text)': \(inked) values inked, off FFmpeg's by \(worst) at most, \(beside) beside")
            print("captions drawn, \(packaging) '\(text)': \(inked) values inked, off FFmpeg's by \(worst) at most")
        }
    }
}
