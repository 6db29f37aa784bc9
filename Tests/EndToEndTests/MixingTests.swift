import Foundation
import Marquee
import MarqueeOrigin
import TestSupport
import Testing

/// Mute music and ad breaks from the stream's own events, read from the output WAV: the stream
/// is a 440 Hz tone, the mute music 660 Hz (a file whose length is not a whole number of
/// cycles, so its loop point would click without the cross-fade), the ad creative 880 Hz.
extension LivePlaybackTests {
    /// Amplitudes of the three tones in 50 ms windows every 10 ms (50 ms holds whole cycles of
    /// 440, 660 and 880 Hz at 48 kHz, so the tones do not leak into each other's estimates).
    struct ToneTrack {
        static let hop = 480, window = 2400
        var a440: [Double] = [], a660: [Double] = [], a880: [Double] = []

        init(_ x: [Double], from start: Int) {
            for s in stride(from: start, to: x.count - Self.window, by: Self.hop) {
                let w = x[s..<(s + Self.window)]
                a440.append(ToneAnalysis.power(w, frequency: 440, sampleRate: 48_000).squareRoot())
                a660.append(ToneAnalysis.power(w, frequency: 660, sampleRate: 48_000).squareRoot())
                a880.append(ToneAnalysis.power(w, frequency: 880, sampleRate: 48_000).squareRoot())
            }
        }

        /// Runs (start, end) in seconds from the track start where `a` > `level`.
        static func runs(_ a: [Double], above level: Double) -> [(start: Double, end: Double)] {
            var out: [(Double, Double)] = []
            var begin: Int?
            for (i, v) in a.enumerated() {
                if v > level, begin == nil { begin = i }
                if v <= level, let b = begin {
                    out.append((Double(b) * 0.01, Double(i) * 0.01))
                    begin = nil
                }
            }
            if let b = begin { out.append((Double(b) * 0.01, Double(a.count) * 0.01)) }
            // A dip under the level for less than 0.1 s (a loop point during a fade) is not a gap.
            var merged: [(start: Double, end: Double)] = []
            for r in out {
                if let last = merged.last, r.0 - last.end < 0.1 {
                    merged[merged.count - 1].end = r.1
                } else {
                    merged.append((r.0, r.1))
                }
            }
            return merged
        }

        /// Seconds from the first window above `low`×peak to the first above `high`×peak after `from`.
        static func rise(_ a: [Double], from: Double, peak: Double, low: Double = 0.1, high: Double = 0.9) -> Double? {
            let i0 = Int(from / 0.01)
            guard let l = a[i0...].firstIndex(where: { $0 > low * peak }),
                let h = a[l...].firstIndex(where: { $0 > high * peak })
            else { return nil }
            return Double(h - l) * 0.01
        }
    }

    static func makeTone(_ frequency: Int, seconds: Double, to url: URL) throws {
        _ = try Tools.run(
            "ffmpeg",
            [
                "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
                "sine=frequency=\(frequency):sample_rate=48000:duration=\(seconds)",
                "-af", "pan=stereo|c0=c0|c1=c0",
            ] + (url.pathExtension == "m4a" ? ["-c:a", "aac", "-b:a", "128k"] : []) + [url.path])
    }

