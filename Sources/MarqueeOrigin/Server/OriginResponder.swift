import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import MarqueeStreaming

/// Turns one request into one response: `/live/...` (manifests, init and media segments),
/// `/time/...` (clock endpoints), `/static/...` (plain files). Stateless but for the counted
/// faults (`status_`, `mstatus_`): everything else a response depends on is in its URL and the clock.
struct OriginResponder: Sendable {
    var assets: [String: LoopAsset]
    var staticRoot: String?
    var logger: Logger
    var sntpPort = BoundPort()
    var visits = VisitCounter()
    var plays = PlayReceiver()
    var served = ServedBytes()
    let requests = RequestLog()

    /// A response being built: status, body, content type, and the clock its `Date` header uses.
    struct Reply {
        var status: HTTPResponse.Status
        var body: [UInt8] = []
        var contentType = "text/plain; charset=utf-8"
        var clock = OriginClock()
        /// Low-latency delivery: `body` is sent in these pieces, each once the origin's clock
        /// reaches its time (chunked transfer encoding, no Content-Length).
        var schedule: [(bytes: Range<Int>, at: Double)]?
        /// `ETag` and `Last-Modified` of a static file (conditional requests).
        var etag: String?
        var lastModified: String?
        /// A hung server (`hang_`): nothing is sent until this origin-clock time.
        var hangUntil: Double?
        /// The `Location` of a redirect.
        var location: String?
        /// How sending the body ends: normally, cut short, or never (delivery faults).
        var ending = Ending.complete
        /// A media segment (or a static media file): answered cacheable (`public, max-age=60`)
        /// with its SHA-256 (`Repr-Digest`, RFC 9530), which a venue proxy checks peers' bytes against.
        /// A `Range` of it is answered 206 (one range; ``OriginResponder/partial(_:range:)``).
        var media = false
        /// The most the body is sent at (kbit/s: `bw_`, the trickle fault), paced as it is
        /// answered (after a range is cut from it).
        var kbps: Double?
        /// A 206's (or 416's) `Content-Range`, and the whole body its `Repr-Digest` is of.
        var contentRange: String?
        var whole: [UInt8]?

        enum Ending: Equatable {
            case complete
            /// `Content-Length` says the whole body, only `at` bytes are sent, then the connection
            /// is closed (reset: with a TCP reset).
            case cut(at: Int, reset: Bool)
            /// The body, then filler without end.
            case endless
            /// No segment at all: random bytes without end (a broken edge, a misrouted stream).
            case garbage
            /// `Content-Length` says the whole body, only `at` bytes are sent, then nothing (the
            /// connection held open) for ``stallSeconds``, then it is closed.
            case stall(at: Int)
        }

        /// Seconds of the rate each piece of a limited body is (nil: 16 kB pieces): a trickle
        /// comes as a stuck edge sends it, a little every 50 ms.
        var pieceSeconds: Double?

        mutating func limit(_ kbps: Double, pieceSeconds: Double? = nil) {
            self.kbps = min(self.kbps ?? kbps, kbps)
            if let pieceSeconds { self.pieceSeconds = pieceSeconds }
        }

        init(_ status: HTTPResponse.Status, _ text: String = "", clock: OriginClock = OriginClock()) {
            self.status = status
            self.body = Array((text.isEmpty || text.hasSuffix("\n") ? text : text + "\n").utf8)
            self.clock = clock
        }

        init(bytes: [UInt8], contentType: String, clock: OriginClock) {
            self.status = .ok
            self.body = bytes
            self.contentType = contentType
            self.clock = clock
        }
    }

