import Foundation
import Marquee
import MarqueeFleet
import Synchronization
import TestSupport
import Testing

/// A playing box seen and steered from outside: Debian's Prometheus server scrapes its metrics
/// endpoint (each scraped frame counter is held against the pictures `frames.tsv` shows by
/// that moment), the control socket answers and steers it (a volume set through it halves the
/// sine in the WAV output), `marquee ctl` reads it, another uid is kept out, and the QoE record
/// matches what the outputs hold. (Run one test at a time, beside the venue suites: its
/// answer times are measured.)
@Suite(.serialized) struct FleetTests {
    @Test func prometheusScrapesAPlayingBoxAndTheControlSocketSteersIt() async throws {
        let prometheus = "/usr/bin/prometheus"
        try #require(FileManager.default.isExecutableFile(atPath: prometheus), "scripts/setup installs prometheus")
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("fleet")
        var options = PlayerOptions(sources: [origin.manifestURL(asset: "generated")])
        options.audioOutput = .wav(dir.appendingPathComponent("out.wav").path)
        options.videoOutput = .frames(dir.path)
        let player = try Player(options: options)
        let socketPath = dir.appendingPathComponent("control.sock").path
        let fleet = try await Fleet.start(
            player: player, customerId: "acme", metrics: ("127.0.0.1", 0), metricsToken: "s3cret",
            controlPath: socketPath)
        let metricsPort = try #require(fleet.metrics?.port)

        // Prometheus, as a box's operator runs it: scraping every second, with the token.
        let promPort = try Tools.freePort()
        let config = dir.appendingPathComponent("prometheus.yml")
        try """
        global: {scrape_interval: 1s, scrape_timeout: 900ms}
        scrape_configs: [{job_name: box, authorization: {credentials: s3cret}, static_configs: [{targets: \
        ["127.0.0.1:\(metricsPort)"]}]}]
        """.write(to: config, atomically: true, encoding: .utf8)
        let server = try Tools.spawn(
            prometheus,
            [
                "--config.file=\(config.path)", "--storage.tsdb.path=\(dir.appendingPathComponent("tsdb").path)",
                "--web.listen-address=127.0.0.1:\(promPort)",
            ])
        defer { Tools.stop(server) }
        // Its first scrape made before the box plays: a loaded machine took seconds to start
        // Prometheus (a CI run had one scrape in the box's 12 s).
        var scraping = false
        let upURL = "http://127.0.0.1:\(promPort)/api/v1/query?query=up%7Bjob%3D%22box%22%7D"
        for _ in 0..<300 where !scraping {
            let up = (try? await Tools.offPool { try Tools.run("curl", ["-sS", upURL]) }) ?? ""
            scraping = up.contains("\"value\":[") && up.contains("\"1\"]")
            if !scraping { try await Task.sleep(for: .milliseconds(100)) }
        }
        try #require(scraping, "Prometheus never scraped the box")

        let events = Task {
            for await event in player.events { fleet.telemetry.observe(event) }
        }
        let started = Date().timeIntervalSince1970
        try await player.play()
        try await Task.sleep(for: .seconds(3))

        // The control socket: `get latency` answered within 10 ms.
        let client = try ControlClient(path: socketPath)
        var times = [Double]()
        var latency: Double?
        for _ in 0..<20 {
            let t0 = Date()
            let answer = try client.request(["command": "get", "property": "latency", "id": 7])
            times.append(Date().timeIntervalSince(t0))
            #expect(answer["ok"] as? Bool == true && answer["id"] as? Int == 7, "\(answer)")
            latency = answer["data"] as? Double
        }
        #expect(abs((latency ?? 0) - 3) < 0.1, "latency read through the socket: \(String(describing: latency))")
        #expect(
            Stats.percentile(times, 90) < 0.010,
            "get latency answered in \(times.map { String(format: "%.2f ms", $0 * 1000) })")
        // A bad request: a typed answer, the connection stays.
        let bad = try client.request(["command": "get", "property": "loudness"])
        #expect(bad["ok"] as? Bool == false && (bad["error"] as? String)?.contains("loudness") == true, "\(bad)")
        let observer = try ControlClient(path: socketPath)
        #expect(try observer.request(["command": "observe", "property": "state"])["ok"] as? Bool == true)
        let observed = try observer.receive()
        #expect(
            observed?["event"] as? String == "propertyChange" && observed?["data"] as? String == "playing",
            "\(String(describing: observed))")

        // A scrape without the token is refused.
        let anonymous = try await Tools.offPool {
            try Tools.run(
                "curl", ["-s", "-o", "/dev/null", "-w", "%{http_code}", "http://127.0.0.1:\(metricsPort)/metrics"])
        }
        #expect(anonymous == "401", "a scrape without the token: HTTP \(anonymous)")

        // `marquee ctl`, the command-line client.
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee").path
        let ctl = try await Tools.offPool { try Tools.run(marquee, ["ctl", "--socket", socketPath, "get", "state"]) }
        #expect(ctl.contains("\"data\":\"playing\"") && ctl.contains("\"ok\":true"), "marquee ctl get state: \(ctl)")
        // A screenshot: the picture on screen, as a PNG written by `marquee ctl` (judged below).
        let shotFile = dir.appendingPathComponent("shot.png")
        let shotAsked = Date().timeIntervalSince1970
        let shotLine = try await Tools.offPool {
            try Tools.run(marquee, ["ctl", "--socket", socketPath, "screenshot", shotFile.path])
        }
        let shotAnswered = Date().timeIntervalSince1970
        let shot = try #require(
            (try JSONSerialization.jsonObject(with: Data(shotLine.utf8)) as? [String: Any])?["data"] as? [String: Any],
            "screenshot: \(shotLine)")
        let shotTime = try #require(shot["mediaTime"] as? Double)
        #expect(shot["width"] as? Int == 1280 && shot["height"] as? Int == 720, "\(shot)")
        // No playlist: `next` is a typed refusal.
        let next = try client.request(["command": "next"])
        #expect(next["ok"] as? Bool == false && (next["error"] as? String)?.contains("playlist") == true, "\(next)")

        // Another uid: the socket file (0600) keeps it out, and if the file is opened up, the
        // peer check does.
        let attrs = try FileManager.default.attributesOfItem(atPath: socketPath)
        #expect(
            (attrs[.posixPermissions] as? Int) == 0o600, "socket mode \(String(describing: attrs[.posixPermissions]))")
        let probe = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX)
            try:
                s.connect(sys.argv[1])
            except OSError as e:
                print("connect:", e.strerror); sys.exit(0)
            try:
                s.sendall(b'{"command": "get", "property": "latency"}\\n')
            except OSError:
                pass
            print("answer:", s.recv(4096).decode().strip())
            try:
                print("then:", "closed" if s.recv(4096) == b"" else "more")
            except ConnectionResetError:
                print("then: closed")
            """
        let asNobody = [
            "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c", probe, socketPath,
        ]
        let closed = try await Tools.offPool { try Tools.run("setpriv", asNobody) }
        #expect(closed.contains("connect: Permission denied"), "nobody at a 0600 socket: \(closed)")
        chmod(socketPath, 0o666)
        let refused = try await Tools.offPool { try Tools.run("setpriv", asNobody) }
        #expect(
            refused.contains("refused: uid 65534") && refused.hasSuffix("then: closed\n") && !refused.contains("data"),
            "nobody: \(refused)")

        // Steering: the volume halves from the moment it is set.
        try await Task.sleep(for: .seconds(1))
        #expect(try client.request(["command": "set", "property": "volume", "value": 0.5])["ok"] as? Bool == true)
        let volumeAt = Date().timeIntervalSince1970
        try await Task.sleep(for: .seconds(5))
        // As `marquee play` ends: the record closed, then the player stopped.
        let record = await fleet.stop()
        await player.stop()
        events.cancel()

        // What the outputs hold.
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let firstPicture = try #require(frames.first).wallTime
        let pcm = try PCM.wav(dir.appendingPathComponent("out.wav"))
        let first = try #require(pcm.firstSound())
        let left = pcm.channel(0)
        func rms(_ from: Double, _ to: Double) -> Double {  // seconds of sound from its start
            let a = first + Int(from * 48_000)
            let b = min(left.count, first + Int(to * 48_000))
            let slice = left[a..<b]
            return (slice.map { $0 * $0 }.reduce(0, +) / Double(slice.count)).squareRoot()
        }
        let change = volumeAt - firstPicture
        let ratio = rms(change + 0.3, change + 3) / rms(1, change - 0.3)
        #expect(
            abs(ratio - 0.5) < 0.03, "the sine's level after the volume was set to 0.5 through the socket: ×\(ratio)")

        // The screenshot is the picture that was on screen while it was asked for (presented
        // before the answer, replaced after the request), pixel for pixel: the asset's picture
        // of the same md5, converted to RGB by ffmpeg (BT.709, as an untagged HD picture is).
        let shotRow = try #require(
            frames.firstIndex { abs($0.pts - shotTime) < 0.001 },
            "the screenshot's picture \(shotTime) is in frames.tsv")
        #expect(
            frames[shotRow].wallTime <= shotAnswered
                && (shotRow + 1 == frames.count || frames[shotRow + 1].wallTime >= shotAsked - 0.001),
            "the screenshot's picture was shown \(frames[shotRow].wallTime - shotAsked) s after the request")
        let asset = Tools.packageRoot.appendingPathComponent("assets/generated")
        let whole = dir.appendingPathComponent("asset.mp4")
        var bytes = try Data(contentsOf: asset.appendingPathComponent("init-0.mp4"))
        for n in 1...16 { bytes += try Data(contentsOf: asset.appendingPathComponent("seg-0-\(n).m4s")) }
        try bytes.write(to: whole)
        let reference = try await Tools.offPool { try ReferenceDecode.frames(of: whole) }
        let index = try #require(
            reference.firstIndex { $0.md5 == frames[shotRow].md5 }, "the picture's md5 is the asset's")
        @Sendable func rgb(_ input: URL, select: Int? = nil) throws -> [UInt8] {
            let out = dir.appendingPathComponent("rgb-\(select ?? -1).raw")
            var filter = """
                scale=in_color_matrix=bt709:in_range=tv:out_range=pc:flags=bicubic+accurate_rnd+full_chroma_int,\
                format=rgb24
                """
            if let select { filter = "select=eq(n\\,\(select))," + filter }
            _ = try Tools.run(
                "ffmpeg",
                ["-v", "error", "-y", "-i", input.path, "-vf", filter, "-frames:v", "1", "-f", "rawvideo", out.path])
            return Array(try Data(contentsOf: out))
        }
        func psnr(_ a: [UInt8], _ b: [UInt8]) -> Double {
            guard a.count == b.count, !a.isEmpty else { return 0 }
            var sum = 0.0
            for i in a.indices {
                let d = Double(a[i]) - Double(b[i])
                sum += d * d
            }
            return sum == 0 ? 99 : 10 * log10(255 * 255 / (sum / Double(a.count)))
        }
        _ = try await Tools.offPool {
            try Tools.run(
                "ffmpeg",
                [
                    "-v", "error", "-y", "-i", shotFile.path, "-f", "rawvideo", "-pix_fmt", "rgb24",
                    dir.appendingPathComponent("shot.raw").path,
                ])
        }
        let mine = Array(try Data(contentsOf: dir.appendingPathComponent("shot.raw")))
        let same = psnr(mine, try await Tools.offPool { try rgb(whole, select: index) })
        let neighbour = psnr(
            mine,
            try await Tools.offPool { try rgb(whole, select: index + 1 < reference.count ? index + 1 : index - 1) })
        #expect(same >= 45 && neighbour < 30, "screenshot vs its picture \(same) dB, vs the next \(neighbour) dB")

        // Each scrape's presented-frame counter against the pictures shown by its moment.
        let url = "http://127.0.0.1:\(promPort)/api/v1/query?query=marquee_frames_presented_total%5B60s%5D"
        let data = Data(try await Tools.offPool { try Tools.run("curl", ["-sS", url]) }.utf8)
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        let result = try #require(
            ((json["data"] as? [String: Any])?["result"] as? [[String: Any]])?.first,
            "\(String(decoding: data, as: UTF8.self))")
        let samples = try #require(result["values"] as? [[Any]]).map { ($0[0] as! Double, Double($0[1] as! String)!) }
        #expect(samples.count >= 4, "\(samples.count) scrapes")
        var worst = 0.0
        for (time, value) in samples {
            let shown = Double(frames.filter { $0.wallTime <= time }.count)
            worst = max(worst, abs(value - shown))
        }
        #expect(worst <= 30, "a scraped counter off the pictures shown at its moment by \(worst) frames")

        // The QoE record: what the outputs and the clock say.
        #expect(
            record.customerId == "acme" && record.attempts == 1 && record.stalls == 0 && !record.exitedBeforeVideoStart
                && !record.startFailed)
        let startup = try #require(record.startupTime)
        // Startup ends at the first picture the viewer saw: a join's still when the start needed
        // a catch-up (the first-frame event reports it), not the first due picture after it (on
        // a loaded machine the catch-up took 0.12 s once, and the two were compared). The two
        // clocks read the same instant; 0.1 s holds the test's own reading of play()'s start.
        let seen = try #require(
            try FramesFile.read(dir.appendingPathComponent("frames.tsv"), includingStill: true).first
        ).wallTime
        #expect(
            abs(startup - (seen - started)) < 0.1,
            "startup \(startup) s; the first picture came \(seen - started) s after play()")
        #expect(
            abs(record.framesPresented - frames.count) <= 3,
            "QoE \(record.framesPresented) pictures, frames.tsv \(frames.count)")
        #expect(record.latency.samples >= 20 && record.latency.maxDistance < 0.05, "\(record.latency)")
        #expect(
            abs(record.playingSeconds - (frames.last!.wallTime - firstPicture)) < 0.5,
            "playing \(record.playingSeconds) s")
        print(
            String(
                format: """
                    fleet: %d scrapes, counter off by ≤ %.0f frames; get latency p50 %.2f ms, p90 %.2f ms; volume \
                    ×%.3f; startup %.3f s; screenshot %.1f dB (next picture %.1f dB), answered in %.0f ms
                    """,
                samples.count, worst, Stats.median(times) * 1000, Stats.percentile(times, 90) * 1000, ratio, startup,
                same, neighbour,
                (shotAnswered - shotAsked) * 1000))
    }

    /// A play that never shows a picture: its source answers 404. Stopped after 2 s, its record
    /// is an exit before video start, with no startup time and the errors by kind; an interval
    /// of the scrape says it is not playing.
    @Test func aPlayThatNeverStartsIsAnExitBeforeVideoStart() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let missing = origin.baseURL.appendingPathComponent("live/nothing-here/manifest.mpd")
        let player = try Player(options: PlayerOptions(sources: [missing], audioOutput: .null, videoOutput: .headless))
        let fleet = try await Fleet.start(player: player, metrics: ("127.0.0.1", 0))
        let port = try #require(fleet.metrics?.port)
        let events = Task {
            for await event in player.events { fleet.telemetry.observe(event) }
        }
        try? await player.play()
        try await Task.sleep(for: .seconds(2))
        let scrape = try await Tools.offPool { try Tools.run("curl", ["-sS", "http://127.0.0.1:\(port)/metrics"]) }
        let record = await fleet.stop()
        await player.stop()
        events.cancel()
        #expect(record.exitedBeforeVideoStart && record.startupTime == nil && record.framesPresented == 0, "\(record)")
        #expect((record.errors["network"] ?? 0) + (record.errors["manifest"] ?? 0) >= 1, "errors: \(record.errors)")
        #expect(
            scrape.contains("\nmarquee_playing 0.0\n") && scrape.contains("\nmarquee_frames_presented_total 0\n"),
            "\(scrape)")
        #expect(
            scrape.contains("marquee_errors_total{code=\"network\"}")
                || scrape.contains("marquee_errors_total{code=\"manifest\"}"), "\(scrape)")
    }

    /// A stall as the record and the metrics tell it, against the outputs: the origin answers
    /// 503 to everything of the stream for 4 s, longer than the buffer lasts. The longest gap
    /// between pictures in frames.tsv is the stall the QoE record counts (once, its length
    /// within a quarter second: the status is sampled 4 times a second), and the silence the
    /// core played meanwhile (`marquee_audio_underrun_seconds`) is the run of zeros in the WAV.
    @Test func aStallIsCountedAsTheOutputsShowIt() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let now = Date().timeIntervalSince1970
        let url = origin.manifestURL(
            asset: "generated",
            options: ["ast_\(Int(now) - 3600)", String(format: "outage_%.3f-%.3f", now + 4, now + 8)])
        let dir = try Tools.tempDirectory("fleet-stall")
        var options = PlayerOptions(
            sources: [url], audioOutput: .wav(dir.appendingPathComponent("out.wav").path),
            videoOutput: .frames(dir.path))
        options.cmcd = CMCDOptions(transmission: .query)
        let player = try Player(options: options)
        let fleet = try await Fleet.start(player: player, metrics: ("127.0.0.1", 0))
        let port = try #require(fleet.metrics?.port)
        let states = Mutex<[(at: Double, state: PlaybackState)]>([])
        let events = Task {
            for await event in player.events {
                fleet.telemetry.observe(event)
                if case .stateChanged(let state) = event {
                    states.withLock { $0.append((Date().timeIntervalSince1970, state)) }
                }
            }
        }
        try await player.play()
        try await Task.sleep(for: .seconds(13))
        let scrape = try await Tools.offPool { try Tools.run("curl", ["-sS", "http://127.0.0.1:\(port)/metrics"]) }
        let record = await fleet.stop()
        await player.stop()
        events.cancel()

        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let gaps = zip(frames, frames.dropFirst()).map { $1.wallTime - $0.wallTime }
        let gap = gaps.max() ?? 0
        try #require(gap > 1, "no stall: the longest gap between pictures is \(gap) s")
        // The player's state: buffering half a second after the last picture, playing again
        // with the next one (or with the sound, which comes back up to 0.1 s before it).
        let stopped = frames[gaps.firstIndex(of: gap)!].wallTime
        let resumed = stopped + gap
        let changes = states.withLock { $0 }.filter { $0.at > frames[0].wallTime + 0.5 }
        let buffering = changes.first { $0.state == .buffering && $0.at > stopped }?.at ?? 0
        // (Playing again "as soon as anything moves": sound that comes back before the pictures
        // may say playing for a moment mid-outage; the last playing before the pictures resumed
        // is the one that lasts.)
        let playing = changes.last { $0.state == .playing && $0.at > buffering && $0.at < resumed + 0.4 }?.at ?? 0
        #expect(
            buffering - stopped > 0.4 && buffering - stopped < 1.0 && playing - resumed > -0.25
                && playing - resumed < 0.4,
            """
            pictures stopped at +\(stopped - frames[0].wallTime) s for \(gap) s; state changes \
            \(changes.map { ($0.at - frames[0].wallTime, $0.state) })
            """
        )
        // CMCD: the requests made while it was buffering say so (`bs`), none before.
        let log = try await Tools.offPool {
            try Tools.run("curl", ["-sS", origin.baseURL.appendingPathComponent("origin/requests").absoluteString])
        }
        let requests = try #require(try JSONSerialization.jsonObject(with: Data(log.utf8)) as? [[String: Any]])
        func starved(_ e: [String: Any]) -> Bool { (e["cmcd"] as? String ?? "").split(separator: ",").contains("bs") }
        let flagged = requests.filter(starved).compactMap { $0["time"] as? Double }
        // bs says "starved since the last request": a request carries it when it is made while
        // the player says buffering, or is the first after a buffering spell ended.
        let times = requests.compactMap { $0["time"] as? Double }
        var spells = [(from: Double, to: Double)]()
        for (i, change) in changes.enumerated() where change.state == .buffering {
            let end = changes[(i + 1)...].first { $0.state != .buffering }?.at ?? .infinity
            // (the first request after the spell, and the others of its burst: audio and video
            // segments are asked for together)
            spells.append((change.at, times.filter { $0 > end }.min().map { $0 + 0.05 } ?? .infinity))
        }
        #expect(
            !flagged.isEmpty && flagged.allSatisfy { t in spells.contains { t > $0.from - 0.05 && t <= $0.to } },
            """
            bs at \(flagged.map { $0 - stopped }) s after the pictures stopped; buffering spells \
            \(spells.map { ($0.from - stopped, $0.to - stopped) }) (to the first request after each)
            """
        )
        // Every stop of the pictures longer than a second is a stall, and no stall is counted
        // without one of 0.4 s (the player says buffering 0.4–1.0 s after the last picture). A
        // loaded box can stall again as the outage ends: each one counts, and its time.
        let long = gaps.filter { $0 > 1 }
        let possible = gaps.filter { $0 > 0.4 }
        #expect(
            (long.count...possible.count).contains(record.stalls) && record.stalls >= 1,
            "stalls: \(record.stalls); picture gaps over 0.4 s: \(possible)")
        #expect(
            record.stalledSeconds > long.reduce(0, +) - 0.25 * Double(long.count)
                && record.stalledSeconds < possible.reduce(0, +) + 0.25 * Double(possible.count),
            "stalled \(record.stalledSeconds) s; the pictures stopped for \(possible) s")
        let expectedRatio = record.stalledSeconds / (record.stalledSeconds + record.playingSeconds)
        #expect(abs(record.rebufferRatio - expectedRatio) < 1e-9 && record.rebufferRatio > 0.05)
        // The silence played: runs of zero samples (10 ms or longer) after the sound began.
        let pcm = try PCM.wav(dir.appendingPathComponent("out.wav"))
        let left = pcm.channel(0)
        let first = try #require(pcm.firstSound())
        var silent = 0
        var run = 0
        var runs = 0
        for x in left[first...] {
            if x == 0 {
                run += 1
            } else {
                if run >= 480 {
                    silent += run
                    runs += 1
                }
                run = 0
            }
        }
        let heard = Double(silent) / 48_000
        let line = try #require(
            scrape.split(separator: "\n").first { $0.hasPrefix("marquee_audio_underrun_seconds ") }, "\(scrape)")
        let metric = try #require(Double(line.split(separator: " ")[1]))
        #expect(heard > 0.5 && abs(metric - heard) < 0.1, "under-run metric \(metric) s; silence in the WAV \(heard) s")
        #expect(scrape.contains("\nmarquee_stalls_total \(record.stalls)\n"), "\(scrape)")
        // Each under-run is heard as an interruption of the tone: a silence, or (when the ring
        // ran dry for less than a period) a cut faded out and in within milliseconds. A latency
        // jump's fade interrupts it too without being an under-run. The device (a WAV file)
        // never failed.
        let underruns =
            scrape.split(separator: "\n").first { $0.hasPrefix("marquee_audio_underruns_total ") }.flatMap {
                Int($0.split(separator: " ")[1])
            } ?? 0
        let interruptions = ToneAnalysis.interruptions(left[first...], window: 64, below: 0.8)
        #expect(
            runs >= 1 && underruns >= 1 && underruns <= interruptions,
            """
            \(underruns) under-runs; \(interruptions) interruptions of the tone, \(runs) runs of silence in the WAV; \
            \(scrape)
            """)
        #expect(
            scrape.contains("\nmarquee_audio_device_ok 1.0\n") && scrape.contains("\nmarquee_audio_xruns_total 0\n"),
            "\(scrape)")
        print(
            String(
                format: """
                    stall: pictures stopped %.2f s, recorded %.2f s (ratio %.3f); silence %.2f s in the WAV (%d runs, \
                    %d interruptions), metric %.2f s (%d under-runs)
                    """,
                gap, record.stalledSeconds, record.rebufferRatio, heard, runs, interruptions, metric, underruns))
    }
}
