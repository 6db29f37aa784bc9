import Foundation
import Marquee
import MarqueeOrigin
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
        let url = dash
            ? origin.manifestURL(asset: "generated")
            : origin.manifestURL(asset: "generated").deletingLastPathComponent().appendingPathComponent("master.m3u8")
        let dir = try Tools.tempDirectory("cmcd")
        var options = PlayerOptions(sources: [url], audioOutput: .null, videoOutput: .frames(dir.path))
        options.cmcd = CMCDOptions(transmission: transmission, contentId: "lobby \"1\"")
        let player = try Player(options: options)
        try await player.play()
        try await Task.sleep(for: .seconds(6))
        let qualities = player.qualities
        await player.stop()
        let frames = try FramesFile.read(dir.appendingPathComponent("frames.tsv"))
        let firstPicture = try #require(frames.first).wallTime

        let log = try await Tools.offPool { try Tools.run("curl", ["-sS", origin.baseURL.appendingPathComponent("origin/requests").absoluteString]) }
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(log.utf8)) as? [[String: Any]])
        // Each request's keys, from the query argument or the four headers.
        func keys(_ e: [String: Any]) -> [String: String] {
            let text = dash ? (e["cmcd"] as? String ?? "") : ((e["cmcdHeaders"] as? [String: String]) ?? [:]).values.joined(separator: ",")
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
            #expect(k["sid"] == "\"\(player.sessionId)\"" && k["cid"] == "\"lobby \\\"1\\\"\"" && k["sf"] == (dash ? "d" : "h"), "\(path): \(k)")
            if !dash {  // the four headers, each only its own keys
                let headers = (e["cmcdHeaders"] as? [String: String]) ?? [:]
                #expect(headers["cmcd-session"]?.contains("sid=") == true && headers["cmcd-object"]?.contains("ot=") == true
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
                #expect((1900...2100).contains(Int(k["d"] ?? "") ?? 0) && k["bl"].flatMap(Int.init).map { $0 % 100 == 0 } == true, "\(path): \(k)")
                let time = e["time"] as! Double
                // Startup until the first picture; never after it (a second's margin both ways).
                if time < firstPicture - 0.05 { #expect(k["su"] == "true" || (k["st"] == nil), "\(path) before the first picture: \(k)") }
                if time > firstPicture + 1 { #expect(k["su"] == nil && k["st"] == "l", "\(path) after the first picture: \(k)") }
            }
        }
        let segments = requests.filter { ($0["path"] as! String).hasSuffix(".m4s") }
        #expect(segments.contains { keys($0)["ot"] == "v" } && segments.contains { keys($0)["ot"] == "a" })
        // The buffer: nothing before the first segments; once playing at 3 s behind live with
        // 2 s segments, each next one is listed (and asked for) with about a second left.
        let buffers = segments.compactMap { keys($0)["bl"].flatMap(Int.init) }
        let later = segments.filter { ($0["time"] as! Double) > firstPicture + 1 }.compactMap { keys($0)["bl"].flatMap(Int.init) }
        #expect(buffers.first == 0 && !later.isEmpty && later.allSatisfy { (500...3000).contains($0) }, "bl over the run: \(buffers)")
        print("cmcd \(transmission.rawValue): \(requests.count) requests, bl \(buffers), e.g. \(keys(segments.last ?? [:]))")
    }
}