    @Test func muteMusicAndAdBreakFromTheStreamsEvents() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let dir = try Tools.tempDirectory("mix")
        let music = dir.appendingPathComponent("music.m4a")
        let ad = dir.appendingPathComponent("ad.wav")
        try Self.makeTone(660, seconds: 2.31, to: music)  // 1524.6 cycles: the loop point is mid-cycle
        try Self.makeTone(880, seconds: 5, to: ad)  // longer than the 3 s break: cut by its end
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        // Every 20 s of presentation time: muted 6…10, an ad break 14…17 (SCTE-35 in emsg).
        // AST puts the start (now − 3 s target) at 2 s into a cycle.
        let ast = Int(Date().timeIntervalSince1970) - 3 - 2 - 3600
        let url = origin.manifestURL(asset: "generated", options: ["ast_\(ast)", "mute_20-6-4", "ad_20-14-3"])
        var options = PlayerOptions(
            sources: [url], targetLatency: 3, audioOutput: .wav(dir.appendingPathComponent("out.wav").path))
        options.mixing = MixOptions(muteMusic: music, adCreatives: [ad])
        options.mixing.cacheDirectory = dir.appendingPathComponent("cache")
        let player = try Player(options: options)
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()
        // Until 18 s into the cycle (the ad is over by 17 s + its 0.25 s ramp).
        for _ in 0..<400 {
            if let p = player.status.position, p.truncatingRemainder(dividingBy: 20) >= 18.3, p > Double(3600) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        await player.stop()
        listener.cancel()

        let pcm = try PCM.wav(dir.appendingPathComponent("out.wav"))
        let x = pcm.channel(0)
        let start = try #require(pcm.firstSound()) + 4800  // 100 ms past the onset
        let tones = ToneTrack(x, from: start)
        let nominal = 32768.0 / 8  // lavfi's sine: amplitude 1/8
        let muteRuns = ToneTrack.runs(tones.a660, above: nominal / 2)
        let adRuns = ToneTrack.runs(tones.a880, above: nominal / 2)
        let streamGaps = ToneTrack.runs(tones.a440.map { nominal - $0 }, above: nominal / 2)  // 440 below half
        try #require(muteRuns.count == 1 && adRuns.count == 1, "660 Hz \(muteRuns), 880 Hz \(adRuns)")
        let (mute, adRun) = (muteRuns[0], adRuns[0])
        // Equal-power 1 s cross-fade: the music passes half level 1/3 s after the mute starts
        // and 2/3 s after it ends: 4.333 s above half; the stream is under half for 3.667 s.
        #expect(abs((mute.end - mute.start) - 4.333) < 0.04, "mute music above half for \(mute.end - mute.start) s")
        // Linear 0.25 s ramps: the ad is above half for exactly the 3 s break.
        #expect(abs((adRun.end - adRun.start) - 3.0) < 0.04, "ad above half for \(adRun.end - adRun.start) s")
        // The ad starts 8 s after the mute in media time (half-level points: 8 − 1/3 + 1/8).
        #expect(
            abs((adRun.start - mute.start) - 7.792) < 0.04, "ad began \(adRun.start - mute.start) s after the music")
        try #require(streamGaps.count == 2, "440 Hz gaps \(streamGaps)")
        #expect(
            abs((streamGaps[0].end - streamGaps[0].start) - 3.667) < 0.04,
            "stream under half for \(streamGaps[0]) during the mute")
        #expect(
            abs((streamGaps[1].end - streamGaps[1].start) - 3.0) < 0.04,
            "stream under half for \(streamGaps[1]) during the ad")
        // Nothing else is heard where it should not be.
        let i = { (t: Double) in Int(t / 0.01) }
        // (4 %: the loop cross-fade's brief dip spreads a little of the 660 Hz into neighbours.)
        #expect(tones.a880[i(mute.start)..<i(mute.end)].allSatisfy { $0 < nominal * 0.04 })
        #expect(tones.a660[i(adRun.start + 0.3)..<i(adRun.end - 0.3)].allSatisfy { $0 < nominal * 0.02 })
        #expect(tones.a440[i(adRun.start + 0.3)..<i(adRun.end - 0.3)].allSatisfy { $0 < nominal * 0.02 })
        // The music keeps playing through its loop points: its end and start are 0.6 cycle apart,
        // so the 30 ms cross-fade cancels part of this pure tone for a moment (down to ~70 % in a
        // 50 ms window), smoothly — no gap, no click (checked below).
        let held = tones.a660[i(mute.start + 1.0)..<i(mute.end - 1.0)]
        #expect(held.allSatisfy { $0 > nominal * 0.5 }, "the music dips to \(held.min() ?? 0) (a gap at a loop point?)")
        // Ramp shapes, 10 %→90 %: equal-power sin(xπ/2) takes 0.649 s of the 1 s fade (linear 0.8),
        // linear 0.25 s takes 0.2 s.
        let musicRise = try #require(ToneTrack.rise(tones.a660, from: mute.start - 1, peak: nominal))
        #expect(abs(musicRise - 0.649) < 0.05, "music 10–90 % in \(musicRise) s")
        let adRise = try #require(ToneTrack.rise(tones.a880, from: adRun.start - 0.5, peak: nominal))
        #expect(abs(adRise - 0.2) < 0.04, "ad 10–90 % in \(adRise) s")
        // No click anywhere: the second difference stays near that of the tones themselves
        // (a step at a loop point or a cut would be thousands).
        var worst = 0.0
        var worstAt = 0
        for n in (start + 1)..<(x.count - 1) where abs(x[n + 1] - 2 * x[n] + x[n - 1]) > worst {
            worst = abs(x[n + 1] - 2 * x[n] + x[n - 1])
            worstAt = n
        }
        // The tones' own: 880 Hz at 4096 gives 4096·(2π·880/48000)² = 54.
        #expect(worst < 80, "largest second difference \(worst) at \(Double(worstAt - start) / 48000) s")
        // Events, in order.
        let names = log.events.compactMap { e -> String? in
            switch e {
            case .streamerMuted: "muted"
            case .streamerUnmuted: "unmuted"
            case .muteMusicStarted: "music"
            case .muteMusicStopped: "music-off"
            case .adStarted(let b): "ad \(Int((b.end - b.start).rounded()))"
            case .adFinished: "ad-off"
            default: nil
            }
        }
        #expect(names == ["muted", "music", "unmuted", "music-off", "ad 3", "ad-off"])
    }
}

