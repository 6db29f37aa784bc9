import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import MarqueeStreaming
import NIOCore
import NIOHTTP1

/// A player's request: passed through, served from the store, or answered from a transfer (a
/// manifest rewritten, any other body passed on as it arrives), with redirects kept on the proxy.
extension VenueProxy {
    private static let forwardedRequestHeaders: [HTTPField.Name] = [
        .range, .userAgent, .accept, .acceptLanguage, .authorization, .cookie, .ifNoneMatch, .ifModifiedSince,
    ]

    func serveToPlayer(_ request: Request, url: URL) async -> Response {
        let arrived = Monotonic.now()  // (a playlist's answer tells how long the proxy held it)
        let headers = request.headers
        let key = url.absoluteString
        let manifest = ManifestRewriter.kind(path: url.path, contentType: nil) != nil
        let shared = headers[.range] == nil && headers[.authorization] == nil && headers[.cookie] == nil
        if request.method == .head || !shared {
            var forwarded: [(String, String)] = []
            for name in Self.forwardedRequestHeaders {
                if let v = headers[name] { forwarded.append((name.rawName, v)) }
            }
            let transfer = fetchUpstream(url, method: request.method == .head ? .HEAD : .GET, headers: forwarded)
            return await answer(
                transfer, url: url, head: request.method == .head, origin: "pass", to: .player, personal: !shared,
                headers: forwarded, arrived: arrived)
        }
        if !manifest, let object = await stored(key) { return servedFromStore(object) }
        // Right after the start, a manifest waits until the venue is found as well (segments wait
        // in the transfer): the player then plans its first segments from a manifest as fresh as
        // the moment they can be shared, not one read before a wait of up to 2 s.
        if manifest { await peers.settle() }
        let deadline = peerDeadline(headers, query: url.query)
        switch transfer(for: url, key: key, manifest: manifest, askPeers: !manifest, peerDeadline: deadline) {
        case .stored(let object): return servedFromStore(object)
        case .transfer(let transfer, let joined):
            if joined { stats.withLock { $0.coalesced += 1 } }
            return await answer(
                transfer, url: url, head: false, origin: joined ? "coalesced" : "fetched", to: .player, arrived: arrived
            )
        }
    }

    private func servedFromStore(_ object: StoredObject) -> Response {
        stats.withLock {
            $0.storeHits += 1
            $0.bytesServedToPlayers += Int64(object.body.readableBytes)
        }
        return Self.stored(object, source: "store")
    }

    /// Seconds a segment may wait for a peer: half the player's buffer (CMCD `bl`, in
    /// milliseconds, from the request's `CMCD-Request` header or its `CMCD` query argument; else
    /// what the local player reported), within 0.25–8 s; without either, the configuration's
    /// default.
    private func peerDeadline(_ headers: HTTPFields, query: String?) -> Double {
        var buffer: Double?
        var sources: [String] = []
        if let header = headers[HTTPField.Name("CMCD-Request")!] { sources.append(header) }
        for item in (query ?? "").split(separator: "&") where item.hasPrefix("CMCD=") {
            sources.append(String(item.dropFirst(5)).removingPercentEncoding ?? "")
        }
        for value in sources {
            for item in value.split(separator: ",") where item.hasPrefix("bl=") {
                buffer = Double(item.dropFirst(3)).map { $0 / 1000 }
            }
        }
        guard let seconds = buffer ?? playerBuffer.withLock({ $0 }), seconds.isFinite else {
            return configuration.defaultPeerDeadline
        }
        return min(8, max(0.25, seconds / 2))
    }

    static func stored(_ object: StoredObject, source: String) -> Response {
        var headers = HTTPFields()
        for (name, value) in object.headers {
            if let n = HTTPField.Name(name) { headers.append(HTTPField(name: n, value: value)) }
        }
        headers[HTTPField.Name("Marquee-Source")!] = source
        return Response(status: .ok, headers: headers, body: ResponseBody(byteBuffer: object.body))
    }

