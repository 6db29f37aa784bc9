import AsyncHTTPClient
import Foundation
import MarqueeStreaming
import NIOCore
import NIOHTTP1

/// Transfers: one per URL under way (joined by later requests), from the segment's owner among
/// the peers or from the CDN, judged for the store once ended.
extension VenueProxy {
    /// The stored answer for `key`: in the store, or once the transfer of it that has just
    /// ended is judged for the store (its digest checked) and kept. Nil: neither (fetched).
    func stored(_ key: String) async -> StoredObject? {
        if let object = store.get(key) { return object }
        guard let ended = inflight.withLock({ $0[key] }), ended.isFinished else { return nil }
        await ended.settled()
        return store.get(key)
    }

    /// Where a request's answer comes from: a transfer (joined, or started for it), or the
    /// store (the transfer it would have joined was stored as it looked).
    enum Found {
        case transfer(Transfer, joined: Bool)
        case stored(StoredObject)
    }

    /// The transfer under way for `key` (or ended, not yet judged for the store: its body is
    /// whole in it), the object stored since the caller looked, or a new transfer. A transfer
    /// leaves the table only once judged (``finishTransfer(_:url:key:manifest:)`` stores it
    /// first), and the store is looked at again here under the table's lock: a request that
    /// comes just as a transfer ends is served from one or the other, never fetched again.
    func transfer(for url: URL, key: String, manifest: Bool, askPeers: Bool, peerDeadline: Double) -> Found {
        let transfer = Transfer(retainLimit: store.largestObject, budget: inflightBudget)
        let found: Found? = inflight.withLock { map in
            if let other = map[key], !other.isSettled { return .transfer(other, joined: true) }
            if !manifest, let object = store.get(key) { return .stored(object) }
            map[key] = transfer
            return nil
        }
        if let found { return found }
        let task = Task {
            // The owner first; when it is gone (refused, reset), the next owner among those left
            // (the one every box now agrees on), if half the deadline is left; else the CDN.
            if askPeers { await peers.settle() }
            let began = Monotonic.now()
            var asked = 0
            while askPeers, asked < 2, let owner = peers.owner(of: key) {
                asked += 1
                let left = peerDeadline - (Monotonic.now() - began)
                guard asked == 1 || left > peerDeadline / 2 else { break }
                switch await peers.fetch(url, from: owner, deadline: left, into: transfer, proxy: self) {
                case .delivered:
                    finishTransfer(transfer, url: url, key: key, manifest: manifest)
                    return
                case .gone: continue
                case .declined: break
                }
                break
            }
            if asked > 0 { stats.withLock { $0.peerFallbacks += 1 } }
            let fromCDN = Monotonic.now()
            await runUpstream(url, method: .GET, headers: [], into: transfer)
            if !manifest {
                logger.debug(
                    """
                    venue: \(url.lastPathComponent) from the CDN in \
                    \(String(format: "%.3f", Monotonic.now() - fromCDN)) s, \(String(format: "%.3f", fromCDN - began)) \
                    s after the request (\(asked) peers asked, deadline \(String(format: "%.2f", peerDeadline)) s)
                    """
                )
            }
            finishTransfer(transfer, url: url, key: key, manifest: manifest)
        }
        // A player that gives a try up (too slow for its buffer) asks again at once: the transfer
        // goes on into the store and the next try joins it. Only a body too large to keep is
        // cancelled when nobody reads it any more.
        transfer.onAbandoned.withLock { $0 = { [weak transfer] in if transfer?.isJoinable == false { task.cancel() } } }
        return .transfer(transfer, joined: false)
    }

    /// Judges an ended transfer for the store (keeps it when it may be), then takes it out of
    /// the in-flight table and settles it: in that order, so that a request in between finds
    /// it in one or the other (``transfer(for:key:manifest:askPeers:peerDeadline:)``).
    private func finishTransfer(_ transfer: Transfer, url: URL, key: String, manifest: Bool) {
        keep(transfer, url: url, key: key, manifest: manifest)
        inflight.withLock { if $0[key] === transfer { $0[key] = nil } }
        transfer.settle()
    }

    /// Stores an ended transfer's body when it may be: a whole 200, cacheable by its headers, its
    /// length as said, its digest (when given) its own.
    private func keep(_ transfer: Transfer, url: URL, key: String, manifest: Bool) {
        guard !manifest, let head = transfer.head, head.status == 200, let body = transfer.body() else { return }
        let control = (head.header("Cache-Control") ?? "").lowercased()
        guard !control.contains("no-store"), !control.contains("no-cache"), !control.contains("private") else { return }
        if let length = head.header("Content-Length").flatMap(Int.init), length != body.readableBytes { return }
        if let problem = PeerNetwork.problem(body, headers: head.headers, path: url.path) {
            logger.info("venue: \(Redact.url(url)) not kept: \(problem)")
            return
        }
        var expires: Double?
        if let maxAge = Self.maxAge(control) {
            expires = Monotonic.now() + maxAge - Double(head.header("Age").flatMap(Int.init) ?? 0)
        }
        store.put(key, StoredObject(headers: Self.kept(head.headers, personal: false), body: body, expires: expires))
    }

