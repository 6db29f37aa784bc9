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