    /// The player's answer from `transfer`: the upstream status and headers; a manifest
    /// collected and rewritten; any other body passed on as it arrives. `headers`: the
    /// request's own that went upstream with it (a `Range`: asked again with them). `arrived`:
    /// when the request came (monotonic seconds; nil: now).
    func answer(
        _ transfer: Transfer, url: URL, head: Bool, origin: String, to audience: Audience, personal: Bool = false,
        headers forwarded: [(String, String)] = [], arrived: Double? = nil
    ) async -> Response {
        let arrived = arrived ?? Monotonic.now()
        guard let body = transfer.read(), let headReader = transfer.read() else {
            // The body outgrew what a transfer keeps before this request joined: fetch alone.
            return await answer(
                fetchUpstream(url, method: .GET, headers: forwarded), url: url, head: head, origin: "pass",
                to: audience, personal: personal, headers: forwarded, arrived: arrived)
        }
        var upstreamHead: TransferHead?
        do {
            for try await part in headReader {
                if case .head(let h) = part {
                    upstreamHead = h
                    break
                }
            }
        } catch {
            return Self.plain(.badGateway, "upstream \(Redact.url(url)): \(error)")
        }
        guard let upstreamHead else { return Self.plain(.badGateway, "upstream \(Redact.url(url)) gave no answer") }
        var headers = HTTPFields()
        for (name, value) in Self.kept(upstreamHead.headers, personal: personal) {
            if let n = HTTPField.Name(name) { headers.append(HTTPField(name: n, value: value)) }
        }
        if (300..<400).contains(upstreamHead.status), let location = upstreamHead.header("Location") {
            headers[.location] = redirect(location, from: url)
        }
        headers[HTTPField.Name("Marquee-Source")!] = origin
        let status = HTTPResponse.Status(code: upstreamHead.status, reasonPhrase: upstreamHead.reason)
        if head {
            if let length = upstreamHead.header("Content-Length"), upstreamHead.header("Content-Encoding") == nil {
                headers[.contentLength] = length
            }
            return Response(status: status, headers: headers, body: ResponseBody())
        }
        if (200..<300).contains(upstreamHead.status),
            let kind = ManifestRewriter.kind(path: url.path, contentType: upstreamHead.header("Content-Type"))
        {
            var all = ByteBuffer()
            do {
                for try await part in body {
                    guard case .chunk(var c) = part else { continue }
                    guard all.readableBytes + c.readableBytes <= 16 << 20 else {
                        return Self.plain(.badGateway, "manifest over 16 MiB")
                    }
                    all.writeBuffer(&c)
                }
            } catch {
                return Self.plain(.badGateway, "upstream \(Redact.url(url)): \(error)")
            }
            let text = String(decoding: all.readableBytesView, as: UTF8.self)
            let rewritten = ManifestRewriter(requested: url, answered: url, allows: { [self] in allows($0) }).rewrite(
                text, kind: kind)
            headers[.eTag] = nil
            if kind == .hls, let age = publications.age(url, text: text, now: Monotonic.now(), arrived: arrived) {
                headers[HTTPField.Name(HLSPublicationAge.header)!] = age.headerValue
            }
            let out = ByteBuffer(string: rewritten)
            count(out.readableBytes, to: audience)
            return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: out))
        }
        let length =
            upstreamHead.header("Content-Encoding") == nil
            ? upstreamHead.header("Content-Length").flatMap(Int.init) : nil
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: length) { [self] writer in
                for try await part in body {
                    guard case .chunk(let c) = part else { continue }
                    count(c.readableBytes, to: audience)
                    try await writer.write(c)
                }
                try await writer.finish(nil)
            })
    }

    /// Where a redirect from `url` leads, for the player: a served target as its proxy path
    /// (checked again when asked for), anything else as the absolute URL (the player's own
    /// business; the proxy never fetches it).
    func redirect(_ location: String, from url: URL) -> String {
        guard let next = URL(string: location, relativeTo: url)?.absoluteURL else { return location }
        if let target = UpstreamTarget(url: next), entry(for: target) != nil { return target.proxyPath }
        return next.absoluteString
    }

    enum Audience { case player, peer }

    private func count(_ bytes: Int, to audience: Audience) {
        stats.withLock {
            switch audience {
            case .player: $0.bytesServedToPlayers += Int64(bytes)
            case .peer: $0.bytesServedToPeers += Int64(bytes)
            }
        }
    }
}