    func respond(to request: Request, fallbackAuthority: String) async -> Response {
        let started = ContinuousClock.now
        let path = request.uri.path
        // CMCD (CTA-5004) is logged and otherwise ignored, as a CDN does: never an option.
        let (query, cmcdQuery) = Self.splitCMCD(request.uri.query)
        let cmcdHeaders = request.headers.filter { $0.name.canonicalName.hasPrefix("cmcd-") }.map {
            ($0.name.canonicalName, $0.value)
        }
        if path != "/origin/requests" {
            requests.add(
                method: "\(request.method)", path: path, query: query, cmcdQuery: cmcdQuery, cmcdHeaders: cmcdHeaders)
        }
        var reply: Reply
        if request.method == .post, path == "/plays" {
            var request = request
            let body = (try? await request.collectBody(upTo: 16 << 20)).map { Array($0.readableBytesView) }
            reply = plays.receive(
                body, key: request.headers.first { $0.name.canonicalName == "idempotency-key" }?.value,
                authorization: request.headers.first { $0.name.canonicalName == "authorization" }?.value)
        } else if request.method == .get, path == "/origin/stats" {
            reply = Reply(
                bytes: Array(served.json(media: query == "media").utf8), contentType: "application/json",
                clock: OriginClock())
        } else if request.method == .get, path == "/origin/requests" {
            reply = Reply(bytes: requests.json(), contentType: "application/json", clock: OriginClock())
        } else if request.method != .get && request.method != .head {
            reply = Reply(.methodNotAllowed, "only GET and HEAD (and POST /plays)")
        } else {
            let components = path.split(separator: "/", omittingEmptySubsequences: true)
                .map { String($0).removingPercentEncoding ?? String($0) }
            switch components.first {
            case "live":
                reply = live(
                    Array(components.dropFirst()), path: path, query: query,
                    authority: request.head.authority ?? fallbackAuthority)
            case "time": reply = time(Array(components.dropFirst()), query: query)
            case "static": reply = staticFile(Array(components.dropFirst()), ifNoneMatch: request.headers[.ifNoneMatch])
            case "moved" where path.hasSuffix(".mpd") || path.hasSuffix(".m3u8"):
                // A manifest that redirects to /live/…: relative URLs in it resolve against /live/….
                reply = Reply(.found, "moved to /live")
                reply.location = "/live" + path.dropFirst("/moved".count) + (query.map { "?" + $0 } ?? "")
            default:
                reply = Reply(
                    .notFound,
                    """
                    no such resource: \(path) (try /live/<options>/<asset>/<manifest>, \
                    /moved/<options>/<asset>/<manifest>, /time/xsdate, /static/<file>)
                    """
                )
            }
        }
        if let until = reply.hangUntil {  // the client gives up first (or gets a late 503)
            let wait = min(3600, until - reply.clock.now())
            if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        }
        if reply.media, reply.status == .ok, reply.ending == .complete, request.method == .get,
            let range = request.headers[.range]
        {
            reply = Self.partial(reply, range: range)
        }
        if let kbps = reply.kbps {
            reply.schedule = Self.limited(
                reply.body.count, kbps: kbps, schedule: reply.schedule, now: reply.clock.now(),
                pieceSeconds: reply.pieceSeconds)
        }
        var headers = HTTPFields()
        headers[.contentType] = reply.contentType
        headers[.date] = OriginClock.httpDate(reply.clock.now())
        headers[.accessControlAllowOrigin] = "*"
        if reply.media, reply.status == .ok || reply.status == .partialContent {
            headers[.cacheControl] = "public, max-age=60"
            headers[.acceptRanges] = "bytes"
            headers[HTTPField.Name("Repr-Digest")!] =
                "sha-256=:\(Data(SHA256.hash(data: reply.whole ?? reply.body)).base64EncodedString()):"
        } else {
            headers[.cacheControl] = "no-store"
        }
        if let etag = reply.etag { headers[.eTag] = etag }
        if let modified = reply.lastModified { headers[.lastModified] = modified }
        if let location = reply.location { headers[.location] = location }
        if let contentRange = reply.contentRange { headers[.contentRange] = contentRange }
        let response: Response
        if reply.schedule != nil || reply.ending != .complete, request.method == .get {
            let schedule = reply.schedule ?? [(0..<reply.body.count, 0)]
            response = Response(
                status: reply.status, headers: headers,
                body: Self.paced(reply.body, schedule, ending: reply.ending, clock: reply.clock, served: served))
            served.add(0, mediaPath: reply.media ? path : nil)
        } else {
            if request.method == .get, path != "/origin/stats" {
                served.add(reply.body.count, mediaPath: reply.media ? path : nil)
            }
            var buffer = ByteBuffer()
            buffer.writeBytes(reply.body)
            response = Response(status: reply.status, headers: headers, body: ResponseBody(byteBuffer: buffer))
        }
        let elapsed = ContinuousClock.now - started
        let line: Logger.Message = """
            \(request.method) \(path)\(request.uri.query.map { "?" + $0 } ?? "") -> \(reply.status.code) \
            (\(reply.body.count) bytes, \(elapsed))
            """
        if reply.status.code >= 500 { logger.warning(line) } else { logger.debug(line) }
        return request.method == .head ? response.createHeadResponse() : response
    }

