import Foundation
import Marquee
import TestSupport
import Testing

/// Live streams of other shapes, from ffmpeg's muxers started by the tests and served as files
/// over loopback: several audio languages (the default, or the app's choice), audio only,
/// video only. Read from frames.tsv and the WAV.
extension LivePlaybackTests {
    /// ffmpeg encoding live (a test pattern; a 440 Hz tone, and a 660 Hz one when `second`)
    /// with `muxer` arguments, in `dir`.
    static func ffmpegLive(
        in dir: URL, video: Bool = true, audio: Bool = true, second: Bool = false, _ muxer: [String]
    ) throws -> Process {
        var args = ["-v", "error", "-nostdin", "-re"]
        var maps: [String] = []
        var inputs = 0
        if video {
            args += ["-f", "lavfi", "-i", "testsrc2=s=640x360:r=30"]
            maps += ["-map", "\(inputs):v"]
            inputs += 1
        }
        for (on, hz) in [(audio, 440), (second, 660)] where on {
            args += ["-f", "lavfi", "-i", "sine=f=\(hz):r=48000"]
            maps += ["-map", "\(inputs):a"]
            inputs += 1
        }
        args += maps
        if video {
            args += [
                "-c:v", "libx264", "-preset", "ultrafast", "-tune", "zerolatency", "-g", "30", "-keyint_min", "30",
                "-sc_threshold", "0",
            ]
        }
        if audio { args += ["-c:a", "aac", "-ac", "2"] }
        return try Tools.spawn("ffmpeg", args + muxer, cwd: dir)
    }

    /// The tone heard in `wav`, Hz (its first and last 0.1 s left out).
    static func toneHeard(_ wav: URL) throws -> Double {
        let pcm = try PCM.wav(wav)
        let start = try #require(pcm.firstSound(), "no sound")
        return ToneAnalysis.frequency(
            pcm.channel(0)[start...].dropFirst(4800).dropLast(4800), sampleRate: pcm.sampleRate)
    }

    /// DASH with an English (440 Hz) and a French (660 Hz) audio adaptation set, `lang="eng"` /
    /// `"fra"` as ffmpeg writes them: the first without a choice, the French one for `fr`.
    @Test(arguments: [nil, "fr"] as [String?])
    func ffmpegDASHWithTwoAudioLanguages(language: String?) async throws {
        let dir = try Tools.tempDirectory("fflang")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let encoder = try Self.ffmpegLive(
            in: dir, second: true,
            [
                "-metadata:s:a:0", "language=eng", "-metadata:s:a:1", "language=fra", "-f", "dash", "-seg_duration",
                "1", "-streaming", "1",
                "-window_size", "30", "-use_timeline", "1", "-use_template", "1", "-adaptation_sets",
                "id=0,streams=v id=1,streams=1 id=2,streams=2",
                "live.mpd",
            ])
        defer { Tools.stop(encoder) }
        try await Task.sleep(for: .seconds(4))
        let mpd = try String(contentsOf: dir.appendingPathComponent("live.mpd"), encoding: .utf8)
        try #require(mpd.contains("lang=\"eng\"") && mpd.contains("lang=\"fra\""), "\(mpd)")
        try await Self.expectLanguage(
            language, playing: origin.baseURL.appendingPathComponent("static/live.mpd"), box: "DASH")
    }

