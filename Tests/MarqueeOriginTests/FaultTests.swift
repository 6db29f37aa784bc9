import AsyncHTTPClient
import Foundation
import MarqueeStreaming
import Testing

@testable import MarqueeOrigin

/// A live stream of the `generated` asset whose segment numbers are the same in every run: its
/// availabilityStartTime is `age` seconds ago, so segments 0...74 exist (2 s each) and a 300 s
/// window keeps them; their fate keys (`1/0.m4s`, ...) never change, so neither do the shares the
/// fault options strike. Each instance has URLs of its own (the AST is in them): what the origin
/// counts per URL path (`status_`, `mstatus_`) starts afresh.
struct PinnedStream {
    let origin: Origin
    let ast: Int

    init(age: Int = 150) async throws {
        origin = try await SharedOrigin.shared.get()
        ast = Int(now()) - age
    }

    func manifest(_ options: [String], name: String? = nil) -> URL {
        origin.manifestURL(asset: "generated", mpdName: name, options: ["ast_\(ast)", "tsbd_300"] + options)
    }

    /// `<rep>/<number>.m4s`: rep "1" is audio (about 32 kB), "0" video (about 680 kB).
    func segment(_ number: Int, rep: String = "1", _ options: [String]) -> URL {
        manifest(options).deletingLastPathComponent().appendingPathComponent("\(rep)/\(number).m4s")
    }

    /// The segments 0..<count as served without faults.
    func truth(rep: String = "1", count: Int = 50) async throws -> [[UInt8]] {
        var out: [[UInt8]] = []
        for n in 0..<count {
            let fetched = try await fetch(segment(n, rep: rep, []))
            try #require(fetched.status == 200, "segment \(n) without faults")
            out.append(fetched.body)
        }
        return out
    }
}

/// The numbers among 0..<50 for which `isStruck` says yes.
func struckNumbers(_ isStruck: (Int) async throws -> Bool) async rethrows -> Set<Int> {
    var out: Set<Int> = []
    for n in 0..<50 where try await isStruck(n) { out.insert(n) }
    return out
}

/// A share of 50 segments close to `percent` (binomial: ±7 is more than two standard deviations).
func expectShare(
    _ struck: Set<Int>, _ percent: Double, _ what: String, sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        abs(Double(struck.count) - percent / 2) <= 7,
        "\(what): \(struck.count) of 50 segments struck, \(percent)% asked", sourceLocation: sourceLocation)
}

@Suite("Origin fault options over loopback")
struct FaultTests {
    @Test("fault options parse, reproduce their path components, and a bad one is a 400")
    func faultOptions() async throws {
        let components = [
            "seed_42", "status_503-12.5", "reset_10", "trickle_300-20", "truncate_5", "badlength_6", "corrupt_7",
            "hugebox_8", "flip_9", "endless_1", "redirect_2", "mstatus_404-3", "badinit_1", "nest_64", "stall_3",
            "silent_4", "rotate_45",
        ]
        var options = LiveOptions()
        for component in components { try options.apply(Substring(component)) }
        #expect(Set(options.pathComponents) == Set(components))
        #expect(options.faults.seed == 42 && options.faults.statusCode == 503 && options.faults.shares[.status] == 12.5)
        #expect(options.faults.trickleKbps == 300 && options.faults.manifestStatus == .init(code: 404, count: 3))
        let origin = try await SharedOrigin.shared.get()
        for bad in [
            "status_200-5", "status_503", "reset_101", "trickle_0-5", "mstatus_503-x", "nest_0", "badinit_2", "seed_-1",
            "flip_x", "rotate_0", "stall_x",
        ] {
            let fetched = try await fetch(origin.manifestURL(asset: "generated", options: [bad]))
            #expect(fetched.status == 400, "\(bad)")
            #expect(fetched.text.contains(String(bad.prefix { $0 != "_" }) + "_"), "\(bad): \(fetched.text)")
        }
    }