    /// `reply` (a whole media body) cut to one `bytes=` range (RFC 9110 §14: `a-b`, `a-`, `-n`):
    /// 206 with its `Content-Range`; 416 when the range starts past the end; the whole body (200)
    /// for anything else (several ranges, another unit, a malformed value), as a server may.
    static func partial(_ reply: Reply, range: String) -> Reply {
        let total = reply.body.count
        let value = range.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return reply }
        let spec = value.dropFirst("bytes=".count).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return reply }
        let first = Int(spec[0].trimmingCharacters(in: .whitespaces))
        let last = Int(spec[1].trimmingCharacters(in: .whitespaces))
        var lower: Int
        var upper: Int
        switch (first, last) {
        case (let a?, let b?) where a <= b: (lower, upper) = (a, min(b, total - 1))
        case (let a?, nil) where spec[1].isEmpty: (lower, upper) = (a, total - 1)
        case (nil, let n?) where spec[0].isEmpty && n > 0: (lower, upper) = (max(0, total - n), total - 1)
        default: return reply
        }
        var cut = reply
        guard lower < total else {
            cut.status = .rangeNotSatisfiable
            cut.body = []
            cut.media = false
            cut.contentRange = "bytes */\(total)"
            return cut
        }
        cut.status = .partialContent
        cut.whole = reply.body
        cut.body = Array(reply.body[lower...upper])
        cut.contentRange = "bytes \(lower)-\(upper)/\(total)"
        // Low-latency chunks keep their times: the range's bytes go out as they are produced.
        cut.schedule = reply.schedule?.compactMap { piece in
            let bytes = piece.bytes.clamped(to: lower..<upper + 1)
            return bytes.isEmpty ? nil : ((bytes.lowerBound - lower)..<(bytes.upperBound - lower), piece.at)
        }
        return cut
    }

    /// A body written piece by piece as the clock reaches each piece's time (chunked), then ended
    /// as `ending` says: finished; cut short (with the whole body's `Content-Length`) by a thrown
    /// ``ConnectionFault``; or followed by endless filler.
    static func paced(
        _ body: [UInt8], _ schedule: [(bytes: Range<Int>, at: Double)], ending: Reply.Ending, clock: OriginClock,
        served: ServedBytes
    ) -> ResponseBody {
        var sent = 0..<body.count
        var length: Int?
        if case .cut(let at, _) = ending { (sent, length) = (0..<at, body.count) }
        if case .stall(let at) = ending { (sent, length) = (0..<at, body.count) }
        return ResponseBody(contentLength: length) { [sent] writer in
            for piece in schedule where piece.bytes.overlaps(sent) {
                let wait = piece.at - clock.now()
                if wait > 0 { try await Task.sleep(for: .milliseconds(Int((wait * 1000).rounded(.up)))) }
                let part = body[piece.bytes.clamped(to: sent)]
                served.add(part.count, request: false)
                try await writer.write(ByteBuffer(bytes: part))
            }
            switch ending {
            case .complete: try await writer.finish(nil)
            case .cut(_, let reset): throw ConnectionFault(reset: reset)
            case .endless: try await endlessFiller(&writer)
            case .garbage: try await garbageFiller(&writer)
            case .stall:
                try await Task.sleep(for: .seconds(stallSeconds))
                throw ConnectionFault(reset: false)
            }
        }
    }

    /// `garbage_`: random bytes, 16 KiB every 50 ms (320 kB/s), until the client goes away.
    private static func garbageFiller(_ writer: inout any ResponseBodyWriter) async throws -> Never {
        var generator = SplitMix64(state: UInt64.random(in: 0...UInt64.max))
        var piece = ByteBuffer()
        while true {
            piece.clear()
            for _ in 0..<2048 { piece.writeInteger(generator.next()) }
            try await writer.write(piece)
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// How long a `stall_` response holds its connection silent.
    static let stallSeconds = 120

    /// `endless_`: zeros, 1 KiB every 100 ms, until the client goes away (the write throws) or the
    /// server stops (the sleep throws). One buffer, written again and again: no memory grows.
    private static func endlessFiller(_ writer: inout any ResponseBodyWriter) async throws -> Never {
        let filler = ByteBuffer(repeating: 0, count: 1024)
        while true {
            try await Task.sleep(for: .milliseconds(100))
            try await writer.write(filler)
        }
    }

    /// A schedule that sends `count` bytes at no more than `kbps` from `now` (16 kB pieces, or
    /// `pieceSeconds` of the rate each, 256 bytes to 16 kB), never before the pieces of
    /// `schedule` (low-latency chunks) are produced.
    static func limited(
        _ count: Int, kbps: Double, schedule: [(bytes: Range<Int>, at: Double)]?, now: Double,
        pieceSeconds: Double? = nil
    ) -> [(bytes: Range<Int>, at: Double)] {
        let bytesPerSecond = kbps * 1000 / 8
        let piece = pieceSeconds.map { min(16_384, max(256, Int(bytesPerSecond * $0))) } ?? 16_384
        var out: [(bytes: Range<Int>, at: Double)] = []
        var offset = 0
        while offset < count {
            let end = min(count, offset + piece)
            let produced = schedule?.first { $0.bytes.upperBound >= end }?.at ?? now
            out.append((offset..<end, max(produced, now + Double(end) / bytesPerSecond)))
            offset = end
        }
        return out
    }

    // MARK: /live

    private func live(_ components: [String], path: String, query: String?, authority: String) -> Reply {
        var options = LiveOptions()
        var index = 0
        while index < components.count, assets[components[index]] == nil {
            let component = components[index]
            guard LiveOptions.looksLikeOption(Substring(component)) else {
                return Reply(
                    .notFound, "no asset \"\(component)\" (assets: \(assets.keys.sorted().joined(separator: ", ")))")
            }
            do {
                try options.apply(Substring(component))
            } catch {
                return Reply(.badRequest, error.message)
            }
            index += 1
        }
        let clock = OriginClock(offset: options.timeOffset)
        options.availabilityStartTime = options.availabilityStart(at: clock.now())  // restart_
        if let hang = options.hang, hang.contains(clock.now()) {
            var reply = Reply(
                .serviceUnavailable, "hung until \(LiveOptions.format(hang.upperBound)) (hang_ option)", clock: clock)
            reply.hangUntil = hang.upperBound
            return reply
        }
        if let outage = options.outage, outage.contains(clock.now()) {
            return Reply(
                .serviceUnavailable, "outage until \(LiveOptions.format(outage.upperBound)) (outage_ option)",
                clock: clock)
        }
        guard index < components.count, let asset = assets[components[index]] else {
            return Reply(
                .notFound, "no asset in the URL (assets: \(assets.keys.sorted().joined(separator: ", ")))", clock: clock
            )
        }
        let rest = Array(components[(index + 1)...])
        let target = FaultTarget(rest, path: path, query: query, now: clock.now())
        if options.moved, target?.resource == .manifest, visits.visit("moved " + path) > 0 {
            return Reply(.gone, "this manifest has moved (location_1): see its Location", clock: clock)
        }
        if let target, let redirect = redirect(options.faults, target, clock: clock) { return redirect }
        let reply = resource(asset, rest, options: options, clock: clock, authority: authority)
        guard let target, reply.status == .ok else { return reply }
        return injectingFaults(options.faults, into: reply, target, now: clock.now())
    }

    /// The manifest, playlist or segment that `rest` (the path after the asset) names.
    private func resource(
        _ asset: LoopAsset, _ rest: [String], options: LiveOptions, clock: OriginClock, authority: String
    ) -> Reply {
        if rest.count == 1, rest[0].hasSuffix(".m3u8") {  // the same live stream as HLS
            let writer = LiveHLSWriter(asset: asset, options: options)
            let text: String
            if rest[0] == LiveHLSWriter.masterName {
                text = writer.master()
            } else if rest[0] == LiveHLSWriter.transportStreamMasterName
                || rest[0] == LiveHLSWriter.transportStreamMediaName
            {
                guard let ts = asset.transportStream else {
                    return Reply(
                        .notFound, "asset \"\(asset.name)\" has no MPEG-TS segments (ts/seg-<n>.ts)", clock: clock)
                }
                text =
                    rest[0] == LiveHLSWriter.transportStreamMediaName
                    ? writer.transportStreamMedia(ts, now: clock.now()) : writer.transportStreamMaster(ts)
            } else if let rep = asset.representation(id: String(rest[0].dropLast(5))) {
                text = writer.media(rep, now: clock.now())
            } else {
                return Reply(
                    .notFound,
                    "no HLS playlist \"\(rest[0])\" in asset \"\(asset.name)\" (master.m3u8, <representation>.m3u8)",
                    clock: clock)
            }
            return Reply(bytes: Array(text.utf8), contentType: "application/vnd.apple.mpegurl", clock: clock)
        }
        if rest.count == 1 {
            guard rest[0] == asset.manifestName else {
                return Reply(
                    .notFound, "asset \"\(asset.name)\" has the manifest \"\(asset.manifestName)\", not \"\(rest[0])\"",
                    clock: clock)
            }
            let text = LiveManifestWriter(asset: asset, options: options, sntpPort: sntpPort.port, authority: authority)
                .write(now: clock.now())
            return Reply(bytes: Array(text.utf8), contentType: "application/dash+xml", clock: clock)
        }
        if rest.count == 2, rest[0] == "ts", let ts = asset.transportStream {
            return transportStreamSegment(ts, name: rest[1], options: options, clock: clock)
        }
        guard rest.count == 2, let rep = asset.representation(id: rest[0]) else {
            return Reply(
                .notFound, "no such resource in asset \"\(asset.name)\": \(rest.joined(separator: "/"))", clock: clock)
        }
        return segment(asset, rep, name: rest[1], options: options, clock: clock)
    }

    /// `ts/<number>.ts`: the loop's TS segment with every timestamp moved onto the live
    /// timeline: its PTS (90 kHz, modulo 2³³) is the media time the DASH video segment of that
    /// number has, plus the loop's own first PTS (so the stream keeps a realistic, nonzero start).
    private func transportStreamSegment(
        _ ts: LoopTransportStream, name: String, options: LiveOptions, clock: OriginClock
    ) -> Reply {
        let mime = "video/mp2t"
        guard name.hasSuffix(".ts"), let number = UInt64(name.dropLast(3)) else {
            return Reply(.notFound, "no segment \"\(name)\" (ts/<number>.ts)", clock: clock)
        }
        let rep = ts.video
        let timeline = LiveTimeline(representation: rep, options: options)
        guard let live = timeline.segment(number: number) else {
            return Reply(.notFound, "no segment \"\(name)\" (startNumber \(options.startNumber))", clock: clock)
        }
        if let refusal = Self.refusal(
            timeline.availability(numberedIndex: live.index, now: clock.now()), "segment ts/\(name)", options, clock)
        {
            return refusal
        }
        do {
            let bytes = try AssetLoader.bytes(ts.files[live.vodIndex])
            // Loop start on the live timeline (ticks of the video track) → 90 kHz.
            let loopStart = Int64(clamping: live.mediaTime) - Int64(clamping: rep.segments[live.vodIndex].offset)
            let rate = Int64(TransportStreamTimestamps.clockRate)
            let scale = Int64(rep.timescale)
            let loopStart90k = loopStart / scale * rate + loopStart % scale * rate / scale  // no overflow
            var reply = Reply(
                bytes: TransportStreamTimestamps.shifted(bytes, by: loopStart90k), contentType: mime, clock: clock)
            reply.media = true
            if let kbps = options.bandwidth(at: clock.now()) { reply.limit(kbps) }
            return reply
        } catch {
            return Reply(.internalServerError, error.description, clock: clock)
        }
    }

    /// The answer for a segment not available now (404 before, 410 after the window), nil when it is.
    private static func refusal(
        _ availability: Availability, _ what: String, _ options: LiveOptions, _ clock: OriginClock
    ) -> Reply? {
        switch availability {
        case .tooEarly(let wait):
            Reply(.notFound, "\(what) is available in \(String(format: "%.3f", wait)) s", clock: clock)
        case .expired:
            Reply(
                .gone, "\(what) has left the \(LiveOptions.format(options.timeShiftBufferDepth)) s time-shift buffer",
                clock: clock)
        case .available:
            nil
        }
    }

    private func segment(
        _ asset: LoopAsset, _ rep: LoopRepresentation, name: String, options: LiveOptions, clock: OriginClock
    ) -> Reply {
        let mime = rep.representation.kind == .audio ? "audio/mp4" : "video/mp4"
        if name == "init.mp4" {
            do {
                var reply = Reply(bytes: try AssetLoader.bytes(rep.initFile), contentType: mime, clock: clock)
                reply.media = true
                return reply
            } catch {
                return Reply(.internalServerError, error.description, clock: clock)
            }
        }
        guard name.hasSuffix(".m4s") else { return Reply(.notFound, "no segment \"\(name)\"", clock: clock) }
        let stem = name.dropLast(4)
        let timeline = LiveTimeline(representation: rep, options: options)
        let now = clock.now()
        let live: LiveSegment
        let availability: Availability
        if stem.hasPrefix("t"), let time = UInt64(stem.dropFirst()) {
            guard let found = timeline.segment(time: time) else {
                return Reply(.notFound, "no segment starts at media time \(time) in \"\(rep.id)\"", clock: clock)
            }
            live = found
            availability = timeline.availability(timed: found, now: now)
        } else if let number = UInt64(stem), let found = timeline.segment(number: number) {
            live = found
            availability = timeline.availability(numberedIndex: found.index, now: now)
        } else {
            return Reply(
                .notFound, "no segment \"\(name)\" in \"\(rep.id)\" (startNumber \(options.startNumber))", clock: clock)
        }
        if let refusal = Self.refusal(availability, "segment \(name) of \"\(rep.id)\"", options, clock) {
            return refusal
        }
        let vod = rep.segments[live.vodIndex]
        do {
            let bytes = try AssetLoader.bytes(vod.file)
            let rewriter = DecodeTimeRewriter(trackID: rep.track.trackID, trackTimescale: rep.timescale)
            let delta = Int64(clamping: live.mediaTime) - Int64(clamping: vod.baseMediaDecodeTime)
            var body = try rewriter.rewrite(bytes, delta: delta, name: vod.file)
            if let ad = options.ad {
                body = Self.insertingCues(ad, into: body, segment: live, timescale: rep.timescale)
            }
            var reply = Reply(bytes: body, contentType: mime, clock: clock)
            reply.media = true
            // Still being "produced" (available early through availabilityTimeOffset): each CMAF
            // chunk goes out when its last sample exists, as a low-latency encoder would send it.
            // (Wall-clock times: media time over the media clock's rate, `drift_`.)
            let wall = { (media: UInt64) in
                options.availabilityStartTime + Double(media) / Double(rep.timescale) / options.mediaRate
            }
            if wall(live.mediaTime + live.duration) > now {
                let chunks = try MediaSegmentTiming.chunks(
                    MP4Reader(bytes: reply.body, name: vod.file), track: rep.track)
                reply.schedule = chunks.map { ($0.bytes, wall(live.mediaTime + $0.end)) }
            }
            if let kbps = options.bandwidth(at: now) { reply.limit(kbps) }
            return reply
        } catch {
            return Reply(.internalServerError, error.description, clock: clock)
        }
    }

    /// `body` with an `emsg` SCTE-35 splice_insert for each ad break starting in this segment
    /// or the next one (same length assumed), placed before the first `moof` (after `styp`).
    static func insertingCues(_ ad: LiveOptions.Recurring, into body: [UInt8], segment: LiveSegment, timescale: UInt64)
        -> [UInt8]
    {
        let start = Double(segment.mediaTime) / Double(timescale)
        let length = Double(segment.duration) / Double(timescale)
        let breaks = ad.occurrences(in: start...(start + 2 * length - 1e-9)).filter { $0.time < start + 2 * length }
        guard !breaks.isEmpty else { return body }
        var boxes: [UInt8] = []
        for (k, t) in breaks {
            let id = UInt32(truncatingIfNeeded: k)
            let cue = SpliceInfo.spliceInsertSection(eventID: id, outOfNetwork: true, duration: ad.length)
            boxes += EventMessageBox.version1(
                scheme: EventScheme.scte35Binary, timescale: 1000, time: UInt64((t * 1000).rounded()),
                duration: UInt32((ad.length * 1000).rounded()),
                id: id, message: cue)
        }
        // After a leading styp (if any).
        var at = 0
        if body.count >= 8, body[4...7].elementsEqual("styp".utf8) {
            at = Int(body[0]) << 24 | Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3])
        }
        return Array(body[..<at]) + boxes + Array(body[at...])
    }

    // MARK: /time

    private func time(_ components: [String], query: String?) -> Reply {
        var options = LiveOptions()
        var endpoint: String?
        for (i, component) in components.enumerated() {
            if i == components.count - 1 && !LiveOptions.looksLikeOption(Substring(component)) {
                endpoint = component
                break
            }
            do {
                try options.apply(Substring(component))
            } catch {
                return Reply(.badRequest, error.message)
            }
        }
        let clock = OriginClock(offset: options.timeOffset)
        let now = clock.now()
        switch endpoint ?? query ?? "xsdate" {
        case "xsdate", "iso": return Reply(.ok, OriginClock.xsDate(now), clock: clock).noNewline
        case "ms": return Reply(.ok, OriginClock.milliseconds(now), clock: clock).noNewline
        case "head": return Reply(.ok, clock: clock)
        case let other: return Reply(.notFound, "no time endpoint \"\(other)\" (xsdate, iso, ms, head)", clock: clock)
        }
    }

    // MARK: /static

    private func staticFile(_ components: [String], ifNoneMatch: String?) -> Reply {
        guard let root = staticRoot else { return Reply(.notFound, "no static directory is configured") }
        guard !components.isEmpty,
            !components.contains(where: { $0 == ".." || $0 == "." || $0.contains("/") || $0.contains("\0") })
        else {
            return Reply(.notFound, "no such static file")
        }
        let path = ([root] + components).joined(separator: "/")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let data = FileManager.default.contents(atPath: path)
        else {
            return Reply(.notFound, "no static file \(components.joined(separator: "/"))")
        }
        var reply = Reply(bytes: [UInt8](data), contentType: Self.contentType(path), clock: OriginClock())
        reply.media = reply.contentType.hasPrefix("video/") || reply.contentType.hasPrefix("audio/")
        // FNV-1a of the content: a changed file gets a new ETag, an unchanged one a 304.
        let hash = data.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        reply.etag = "\"\(String(hash, radix: 16))\""
        if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date {
            reply.lastModified = OriginClock.httpDate(modified.timeIntervalSince1970)
        }
        if let ifNoneMatch,
            ifNoneMatch.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == reply.etag })
        {
            reply.status = .notModified
            reply.body = []
        }
        return reply
    }

    static func contentType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "mpd": return "application/dash+xml"
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "mp4", "m4v", "m4s", "cmfv": return "video/mp4"
        case "m4a", "cmfa": return "audio/mp4"
        case "ts": return "video/mp2t"
        case "txt": return "text/plain; charset=utf-8"
        default: return "application/octet-stream"
        }
    }
}