    /// Plays `url` for 10 s with `language` wanted: the French tone (660 Hz) for `fr`, else the
    /// default English one (440 Hz), and pictures.
    static func expectLanguage(_ language: String?, playing url: URL, box: String) async throws {
        let run = try await Self.play(
            url, seconds: 10, audio: { .wav("\($0.path)/out.wav") }, configure: { $0.audioLanguage = language })
        let heard = try Self.toneHeard(run.dir.appendingPathComponent("out.wav"))
        #expect(
            abs(heard - (language == "fr" ? 660 : 440)) < 1,
            "\(box): heard \(heard) Hz for language \(language ?? "default")")
        #expect(run.frames.count > 200, "\(box): \(run.frames.count) pictures")
        print(
            String(
                format: "%@, two languages, %@: %.1f Hz heard, %d pictures", box, language ?? "default", heard,
                run.frames.count))
    }

    /// HLS (ffmpeg's `var_stream_map`: one video variant, an audio group of `ENG`, the default,
    /// and `FRA`): the French rendition for `fr`, the default one without a choice.
    @Test(arguments: [nil, "fr"] as [String?])
    func ffmpegHLSWithTwoAudioLanguages(language: String?) async throws {
        let dir = try Tools.tempDirectory("fflanghls")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let encoder = try Self.ffmpegLive(
            in: dir, second: true,
            [
                "-f", "hls", "-hls_time", "1", "-hls_list_size", "10", "-hls_flags",
                "delete_segments+program_date_time",
                "-hls_segment_filename", "seg_%v_%05d.ts", "-master_pl_name", "master.m3u8",
                "-var_stream_map", "v:0,agroup:aud a:0,agroup:aud,language:ENG,default:yes a:1,agroup:aud,language:FRA",
                "out_%v.m3u8",
            ])
        defer { Tools.stop(encoder) }
        _ = try await Self.waitForSegments(dir.appendingPathComponent("out_2.m3u8"), count: 3)
        try await Self.expectLanguage(
            language, playing: origin.baseURL.appendingPathComponent("static/master.m3u8"), box: "HLS")
    }

    /// Live DASH with audio only (a radio stream) and with video only: the one track plays
    /// through, nothing ends, no error.
    @Test(arguments: ["audio", "video"])
    func ffmpegDASHWithOneTrack(_ only: String) async throws {
        let dir = try Tools.tempDirectory("ffonly")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let encoder = try Self.ffmpegLive(
            in: dir, video: only == "video", audio: only == "audio",
            [
                "-f", "dash", "-seg_duration", "1", "-streaming", "1", "-window_size", "30", "-use_timeline", "1",
                "-use_template", "1", "live.mpd",
            ])
        defer { Tools.stop(encoder) }
        try await Task.sleep(for: .seconds(4))
        let run = try await Self.play(
            origin.baseURL.appendingPathComponent("static/live.mpd"), seconds: 12, audio: { .wav("\($0.path)/out.wav") }
        )
        #expect(
            !run.events.contains(.stateChanged(.ended))
                && !run.events.contains { if case .error = $0 { true } else { false } }, "\(run.events)")
        if only == "audio" {
            #expect(run.frames.isEmpty)
            let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
            let start = try #require(pcm.firstSound(), "no sound")
            let body = pcm.channel(0)[start...].dropFirst(4800).dropLast(4800)
            #expect(abs(ToneAnalysis.frequency(body, sampleRate: pcm.sampleRate) - 440) < 1)
            let rms = ToneAnalysis.windowRMS(body, window: 480)
            #expect(
                rms.min()! > 0.5 * Stats.median(rms),
                "a dropout: quietest 10 ms at \(rms.min()! / Stats.median(rms)) of the level")
            #expect(
                Double(body.count) / Double(pcm.sampleRate) > 6,
                "\(Double(body.count) / Double(pcm.sampleRate)) s of sound")
            print(
                String(
                    format: "DASH audio only: %.1f s of 440 Hz without a dropout",
                    Double(body.count) / Double(pcm.sampleRate)))
        } else {
            try #require(run.frames.count > 250, "\(run.frames.count) pictures")
            let (share, inOrder) = Self.presentedShare(run.frames)
            #expect(
                share >= 0.99 && inOrder,
                "\(share * 100) % of the pictures, in order: \(inOrder); \(Self.holes(run.frames))")
            print(String(format: "DASH video only: %d pictures, %.1f %% of those due", run.frames.count, share * 100))
        }
    }
}
