import AsyncHTTPClient
import Crypto
import Foundation
import MarqueeStreaming
import NIOCore

/// A segment fetched from its owner: under the deadline, verified (the CDN's digest, else the
/// peer's vouch) before it is used, a relay cut short finished from the CDN, a peer that lied banned.
extension PeerNetwork {
    /// Asks `peer` for `url`; on bytes verified against the CDN's word, hands them to
    /// `transfer` (finished): ``PeerOutcome``. A peer that is gone (refused, reset) is not
    /// counted as connected until it answers a hello again; one that lied is banned.
    ///
    /// `deadline` (seconds, from the player's buffer) bounds a peer that serves from its store:
    /// its answer must begin within min(deadline, 1 s) and, at the pace it comes, end within the
    /// deadline. A peer relaying the CDN for this segment (it owns it and fetches it now) is
    /// waited for while bytes keep coming (a second without one ends it), up to
    /// max(deadline, ``relayWait``): its pace is the uplink's, which going to the CDN as well
    /// would only share. A relay cut short (the owner killed mid-transfer) is finished from the
    /// CDN with a range request for the rest, when the CDN's SHA-256 can check the whole.
    func fetch(_ url: URL, from peer: PeerAddress, deadline: Double, into transfer: Transfer, proxy: VenueProxy) async
        -> PeerOutcome
    {
        guard let path = ProxyPath.path(for: url) else { return .declined }
        let peerPath = Self.prefix + path.dropFirst(ProxyPath.prefix.count)
        let peerURL = "http://\(peer)\(peerPath)"
        let auth = configuration.venueKey.map { VenueProof.mac($0, ["marquee-ask", peerPath]) }
        let limit = proxy.store.largestObject
        let client = self.client
        let started = Monotonic.now()
        let cap = max(deadline, Self.relayWait)
        async let said = describe(url, deadline: cap)
        let outcome: Result<(headers: [(String, String)], body: ByteBuffer), PeerFailure> =
            await Self.within(cap) {
                var request = HTTPClientRequest(url: peerURL)
                request.method = .GET
                if let auth { request.headers.add(name: VenueProof.authHeader, value: auth) }
                let response: HTTPClientResponse
                do {
                    response = try await client.execute(request, timeout: .milliseconds(Int64(min(deadline, 1) * 1000)))
                } catch {
                    return .failure(PeerFailure("no answer: \(error)", gone: true))
                }
                guard response.status == .ok else { return .failure(PeerFailure("HTTP \(response.status.code)")) }
                let relaying = response.headers.first(name: "Marquee-Source") != "peer-store"
                let length = response.headers.first(name: "Content-Length").flatMap(Int.init)
                var body = ByteBuffer()
                do {
                    for try await var chunk in response.body {
                        guard body.readableBytes + chunk.readableBytes <= limit else {
                            return .failure(PeerFailure("over \(limit) bytes"))
                        }
                        body.writeBuffer(&chunk)
                        let elapsed = Monotonic.now() - started
                        if !relaying, let length, elapsed > 0.2,
                            elapsed * Double(length) / Double(body.readableBytes) > deadline
                        {
                            return .failure(
                                PeerFailure(
                                    String(
                                        format: "too slow: %d of %d bytes in %.2f s", body.readableBytes, length,
                                        elapsed)))
                        }
                    }
                } catch {
                    let partial = relaying && body.readableBytes > 0 ? body : nil
                    return .failure(
                        PeerFailure(
                            "cut short after \(body.readableBytes) bytes: \(error)", gone: true, partial: partial))
                }
                return .success((response.headers.map { ($0.name, $0.value) }, body))
            } ?? .failure(PeerFailure(String(format: "not complete within %.2f s", cap)))
        var got: (headers: [(String, String)], body: ByteBuffer)
        var fromCDN = 0
        switch outcome {
        case .success(let value): got = value
        case .failure(let failure):
            logger.info("venue: \(url.lastPathComponent) from peer \(peer): \(failure.why)")
            guard failure.gone else { return .declined }
            // Not asked again until it answers a hello: the boxes re-agree on owners without it.
            state.withLock { $0.peers[peer]?.lastAnswer = nil }
            // A relay cut short (the owner died or lost its link): the rest from the CDN at once,
            // when the CDN's digest can vouch for the whole.
            guard let partial = failure.partial, await said?.sha256 != nil,
                let rest = await resume(
                    url, after: partial, limit: limit, seconds: max(0.5, cap - (Monotonic.now() - started)))
            else { return .gone }
            got = (rest.headers, rest.body)
            fromCDN = rest.fromCDN
            proxy.stats.withLock { $0.peerFallbacks += 1 }
        }
        var judged = Self.verify(
            got.body, headers: got.headers, against: await said ?? Description(headers: []), path: url.path)
        if case .unverifiable = judged, let key = configuration.venueKey {
            judged = await vouch(url, from: peer, body: got.body, key: key)
        }
        switch judged {
        case .verified: break
        case .unverifiable(let why):
            logger.info("venue: \(url.lastPathComponent) from \(peer) not used: \(why)")
            return .declined
        case .failed(let why):
            proxy.stats.withLock {
                $0.verificationFailures += 1
                $0.peerBans += 1
            }
            ban(
                peer,
                why: """
                    \(url.lastPathComponent): \(why) (known \(String(format: "%.3f", Monotonic.now() - started)) s \
                    after asking)
                    """
            )
            return .gone  // every box that asked it now asks the same next owner: the CDN once
        }
        var headers = VenueProxy.kept(got.headers, personal: false).filter {
            !["marquee-source", "content-length", "content-range"].contains($0.0.lowercased())
        }
        headers.append(("Content-Length", "\(got.body.readableBytes)"))
        transfer.receive(head: TransferHead(status: 200, reason: "OK", headers: headers, url: url))
        proxy.stats.withLock {
            $0.bytesFromPeers += Int64(got.body.readableBytes - fromCDN)
            $0.bytesFromCDN += Int64(fromCDN)
        }
        transfer.receive(chunk: got.body)
        transfer.finish(.success(()))
        logger.debug(
            """
            venue: \(url.lastPathComponent) from \(peer), \(got.body.readableBytes) bytes in \
            \(String(format: "%.3f", Monotonic.now() - started)) s
            """
        )
        return .delivered
    }