extension OriginResponder.Reply {
    /// The body without the trailing newline plain-text replies get (time values are exact text).
    var noNewline: Self {
        var copy = self
        if copy.body.last == UInt8(ascii: "\n") { copy.body.removeLast() }
        return copy
    }
}

/// `POST /plays`: a proof-of-play receiver, as an operator's server would be: it keeps every
/// record's id with how many times it came, answers 503 while ``outage`` is set (an outage
/// the uploader must ride out), and 400 to a body that is not a batch of records.
/// The origin's request log (`GET /origin/requests`): the last ``kept`` requests, each its
/// method, path, query (without CMCD) and the Common Media Client Data it carried, as the
/// `CMCD` query argument and as `CMCD-*` headers (lower-cased names), as JSON.
final class RequestLog: Sendable {
    struct Entry {
        var method: String, path: String, query: String?, cmcdQuery: String?, cmcdHeaders: [(String, String)],
            time: Double
    }
    private let state = Locked([Entry]())
    static let kept = 2048

    func add(method: String, path: String, query: String?, cmcdQuery: String?, cmcdHeaders: [(String, String)]) {
        let entry = Entry(
            method: method, path: path, query: query, cmcdQuery: cmcdQuery, cmcdHeaders: cmcdHeaders,
            time: Date().timeIntervalSince1970)
        state.withLock {
            $0.append(entry)
            if $0.count > 2 * Self.kept { $0.removeFirst(Self.kept) }  // amortised
        }
    }

