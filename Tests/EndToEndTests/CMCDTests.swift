import Foundation
import Marquee
import MarqueeOrigin
import Synchronization
import TestSupport
import Testing

/// Common Media Client Data (CTA-5004) as the CDN sees it: the origin's request log
/// (`/origin/requests`) holds what each request of a playing box carried — as the `CMCD` query
/// argument on live DASH, as `CMCD-*` headers on live HLS — and each key is held against what
/// the player did: its session id, the segment's kind, bitrate and duration from the manifest,
/// startup only before the first picture, the buffer it had.
@Suite struct CMCDTests {
    @Test(arguments: [CMCDOptions.Transmission.query, .headers])
    func everyRequestCarriesTheSessionAndEachSegmentItsObject(_ transmission: CMCDOptions.Transmission) async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let dash = transmission == .query
        // DASH: a ladder of five video renditions (the DASH-IF test picture), so the measured
        // throughput (mtp) has an estimate to report.
        let url =
            dash
            ? origin.manifestURL(asset: "testpic_abr")
            : origin.manifestURL(asset: "generated").deletingLastPathComponent().appendingPathComponent("master.m3u8")
        let dir = try Tools.tempDirectory("cmcd")
        var options = PlayerOptions(sources: [url], audioOutput: .null, videoOutput: .frames(dir.path))
        options.cmcd = CMCDOptions(transmission: transmission, contentId: "lobby \"1\"")
        // the ladder's lightest (its estimate is still measured): a light test beside the others
        if dash { options.selectedQuality = "360" }
        let player = try Player(options: options)
        try await player.play()
        // 4 s of playing after the first picture (what the checks below look at: requests
        // before it, and after it with a buffer), however long the start took: on a loaded
        // machine a fixed 6 s from play() once left no request after the first picture + 1 s.
        let deadline = ContinuousClock.now + .seconds(15)
        while player.status.framesPresented == 0, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(4))
        let qualities = player.qualities
        await player.stop()
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let firstPicture = try #require(frames.first).wallTime

        let log = try await Tools.offPool {
            try Tools.run("curl", ["-sS", origin.baseURL.appendingPathComponent("origin/requests").absoluteString])
        }
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(log.utf8)) as? [[String: Any]])
        // Each request's keys, from the query argument or the four headers.
        func keys(_ e: [String: Any]) -> [String: String] {
            let text =
                dash
                ? (e["cmcd"] as? String ?? "")
                : ((e["cmcdHeaders"] as? [String: String]) ?? [:]).values.joined(separator: ",")
            var out = [String: String]()
            for pair in text.split(separator: ",") {
                let kv = pair.split(separator: "=", maxSplits: 1)
                out[String(kv[0])] = kv.count > 1 ? String(kv[1]) : "true"
            }
            return out
        }
        let requests = entries.filter { ($0["path"] as? String)?.hasPrefix("/live/") == true }
        try #require(requests.count >= 6, "\(requests.count) requests logged")
        for e in requests {
            let k = keys(e)
            let path = e["path"] as! String
            #expect(
                k["sid"] == "\"\(player.sessionId)\"" && k["cid"] == "\"lobby \\\"1\\\"\""
                    && k["sf"] == (dash ? "d" : "h"), "\(path): \(k)")
            if !dash {  // the four headers, each only its own keys
                let headers = (e["cmcdHeaders"] as? [String: String]) ?? [:]
                #expect(
                    headers["cmcd-session"]?.contains("sid=") == true && headers["cmcd-object"]?.contains("ot=") == true
                        && headers["cmcd-request"]?.contains("sid") != true, "\(path): \(headers)")
            }
            if path.hasSuffix(".mpd") || path.hasSuffix(".m3u8") {
                #expect(k["ot"] == "m", "\(path): \(k)")
            } else if path.hasSuffix("init.mp4") {
                #expect(k["ot"] == "i", "\(path): \(k)")
            } else if path.hasSuffix(".m4s") {
                // Its representation (the path's directory: DASH's rep id; HLS's variant).
                let kind = k["ot"] == "v" ? "video" : k["ot"] == "a" ? "audio" : "?"
                let rates = Set(qualities.filter { $0.kind == kind }.map { $0.bandwidth / 1000 })
                #expect(rates.contains(Int(k["br"] ?? "") ?? -1), "\(path): br \(k["br"] ?? "-") of \(kind) \(rates)")
                // 2 s segments (HLS lists 2.006 s for audio), the buffer in whole 100 ms.
                #expect(
                    (1900...2100).contains(Int(k["d"] ?? "") ?? 0)
                        && k["bl"].flatMap(Int.init).map { $0 % 100 == 0 } == true, "\(path): \(k)")
                let time = e["time"] as! Double
                // Startup until the first picture; never after it (a second's margin both ways).
                if time < firstPicture - 0.05 {
                    #expect(k["su"] == "true" || (k["st"] == nil), "\(path) before the first picture: \(k)")
                }
                // (su again only while it is buffering: no new picture for 0.5 s before the request)
                let rebuffering = frames.last { $0.wallTime <= time }.map { time - $0.wallTime >= 0.45 } ?? true
                if time > firstPicture + 1 {
                    #expect((k["su"] == nil || rebuffering) && k["st"] == "l", "\(path) after the first picture: \(k)")
                }
            }
        }
        let segments = requests.filter { ($0["path"] as! String).hasSuffix(".m4s") }
        #expect(segments.contains { keys($0)["ot"] == "v" } && segments.contains { keys($0)["ot"] == "a" })
        // The buffer: nothing before the first segments; once playing at 3 s behind live with
        // 2 s segments, each next one is listed (and asked for) with about a second left.
        if dash {  // mtp (kb/s, in 100s) once the first segments measured the link
            // (on every video segment: the video has a choice of renditions; the one audio
            // rendition has none to inform)
            let measured = segments.dropFirst(4).filter { keys($0)["ot"] == "v" }.map {
                keys($0)["mtp"].flatMap(Int.init)
            }
            #expect(
                !measured.isEmpty && measured.allSatisfy { ($0 ?? 0) >= 100 && ($0 ?? 0) % 100 == 0 },
                "mtp over the run: \(measured)")
        }
        let buffers = segments.compactMap { keys($0)["bl"].flatMap(Int.init) }
        let later = segments.filter { ($0["time"] as! Double) > firstPicture + 1 }.compactMap {
            keys($0)["bl"].flatMap(Int.init)
        }
        // (Beside the parallel suites a request once listed 0.4 s: the fetch ahead came late on
        // a loaded machine. What is held is that it is the buffer, never nothing once playing.)
        #expect(
            buffers.first == 0 && !later.isEmpty && later.allSatisfy { (100...3000).contains($0) },
            "bl over the run: \(buffers)")
        print(
            """
            cmcd \(transmission.rawValue): \(requests.count) requests, bl \(buffers), e.g. \
            \(keys(segments.last ?? [:]))
            """
        )
    }
}