    /// How asking a peer ended: the bytes are in the transfer; the peer is gone (refused, reset,
    /// or banned for a lie: the next owner may be asked); or not from it (late, refused,
    /// unverifiable: the CDN).
    enum PeerOutcome { case delivered, gone, declined }

    /// Seconds a peer relaying the CDN is waited for at most (bytes still coming).
    static let relayWait = 3.0

    struct PeerFailure: Error {
        var why: String
        var gone = false
        /// What a relaying peer sent before it was cut short.
        var partial: ByteBuffer?
        init(_ why: String, gone: Bool = false, partial: ByteBuffer? = nil) {
            self.why = why
            self.gone = gone
            self.partial = partial
        }
    }

    /// The rest of a body a relaying peer cut short, from the CDN (`Range: bytes=<n>-`): the
    /// peer's bytes and the CDN's together (checked whole against the CDN's digest afterwards), or
    /// the CDN's whole body when it ignores the range; nil without an answer within `seconds`
    /// (the next owner, then the CDN, as for a peer that is gone). `fromCDN`: the bytes the CDN sent.
    private func resume(_ url: URL, after partial: ByteBuffer, limit: Int, seconds: Double) async
        -> (headers: [(String, String)], body: ByteBuffer, fromCDN: Int)?
    {
        let have = partial.readableBytes
        let fetcher = HTTPFetcher(client: cdn, headers: [("Range", "bytes=\(have)-")])
        guard let answer = try? await fetcher.get(url, timeout: .milliseconds(Int(seconds * 1000)), maxBytes: limit)
        else {
            logger.info("venue: \(url.lastPathComponent): the CDN did not send the rest in time")
            return nil
        }
        if answer.status == 200 { return (answer.headers, answer.body, answer.body.readableBytes) }
        guard answer.status == 206, let range = answer.header("Content-Range"), range.hasPrefix("bytes \(have)-") else {
            return nil
        }
        var body = partial
        var rest = answer.body
        body.writeBuffer(&rest)
        logger.info(
            """
            venue: \(url.lastPathComponent): \(have) bytes from the peer, the other \(answer.body.readableBytes) from \
            the CDN
            """
        )
        return (answer.headers, body, answer.body.readableBytes)
    }

    /// Whether `peer` vouches for `body` as what it served for `url`: its HMAC under the venue
    /// key of a fresh nonce, the URL and its SHA-256 must check, and that SHA-256 be the body's.
    private func vouch(_ url: URL, from peer: PeerAddress, body: ByteBuffer, key: [UInt8]) async -> Outcome {
        guard let path = ProxyPath.path(for: url) else { return .unverifiable("no proxy path") }
        let vouchPath = Self.vouchPrefix + path.dropFirst(ProxyPath.prefix.count)
        let nonce = VenueProof.nonce()
        let fetcher = HTTPFetcher(
            client: client,
            headers: [
                (VenueProof.authHeader, VenueProof.mac(key, ["marquee-ask", vouchPath])),
                (VenueProof.nonceHeader, nonce),
            ])
        guard let target = URL(string: "http://\(peer)\(vouchPath)"),
            let answer = try? await fetcher.get(target, timeout: .seconds(2), maxBytes: 4096),
            let object = try? JSONSerialization.jsonObject(with: Data(answer.body.readableBytesView)) as? [String: Any],
            let said = object["sha256"] as? String, let mac = object["mac"] as? String
        else { return .unverifiable("the peer did not vouch for its bytes") }
        guard VenueProof.check(key, ["marquee-vouch", nonce, url.absoluteString, said], mac) else {
            return .failed("its vouch is not under the venue key")
        }
        let own = SHA256.hash(data: Array(body.readableBytesView)).map { String(format: "%02x", $0) }.joined()
        guard Secrets.equal(own, said) else { return .failed("the bytes it sent are not the bytes it vouches for") }
        return .verified
    }

    static let vouchPrefix = "/v/"

    /// The CDN's word on `url` (a HEAD), nil without an answer in time.
    private func describe(_ url: URL, deadline: Double) async -> Description? {
        let answer = try? await HTTPFetcher(client: cdn).get(
            url, method: .HEAD, timeout: .milliseconds(Int(deadline * 1000)), maxBytes: 0)
        return answer.map { Description(headers: $0.headers) }
    }

    private func ban(_ address: PeerAddress, why: String) {
        let until = Monotonic.now() + configuration.banSeconds
        state.withLock { $0.peers[address]?.bannedUntil = until }
        logger.warning("venue: peer \(address) banned for \(configuration.banSeconds) s: \(why)")
    }

    /// `body`'s result, or nil when it throws or takes longer than `seconds` (it is cancelled).
    static func within<T: Sendable>(_ seconds: Double, _ body: @escaping @Sendable () async throws -> T) async -> T? {
        await withTaskGroup(of: T?.self) { group in
            group.addTask { try? await body() }
            group.addTask {
                try? await Task.sleep(for: .milliseconds(Int(seconds * 1000)))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }
}