    func json() -> [UInt8] {
        let entries = state.withLock { Array($0.suffix(Self.kept)) }
        let objects: [[String: Any]] = entries.map { e in
            var o: [String: Any] = ["method": e.method, "path": e.path, "time": e.time]
            if let q = e.query { o["query"] = q }
            if let c = e.cmcdQuery { o["cmcd"] = c }
            if !e.cmcdHeaders.isEmpty {
                o["cmcdHeaders"] = Dictionary(e.cmcdHeaders, uniquingKeysWith: { a, b in a + "," + b })
            }
            return o
        }
        return Array(
            (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes]))
                ?? Data("[]".utf8))
    }
}

extension OriginResponder {
    /// The query without its `CMCD` argument, and that argument's value (decoded).
    static func splitCMCD(_ query: String?) -> (query: String?, cmcd: String?) {
        guard let query else { return (nil, nil) }
        var kept = [Substring]()
        var cmcd: String?
        for part in query.split(separator: "&", omittingEmptySubsequences: false) {
            if part.hasPrefix("CMCD=") {
                cmcd = String(part.dropFirst(5)).removingPercentEncoding ?? String(part.dropFirst(5))
            } else {
                kept.append(part)
            }
        }
        return (kept.isEmpty ? nil : kept.joined(separator: "&"), cmcd)
    }
}