    static func maxAge(_ control: String) -> Double? {
        for directive in control.split(separator: ",") {
            let d = directive.trimmingCharacters(in: .whitespaces)
            for name in ["s-maxage=", "max-age="] where d.hasPrefix(name) { return Double(d.dropFirst(name.count)) }
        }
        return nil
    }

    /// A transfer fetching `url` from upstream on its own (not in the in-flight map).
    func fetchUpstream(_ url: URL, method: HTTPMethod, headers: [(String, String)]) -> Transfer {
        let transfer = Transfer(retainLimit: store.largestObject, budget: inflightBudget)
        let task = Task { await runUpstream(url, method: method, headers: headers, into: transfer) }
        transfer.onAbandoned.withLock { $0 = { task.cancel() } }
        return transfer
    }

    /// Fetches `url` into `transfer`: the head within 8 s, then the body as it comes (a body
    /// that stops for the client's idle timeout fails).
    func runUpstream(_ url: URL, method: HTTPMethod, headers: [(String, String)], into transfer: Transfer) async {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        do {
            let sent = Monotonic.now()
            let response = try await client.execute(request, timeout: .seconds(8))
            let received = Monotonic.now()
            transfer.receive(
                head: TransferHead(
                    status: Int(response.status.code), reason: response.status.reasonPhrase,
                    headers: response.headers.map { ($0.name, $0.value) },
                    url: response.url ?? url))
            // An HLS playlist's text is also read here, once for all its readers: when it lists
            // its segments tells when they are published (``PublicationBook``).
            var learns =
                method == .GET && response.status.code == 200
                && ManifestRewriter.kind(path: url.path, contentType: response.headers.first(name: "Content-Type"))
                    == .hls
            var playlist = ByteBuffer()
            for try await chunk in response.body {
                stats.withLock { $0.bytesFromCDN += Int64(chunk.readableBytes) }
                if learns {
                    var c = chunk
                    learns = playlist.readableBytes + c.readableBytes <= HLSPlaylist.maxBytes
                    if learns { playlist.writeBuffer(&c) }
                }
                transfer.receive(chunk: chunk)
            }
            // (Learned before the readers see the end: each of them then reads the age.)
            if learns {
                publications.learn(
                    url, text: String(decoding: playlist.readableBytesView, as: UTF8.self), sent: sent,
                    received: received)
                probePublication(url)
            }
            transfer.finish(.success(()))
        } catch {
            stats.withLock { $0.upstreamErrors += 1 }
            if !Task.isCancelled { logger.info("venue: upstream \(Redact.url(url)): \(error)") }
            transfer.finish(.failure(error))
        }
    }

    /// The proxy's own request for a live HLS playlist without dates, in the middle of when its
    /// next publication is expected (``PublicationBook/probeTimes(_:now:)``): while boxes follow
    /// it and it is not known within 1 ms, probes spread over when it may come (then one in the
    /// middle) narrow it for all of them sooner than their reloads alone: a box that joins a few
    /// segments after the first starts where that one is.
    func probePublication(_ url: URL) {
        guard port != nil else { return }  // (a stopped proxy probes no more)
        for at in publications.probeTimes(url, now: Monotonic.now()) {
            Task { [self] in
                let wait = at - Monotonic.now()
                if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
                guard port != nil else {
                    publications.probed(url)
                    return
                }
                // (Its answer is learned when its body ends; the last one plans the next probes.)
                await runUpstream(url, method: .GET, headers: [], into: Transfer(retainLimit: HLSPlaylist.maxBytes))
                publications.probed(url)
                probePublication(url)
            }
        }
    }

    /// Response headers worth repeating (hop-by-hop and length ones are the proxy's own). An
    /// answer that is stored or shared (not `personal`: asked without credentials or cookies)
    /// never carries one user's cookies or credentials to another.
    static func kept(_ headers: [(String, String)], personal: Bool) -> [(String, String)] {
        let dropped: Set<String> = [
            "connection", "keep-alive", "transfer-encoding", "content-length", "te", "trailer", "upgrade",
            "proxy-authenticate",
            "proxy-connection", "content-encoding", "server",
            // (What a box is told of the publication is this proxy's to say, not upstream's.)
            HLSPublicationAge.header.lowercased(),
        ]
        let perUser: Set<String> = ["set-cookie", "set-cookie2", "www-authenticate", "authentication-info"]
        return headers.filter {
            !dropped.contains($0.0.lowercased()) && (personal || !perUser.contains($0.0.lowercased()))
        }
    }
}