    @Test("status_: that share of segments is answered with the code once, a retry succeeds, the seed picks which")
    func transientStatus() async throws {
        let stream = try await PinnedStream()
        let options = ["seed_7", "status_503-30"]
        let struck = try await struckNumbers { n in
            let status = try await fetch(stream.segment(n, options)).status
            #expect(status == 503 || status == 200, "segment \(n): \(status)")
            return status == 503
        }
        expectShare(struck, 30, "status_503-30")
        for n in struck.sorted() {
            #expect(try await fetch(stream.segment(n, options)).status == 200, "the retry of segment \(n)")
        }
        // The fate is the seed's and the segment path's: another URL (another AST) meets the same
        // one, another seed another.
        let other = try await PinnedStream(age: 160)
        #expect(try await struckNumbers { try await fetch(other.segment($0, options)).status == 503 } == struck)
        let reseeded = try await struckNumbers {
            try await fetch(stream.segment($0, ["seed_8", "status_503-30"])).status == 503
        }
        expectShare(reseeded, 30, "seed_8")
        #expect(reseeded != struck)
        // Manifests and init segments are not struck.
        let always = ["status_500-100"]
        #expect(try await fetch(stream.segment(1, always)).status == 500)
        #expect(try await fetch(stream.manifest(always)).status == 200)
        #expect(
            try await fetch(stream.manifest(always).deletingLastPathComponent().appendingPathComponent("0/init.mp4"))
                .status == 200)
    }

    @Test("mstatus_: the first n requests of each manifest path get the code, segments never")
    func manifestStatus() async throws {
        let stream = try await PinnedStream()
        let options = ["mstatus_503-2"]
        var statuses: [Int] = []
        for _ in 0..<4 { statuses.append(try await fetch(stream.manifest(options)).status) }
        #expect(statuses == [503, 503, 200, 200])
        let playlist = stream.manifest(options, name: "master.m3u8")
        #expect(try await fetch(playlist).status == 503, "another manifest path counts on its own")
        #expect(try await fetch(stream.segment(4, options)).status == 200)
    }

    @Test("reset_: the headers and half the body, then a TCP reset; the share is the seed's")
    func reset() async throws {
        let stream = try await PinnedStream()
        let video = try await fetch(stream.segment(3, rep: "0", [])).body
        let raw = await rawGET(stream.segment(3, rep: "0", ["reset_100"]))
        #expect(raw.status == 200 && raw.contentLength == video.count)
        #expect(raw.end == .reset, "ended \(raw.end) after \(raw.body.count) of \(video.count) bytes")
        #expect(raw.body.count <= video.count / 2 && raw.body[...] == video.prefix(raw.body.count))
        let truth = try await stream.truth()
        let struck = await struckNumbers { n in
            let raw = await rawGET(stream.segment(n, ["seed_3", "reset_30"]))
            if raw.end != .reset {
                #expect(raw.end == .closed && raw.body == truth[n], "segment \(n) not reset: whole")
            }
            return raw.end == .reset
        }
        expectShare(struck, 30, "reset_30")
    }

    @Test("badlength_: Content-Length of the whole segment, half of it sent, then the connection closed")
    func badLength() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth()
        let struck = await struckNumbers { n in
            let raw = await rawGET(stream.segment(n, ["seed_4", "badlength_30"]))
            #expect(
                raw.status == 200 && raw.contentLength == truth[n].count && raw.end == .closed,
                "segment \(n): \(raw.end)")
            #expect(raw.body[...] == truth[n].prefix(raw.body.count))
            #expect(
                raw.body.count == truth[n].count || raw.body.count == truth[n].count / 2,
                "segment \(n): \(raw.body.count) bytes")
            return raw.body.count < truth[n].count
        }
        expectShare(struck, 30, "badlength_30")
        // An HTTP client sees an error, not a short body (a URL requested for the first time, the
        // same fate: other options do not change it); a retry of it gets the segment whole.
        let one = try #require(struck.first)
        let first = stream.segment(one, ["seed_4", "badlength_30", "spd_1"])
        await #expect(throws: (any Error).self) { _ = try await fetch(first) }
        #expect(try await fetch(first).body == truth[one])
    }

    @Test("truncate_: a well-formed 200 with the first half of the segment and a Content-Length that matches")
    func truncate() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth()
        let struck = try await struckNumbers { n in
            let fetched = try await fetch(stream.segment(n, ["seed_5", "truncate_30"]))
            #expect(fetched.status == 200)
            #expect(fetched.headers["Content-Length"].first == String(fetched.body.count), "segment \(n)")
            #expect(
                fetched.body == truth[n] || fetched.body[...] == truth[n].prefix(truth[n].count / 2), "segment \(n)")
            return fetched.body.count < truth[n].count
        }
        expectShare(struck, 30, "truncate_30")
    }

    @Test("trickle_: that share of bodies arrives no faster than the rate, the rest at once")
    func trickle() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth()
        let kbps = 1000.0
        let struck = try await struckNumbers { n in
            let started = now()
            let fetched = try await fetch(stream.segment(n, ["seed_6", "trickle_\(Int(kbps))-30"]))
            let rate = Double(fetched.body.count) * 8 / 1000 / (now() - started)
            #expect(fetched.body == truth[n], "segment \(n)")
            let paced = fetched.headers["Content-Length"].isEmpty  // paced bodies go out chunked
            if paced { #expect(rate <= kbps * 1.05, "segment \(n) arrived at \(Int(rate)) kbit/s") }
            return paced
        }
        expectShare(struck, 30, "trickle_1000-30")
        // A video segment: 680 kB at 4 Mbit/s, about 1.4 s.
        let video = try await fetch(stream.segment(7, rep: "0", [])).body
        let started = now()
        let trickled = try await fetch(stream.segment(7, rep: "0", ["trickle_4000-100"]))
        let rate = Double(trickled.body.count) * 8 / 1000 / (now() - started)
        #expect(trickled.body == video)
        #expect(rate <= 4000 * 1.05 && rate > 4000 * 0.5, "\(Int(rate)) kbit/s")
    }

    @Test("corrupt_: that share of segments is random bytes of the same length, the same on every fetch")
    func corrupt() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth()
        let options = ["seed_9", "corrupt_30"]
        let struck = try await struckNumbers { n in
            let body = try await fetch(stream.segment(n, options)).body
            #expect(body.count == truth[n].count)
            guard body != truth[n] else { return false }
            let same = zip(body, truth[n]).filter { $0 == $1 }.count
            #expect(same < body.count / 50, "segment \(n): \(same) of \(body.count) bytes unchanged")
            #expect(try await fetch(stream.segment(n, options)).body == body, "segment \(n) fetched again")
            return true
        }
        expectShare(struck, 30, "corrupt_30")
    }

    @Test("hugebox_: the first box claims 0x7fffffff bytes, the rest is intact")
    func hugeBox() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth()
        let struck = try await struckNumbers { n in
            let body = try await fetch(stream.segment(n, ["seed_10", "hugebox_30"])).body
            guard body != truth[n] else { return false }
            #expect(
                Array(body.prefix(4)) == [0x7f, 0xff, 0xff, 0xff] && body.dropFirst(4) == truth[n].dropFirst(4),
                "segment \(n)")
            #expect(throws: OriginError.self) { try MP4Reader(bytes: body, name: "struck").boxes(in: 0..<body.count) }
            return true
        }
        expectShare(struck, 30, "hugebox_30")
    }

    @Test("flip_: a few bits flipped inside mdat; the segment still decodes frame by frame")
    func flip() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth()
        let options = ["seed_11", "flip_30"]
        let struck = try await struckNumbers { n in
            let body = try await fetch(stream.segment(n, options)).body
            guard body != truth[n] else { return false }
            Self.expectFlippedInsideMdat(body, truth[n], "segment \(n)")
            return true
        }
        expectShare(struck, 30, "flip_30")
        // A struck video segment: every frame still comes out of the decoder.
        let base = stream.manifest([]).deletingLastPathComponent()
        let initSegment = try await fetch(base.appendingPathComponent("0/init.mp4")).body
        for n in 0..<20 {
            let body = try await fetch(stream.segment(n, rep: "0", ["seed_11", "flip_50"])).body
            let original = try await fetch(stream.segment(n, rep: "0", [])).body
            guard body != original else { continue }
            Self.expectFlippedInsideMdat(body, original, "video segment \(n)")
            #expect(try await decodedFramePTS(initSegment, body, stream: "v").count == 60)
            return
        }
        Issue.record("flip_50 struck none of 20 video segments")
    }

    private static func expectFlippedInsideMdat(_ body: [UInt8], _ truth: [UInt8], _ what: String) {
        #expect(body.count == truth.count, "\(what)")
        let mdats = ((try? MP4Reader(bytes: truth, name: what).boxes(in: 0..<truth.count)) ?? []).filter {
            $0.type == .mdat
        }
        let changed = zip(body, truth).enumerated().filter { $0.element.0 != $0.element.1 }
        let bits = changed.map { ($0.element.0 ^ $0.element.1).nonzeroBitCount }.reduce(0, +)
        #expect((1...8).contains(bits), "\(what): \(bits) bits flipped")
        #expect(
            changed.allSatisfy { c in mdats.contains { ($0.contentStart..<$0.end).contains(c.offset) } },
            "\(what): a flip outside mdat")
    }

    @Test("endless_: the segment, then bytes that keep coming, chunked, until the client leaves")
    func endless() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth(count: 3)
        let started = now()
        let (raw, heldBack) = await measuringHeldBack { await rawGET(stream.segment(2, ["endless_100"]), readFor: 2.5) }
        #expect(raw.status == 200 && raw.contentLength == nil && raw.header("Transfer-Encoding") == "chunked")
        #expect(raw.end == .deadline, "the body ended (\(raw.end)) after \(raw.body.count) bytes")
        // 1 KiB every 100 ms after the segment: about 24 kB more in 2.5 s, at least 4 of them,
        // less one for each 100 ms this process was held back (the origin's filler is a task of
        // it: beside the parallel suites a run got 3 in 2.5 s, its last 1.2 s in).
        let missed = Int((heldBack / 0.1).rounded(.up))
        #expect(
            raw.body.count > truth[2].count + 4_000 - 1024 * missed,
            "\(raw.body.count) bytes in 2.5 s (segment: \(truth[2].count), process held back \(heldBack) s)")
        #expect(
            raw.lastArrival > started + 2.2 - heldBack,
            "the last byte came \(raw.lastArrival - started) s in (held back \(heldBack) s)")
        // The share: struck bodies never end, the others close after the segment.
        let ends = await withTaskGroup(of: (Int, RawResponse.End).self) { group in
            for n in 0..<50 {
                group.addTask { (n, await rawGET(stream.segment(n, ["seed_12", "endless_30"]), readFor: 1.5).end) }
            }
            return await group.reduce(into: [Int: RawResponse.End]()) { $0[$1.0] = $1.1 }
        }
        #expect(ends.values.allSatisfy { $0 == .closed || $0 == .deadline })
        expectShare(Set(ends.filter { $0.value == .deadline }.keys), 30, "endless_30")
    }

    @Test("stall_: Content-Length of the whole segment, half of it sent, then silence on an open connection")
    func stall() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth(count: 3)
        // Half, then 1.5 s without a byte on a connection still open (the silence is timed by the
        // reader: bytes a loaded test process reads late are not bytes sent late).
        let raw = await rawGET(stream.segment(2, ["stall_100"]), readFor: 10, quiet: 1.5)
        #expect(raw.status == 200 && raw.contentLength == truth[2].count)
        #expect(raw.end == .quiet, "the connection ended (\(raw.end)) after \(raw.body.count) bytes")
        #expect(raw.body[...] == truth[2].prefix(truth[2].count / 2), "\(raw.body.count) of \(truth[2].count) bytes")
        // Network faults strike a segment's first request only: the retry gets it whole.
        #expect(try await fetch(stream.segment(2, ["stall_100"])).body == truth[2])
    }

    @Test("silent_: the request accepted, then not a byte (not even the head) on an open connection")
    func silent() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth(count: 3)
        let raw = await rawGET(stream.segment(1, ["silent_100"]), readFor: 2.0)
        #expect(
            raw.end == .deadline && raw.head.isEmpty && raw.body.isEmpty, "\(raw.end), head \(raw.head.count) bytes")
        // Network faults strike a segment's first request only: the retry gets it whole.
        #expect(try await fetch(stream.segment(1, ["silent_100"])).body == truth[1])
    }

    @Test("rotate_: the share-based faults take turns, each alone, with a clean turn between them")
    func rotate() throws {
        var options = LiveOptions()
        for component in ["rotate_10", "status_503-20", "reset_30", "stall_40", "mstatus_500-2"] {
            try options.apply(Substring(component))
        }
        let faults = options.faults
        // Slots of 10 s from Unix second 0: even ones clean, odd ones a kind each in Kind order
        // (Unix seconds 5, 15, ...).
        #expect(faults.live(at: 5).shares.isEmpty)
        #expect(faults.live(at: 15).shares == [.status: 20])
        #expect(faults.live(at: 35).shares == [.reset: 30])
        #expect(faults.live(at: 55).shares == [.stall: 40])
        #expect(faults.live(at: 75).shares == [.status: 20])
        #expect(faults.live(at: 75).manifestStatus == .init(code: 500, count: 2), "not share-based: always on")
        var plain = LiveOptions()
        try plain.apply("reset_30")
        #expect(plain.faults.live(at: 5) == plain.faults)
    }

    @Test("badinit_1: init segments are random bytes of the same length; media segments are intact")
    func badInit() async throws {
        let stream = try await PinnedStream()
        for rep in ["0", "1"] {
            let name = "\(rep)/init.mp4"
            let good = try await fetch(stream.manifest([]).deletingLastPathComponent().appendingPathComponent(name))
            let bad = try await fetch(
                stream.manifest(["badinit_1"]).deletingLastPathComponent().appendingPathComponent(name))
            #expect(bad.status == 200 && bad.body.count == good.body.count && bad.body != good.body, "\(name)")
            #expect((try? InitSegmentInfo.parse(MP4Reader(bytes: bad.body, name: name))) == nil, "\(name) still parses")
        }
        let truth = try await stream.truth(count: 2)
        #expect(try await fetch(stream.segment(1, ["badinit_1"])).body == truth[1])
        #expect(try await fetch(stream.manifest(["badinit_1"])).status == 200)
    }

    @Test("redirect_: a 302 loop of two URLs for manifests and that share of segments")
    func redirect() async throws {
        let stream = try await PinnedStream()
        let manifest = stream.manifest(["redirect_100"])
        let first = await rawGET(manifest)
        #expect(first.status == 302 && first.header("Location") == manifest.path + "?hop=1")
        let second = await rawGET(URL(string: manifest.absoluteString + "?hop=1")!)
        #expect(second.status == 302 && second.header("Location") == manifest.path)
        // A client that follows redirects gives up.
        await #expect(throws: HTTPClientError.self) { _ = try await fetch(manifest) }
        let struck = await struckNumbers { n in
            let raw = await rawGET(stream.segment(n, ["seed_13", "redirect_30"]))
            #expect(raw.status == 302 || raw.status == 200, "segment \(n): \(raw.status ?? 0)")
            return raw.status == 302
        }
        expectShare(struck, 30, "redirect_30")
    }

    @Test("nest_: the MPD carries that many nested elements before its Period, and still parses")
    func nest() async throws {
        let stream = try await PinnedStream()
        let text = try await fetch(stream.manifest(["nest_200"])).text
        let nesting = String(repeating: "<Nest>", count: 200) + String(repeating: "</Nest>", count: 200)
        let at = try #require(text.range(of: nesting), "no 200-deep nesting in the MPD")
        #expect(text.components(separatedBy: "<Nest>").count == 201)
        #expect(text.range(of: "<Period")!.lowerBound > at.upperBound)
        #expect(try await fetch(stream.manifest([])).text.contains("<Nest>") == false)
        let mpd = try MPDParser().parse(Data(try await fetch(stream.manifest(["nest_50"])).body))
        #expect(mpd.periods.count == 1 && mpd.periods[0].adaptationSets.count == 2)
    }
}