/// Body bytes the origin has sent (what an uplink carries), for venue measurements:
/// `GET /origin/stats`.
/// With `?media`, also how often each of (at least) the last ``mediaPathsKept`` media paths was sent
/// whole or in part (bounded: an origin serving for days does not grow).
final class ServedBytes: Sendable {
    private let state = Locked((bytes: 0, requests: 0, media: [String: Int](), order: [String]()))
    static let mediaPathsKept = 4096

    /// `n` more bytes; `request`: they begin an answer.
    func add(_ n: Int, mediaPath: String? = nil, request: Bool = true) {
        state.withLock {
            $0.bytes += n
            if request { $0.requests += 1 }
            guard let mediaPath else { return }
            if $0.media[mediaPath] == nil {
                $0.order.append(mediaPath)
                if $0.order.count > 2 * Self.mediaPathsKept {  // forget the older half at once (amortised)
                    for old in $0.order.prefix(Self.mediaPathsKept) { $0.media[old] = nil }
                    $0.order.removeFirst(Self.mediaPathsKept)
                }
            }
            $0.media[mediaPath, default: 0] += 1
        }
    }
    var bytes: Int { state.withLock { $0.bytes } }
    var requests: Int { state.withLock { $0.requests } }

    func json(media: Bool) -> String {
        state.withLock { s in
            var out = "{\"bytes\":\(s.bytes),\"requests\":\(s.requests)"
            if media {
                let entries = s.media.sorted { $0.key < $1.key }.map {
                    "\"\($0.key.replacingOccurrences(of: "\"", with: "\\\""))\":\($0.value)"
                }
                out += ",\"media\":{\(entries.joined(separator: ","))}"
            }
            return out + "}"
        }
    }
}