extension LivePlaybackTests {
    /// The same from a CDN we did not write: Debian's nginx serving what ffmpeg's DASH muxer
    /// writes live (a packager we did not write either), its access log recording the `CMCD`
    /// query argument and the four `CMCD-*` headers of every request. Every request carries the
    /// session; each segment its kind, its representation's bitrate from ffmpeg's manifest,
    /// its 2 s duration and the buffer; the query argument does not get in the way of the
    /// static files.
    @Test(arguments: [CMCDOptions.Transmission.query, .headers])
    func nginxSeesTheKeysOfEveryRequestToFFmpegsDASH(_ transmission: CMCDOptions.Transmission) async throws {
        let nginx = "/usr/sbin/nginx"
        try #require(FileManager.default.isExecutableFile(atPath: nginx), "nginx not installed (scripts/setup)")
        let dir = try Tools.tempDirectory("cmcd-nginx")
        let dash = dir.appendingPathComponent("dash")
        try FileManager.default.createDirectory(at: dash, withIntermediateDirectories: true)
        let port = try Tools.freePort()
        let log = dir.appendingPathComponent("access.log")
        let conf = """
            daemon off; master_process off; worker_processes 1;
            error_log \(dir.path)/error.log warn; pid \(dir.path)/nginx.pid;
            events { worker_connections 64; }
            http {
                types { application/dash+xml mpd; video/mp4 m4s; }
                client_body_temp_path \(dir.path)/body; proxy_temp_path \(dir.path)/proxy; fastcgi_temp_path \
            \(dir.path)/fastcgi;
                log_format cmcd escape=none \
            '$msec\t$uri\t$status\t$arg_CMCD\t$http_cmcd_session\t$http_cmcd_object\t$http_cmcd_request\t\
            $http_cmcd_status';
                access_log \(log.path) cmcd;
                server { listen 127.0.0.1:\(port); root \(dash.path); }
            }
            """
        try Data(conf.utf8).write(to: dir.appendingPathComponent("nginx.conf"))
        let server = try Tools.spawn(nginx, ["-p", dir.path, "-c", dir.appendingPathComponent("nginx.conf").path])
        defer { Tools.stop(server) }
        let encoder = try Tools.spawn(
            "ffmpeg",
            [
                "-v", "error", "-nostdin", "-re", "-f", "lavfi", "-i", "testsrc2=s=640x360:r=30", "-f", "lavfi", "-i",
                "sine=f=440:r=48000",
                "-c:v", "libx264", "-preset", "veryfast", "-b:v", "800k", "-g", "60", "-keyint_min", "60",
                "-sc_threshold", "0",
                "-c:a", "aac", "-b:a", "96k", "-ac", "2", "-f", "dash", "-seg_duration", "2", "-window_size", "15",
                "-use_timeline", "0", "-use_template", "1", "live.mpd",
            ], cwd: dash)
        defer { Tools.stop(encoder) }
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: dash.appendingPathComponent("live.mpd").path) {
            try await Task.sleep(for: .milliseconds(100))
        }
        try await Task.sleep(for: .seconds(4))
        let out = dir.appendingPathComponent("frames")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        var options = PlayerOptions(
            sources: [URL(string: "http://127.0.0.1:\(port)/live.mpd")!], audioOutput: .null,
            videoOutput: .frames(out.path))
        options.cmcd = CMCDOptions(transmission: transmission, contentId: "nginx-1")
        let player = try Player(options: options)
        let states = Mutex<[(at: Double, state: PlaybackState)]>([])
        let events = Task {
            for await event in player.events {
                if case .stateChanged(let state) = event {
                    states.withLock { $0.append((Date().timeIntervalSince1970, state)) }
                }
            }
        }
        try await player.play()
        try await Task.sleep(for: .seconds(8))
        let qualities = player.qualities
        let stopping = Date().timeIntervalSince1970
        await player.stop()
        events.cancel()
        let frames = try FramesFile.read(out.appendingPathComponent("frames.tsv"))
        try #require(frames.count > 100, "\(frames.count) pictures: the stream played")
        let firstPicture = frames[0].wallTime
        // Buffering spells after the first picture (ffmpeg behind on a loaded box can starve
        // the player): a request made in one is urgent again (`su`, CMCD's "recovery after a
        // buffer-empty event"). nginx logs a request when it has answered it: 0.5 s later at most.
        let changes = states.withLock { $0 }
        let spells = changes.enumerated().filter { $0.element.state == .buffering && $0.element.at > firstPicture }
            .map { i, change in
                (from: change.at, to: (changes[(i + 1)...].first { $0.state != .buffering }?.at ?? .infinity) + 0.5)
            }