/// The user delay and pause on a live stream: segments are kept as they are fetched, so the
/// delay can move back up to what was collected; moving it across an event undoes (back) or
/// applies (forward) it, and the event replays when the delayed position reaches it. Measured
/// from frames.tsv (latency of every presented frame) and the events.
extension LivePlaybackTests {
    @Test func delayAndPauseReplayEventsAndJumpsApplyOrUndoThem() async throws {
        try #require(
            FileManager.default.fileExists(atPath: Self.generated.appendingPathComponent("manifest.mpd").path),
            "run scripts/make-assets")
        let dir = try Tools.tempDirectory("delay")
        let music = dir.appendingPathComponent("music.wav")
        try Self.makeTone(660, seconds: 3, to: music)
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        // Muted 8…12 of every 20 s; the start (now − 3 s) is 2 s into a cycle.
        let ast = Int(Date().timeIntervalSince1970) - 3 - 2 - 3600
        let url = origin.manifestURL(asset: "generated", options: ["ast_\(ast)", "mute_20-8-4"])
        var options = PlayerOptions(
            sources: [url], targetLatency: 3, audioOutput: .wav(dir.appendingPathComponent("out.wav").path),
            videoOutput: .frames(dir.path))
        options.mixing = MixOptions(muteMusic: music)
        options.maxDelay = 60  // kept in memory (the default keeps nothing)
        let player = try Player(options: options)
        #expect(throws: PlayerError.self) { try player.setDelay(1) }  // nothing plays yet
        let log = EventLog()
        let listener = Task { for await e in player.events { log.append(e) } }
        try await player.play()
        func waitCycle(_ at: Double) async throws {
            for _ in 0..<600 {
                if let p = player.status.position, p > 3600, p.truncatingRemainder(dividingBy: 20) >= at { return }
                try await Task.sleep(for: .milliseconds(20))
            }
            Issue.record("position never reached \(at) s into the cycle")
        }
        func mark() -> Int { log.events.count }
        try await waitCycle(9.2)  // live, 1.2 s into the mute
        let available = player.status.availableDelay
        #expect(available > 5, "only \(available) s collected after ~7 s of playback")
        #expect(throws: PlayerError.self) { try player.setDelay(-1) }
        let backAt = Date().timeIntervalSince1970
        let back = mark()
        #expect(try player.setDelay(5) == 5)  // back to 4.2, before the mute: undone
        try await Task.sleep(for: .milliseconds(500))  // the position reported moves with the first samples heard
        try await waitCycle(6.5)
        let forwardAt = Date().timeIntervalSince1970
        let forward = mark()
        #expect(try player.setDelay(0) == 0)  // forward to 11.5, into the mute: applied
        try await Task.sleep(for: .milliseconds(500))
        try await waitCycle(13.8)  // the mute ends at 12 (as it plays)
        let pausedAt = Date().timeIntervalSince1970
        let before = try #require(player.status.position)
        try player.pause()
        #expect(player.state == .paused)
        try await Task.sleep(for: .seconds(2))
        let resumedAt = Date().timeIntervalSince1970
        player.resume()
        try await Task.sleep(for: .seconds(2.5))
        let clamped = try player.setDelay(3000)  // far beyond what is kept and what the 60 s window serves: clamped
        await player.stop()
        listener.cancel()
        #expect(clamped > 40 && clamped < 60, "delay clamped to \(clamped) s")

        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        func latencies(_ from: Double, _ to: Double) -> [Double] {
            frames.filter { $0.wallTime >= from && $0.wallTime < to }.map { $0.wallTime - Double(ast) - $0.pts }
        }
        // Each setting is held to the frame once it has settled (1 s after the change).
        let delayed = latencies(backAt + 1, forwardAt)
        try #require(delayed.count > 20)
        #expect(delayed.allSatisfy { abs($0 - 8) < 0.03 }, "delay 5: latency \(delayed.min()!)…\(delayed.max()!)")
        let live = latencies(forwardAt + 1, pausedAt)
        try #require(live.count > 20)
        #expect(live.allSatisfy { abs($0 - 3) < 0.03 }, "delay 0: latency \(live.min()!)…\(live.max()!)")
        // Paused: nothing presented; resumed where it stopped, 2 s later than live.
        #expect(frames.filter { $0.wallTime > pausedAt + 0.2 && $0.wallTime < resumedAt }.isEmpty)
        let after = frames.filter { $0.wallTime > resumedAt }
        let first = try #require(after.first)
        #expect(abs(first.pts - before) < 0.2, "resumed at \(first.pts), paused at \(before)")
        let resumed = latencies(resumedAt + 1, .infinity)
        try #require(resumed.count > 20)
        #expect(
            resumed.allSatisfy { abs($0 - 5) < 0.1 },
            "after a 2 s pause: latency \(resumed.min()!)…\(resumed.max()!)"
        )

        func names(_ events: ArraySlice<PlayerEvent>) -> [String] {
            events.compactMap { e in
                switch e {
                case .streamerMuted: "muted"
                case .streamerUnmuted: "unmuted"
                case .muteMusicStarted: "music"
                case .muteMusicStopped: "music-off"
                default: nil
                }
            }
        }
        let all = log.events
        #expect(names(all[..<back]) == ["muted", "music"])  // live, into the mute
        #expect(names(all[back..<forward]) == ["unmuted", "music-off"])  // delayed back before it: undone
        // applied, then it ended
        #expect(names(all[forward...]).prefix(4) == ["muted", "music", "unmuted", "music-off"])
    }
}