public final class PlayReceiver: Sendable {
    private struct State {
        var counts: [String: Int] = [:]
        var order: [String] = []
        var batches = 0
        var outage = false
        var token: String?
        var refused = 0
    }
    private let state = Locked(State())

    public init() {}

    /// Whether the receiver answers 503 (down).
    public var outage: Bool {
        get { state.withLock { $0.outage } }
        set { state.withLock { $0.outage = newValue } }
    }

    /// The bearer token a batch must carry (`Authorization: Bearer <token>`; nil: none asked);
    /// a batch without it is answered 401 and counted in ``refused``.
    public var token: String? {
        get { state.withLock { $0.token } }
        set { state.withLock { $0.token = newValue } }
    }
    /// Batches answered 401.
    public var refused: Int { state.withLock { $0.refused } }

    /// Each record id received, with how many times.
    public var counts: [String: Int] { state.withLock { $0.counts } }
    /// The ids in the order they first came.
    public var order: [String] { state.withLock { $0.order } }
    /// Batches accepted.
    public var batches: Int { state.withLock { $0.batches } }

    func receive(_ body: [UInt8]?, key: String?, authorization: String?) -> OriginResponder.Reply {
        if outage { return OriginResponder.Reply(.serviceUnavailable, "proof-of-play receiver down") }
        let unauthorized = state.withLock { state in
            guard let token = state.token, authorization != "Bearer \(token)" else { return false }
            state.refused += 1
            return true
        }
        if unauthorized { return OriginResponder.Reply(.unauthorized, "a bearer token is needed") }
        guard let body, let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let box = object["box"] as? String, let records = object["records"] as? [[String: Any]]
        else { return OriginResponder.Reply(.badRequest, "not a batch of records") }
        state.withLock { state in
            state.batches += 1
            for record in records {
                guard let sequence = record["sequence"] as? Int else { continue }
                let id = (record["epoch"] as? String).map { "\(box)-\($0)-\(sequence)" } ?? "\(box)-\(sequence)"
                if state.counts[id] == nil { state.order.append(id) }
                state.counts[id, default: 0] += 1
            }
        }
        return OriginResponder.Reply(.ok, "{\"received\": \(records.count)}")
    }
}