        // nginx's log: one line a request.
        let lines = try String(contentsOf: log, encoding: .utf8).split(separator: "\n").map {
            $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
        }
        try #require(lines.count >= 6 && lines.allSatisfy { $0.count == 8 }, "\(lines.count) requests logged")
        func keys(_ fields: [String]) -> [String: String] {
            let raw =
                transmission == .query
                ? (fields[3].removingPercentEncoding ?? "") : fields[4...7].filter { $0 != "-" }.joined(separator: ",")
            var out = [String: String]()
            for pair in raw.split(separator: ",") where !pair.isEmpty && pair != "-" {
                let kv = pair.split(separator: "=", maxSplits: 1)
                out[String(kv[0])] = kv.count > 1 ? String(kv[1]) : "true"
            }
            return out
        }
        var segments = 0
        for fields in lines {
            let (path, status, k) = (fields[1], fields[2], keys(fields))
            // (A segment asked for before ffmpeg, behind on a loaded machine, wrote it is a 404,
            // and asked for again: each path is served in the end, whatever the query says. One
            // asked for in the last second before the stop has no time to be asked again: a CI run
            // had segment 7's 404 at 8.0 s, as the player stopped.)
            let beforeTheStop = (Double(fields[0]) ?? 0) > stopping - 1
            #expect(
                status == "200"
                    || (status == "404" && (beforeTheStop || lines.contains { $0[1] == path && $0[2] == "200" })),
                "\(path): HTTP \(status) (nginx serves the file whatever the query says)")
            #expect(
                k["sid"] == "\"\(player.sessionId)\"" && k["cid"] == "\"nginx-1\"" && k["sf"] == "d", "\(path): \(k)")
            if transmission == .headers {
                #expect(fields[3] == "-" || fields[3].isEmpty, "\(path): headers only, no query argument: \(fields[3])")
            }
            if path.hasSuffix(".mpd") {
                #expect(k["ot"] == "m", "\(path): \(k)")
            } else if path.hasPrefix("/init-") {
                #expect(k["ot"] == "i", "\(path): \(k)")
            } else if path.hasPrefix("/chunk-") {
                segments += 1
                let kind = k["ot"] == "v" ? "video" : k["ot"] == "a" ? "audio" : "?"
                #expect(path.contains("stream0") == (kind == "video"), "\(path): ot \(k["ot"] ?? "-")")
                let rates = Set(qualities.filter { $0.kind == kind }.map { $0.bandwidth / 1000 })
                #expect(rates.contains(Int(k["br"] ?? "") ?? -1), "\(path): br \(k["br"] ?? "-") of \(kind) \(rates)")
                #expect(
                    (1900...2100).contains(Int(k["d"] ?? "") ?? 0) && k["bl"].flatMap(Int.init) != nil, "\(path): \(k)")
                let time = Double(fields[0]) ?? 0
                if time > firstPicture + 1 {
                    let urgent = spells.contains { time > $0.from && time < $0.to }
                    #expect(
                        (k["su"] == nil || urgent) && k["st"] == "l",
                        "\(path) at +\(time - firstPicture) s after the first picture: \(k); buffering \(spells)")
                }
            }
        }
        #expect(segments >= 6, "\(segments) segment requests")
        print(
            """
            cmcd nginx \(transmission.rawValue): \(lines.count) requests, \(segments) segments, e.g. \
            \(lines.last.map(keys) ?? [:])
            """
        )
    }
}
