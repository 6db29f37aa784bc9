import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// Why a request failed. `code` is the kind; `url` and `message` say which and how.
package struct FetchError: Error, Hashable, Sendable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case status, timeout, network, tooLarge, invalidURL, cancelled, insecure
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }
        /// The server answered with a non-2xx status (`FetchError.status` holds it).
        package static let status = Code(.status)
        /// No complete answer within the deadline.
        package static let timeout = Code(.timeout)
        /// Connection refused/reset, DNS, TLS.
        package static let network = Code(.network)
        /// The body is larger than allowed.
        package static let tooLarge = Code(.tooLarge)
        /// Not an http(s) URL.
        package static let invalidURL = Code(.invalidURL)
        package static let cancelled = Code(.cancelled)
        /// A transport a document may not come over: plain http without the allowance, or a
        /// redirect from https to http (``HTTPFetcher/getDocument(_:allowHTTP:timeout:maxBytes:)``).
        package static let insecure = Code(.insecure)
        package var description: String { base.rawValue }
    }

    package var code: Code
    /// The URL asked for, without its query or user-info.
    package var url: String
    /// HTTP status for `.status`, else 0.
    package var status: Int
    package var message: String
    /// For a 3xx `.status`: its `Location` header (a client that follows no redirect).
    package var location: String?

    /// `url` is kept redacted (``Redact``): an error's text goes to logs and events.
    package init(_ code: Code, url: String, status: Int = 0, message: String) {
        self.code = code
        self.url = Redact.url(url)
        self.status = status
        self.message = message
    }

    package var description: String {
        code == .status ? "HTTP \(status) for \(url)" : "\(code) fetching \(url): \(message)"
    }
}

/// What a completed request returned, with the monotonic times around it (for clock sync
/// and throughput).
package struct FetchResult: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: ByteBuffer
    /// Monotonic seconds when the request was sent / the response head arrived / the body ended.
    package var sent: Double
    package var headReceived: Double
    package var finished: Double
    /// Where the response finally came from, after redirects (nil: the URL asked for).
    package var url: URL? = nil

    /// When the server answered, best estimated (monotonic seconds): the middle of the round
    /// trip from sending to the response head.
    package var answered: Double { (sent + headReceived) / 2 }

    package func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }

    /// The `Date` response header as a date (one-second resolution).
    package var date: Date? { header("Date").flatMap(HTTPDate.parse) }
}

/// How one kind of request (manifest, init segment, media segment, key) is fetched: how long
/// it may take and how often, how soon it is tried again. A failure is retried when it can
/// pass (a reset, a timeout, 5xx, 404 at a live edge, 408, 429) after `retryDelay` doubling
/// up to `maxRetryDelay`, ±25 % jitter, at once after a reset; not a 4xx that says the
/// request itself is wrong, a body too large, an invalid URL. Anchors: dash.js retries a
/// manifest 3× at 500 ms and segments 3× at 1 s; Shaka 2 attempts doubling from 1 s.
package struct FetchPolicy: Sendable, Hashable {
    /// Tries in all (≥ 1).
    package var attempts: Int
    /// Seconds before the first retry (doubling).
    package var retryDelay: Double
    package var maxRetryDelay: Double
    /// Seconds one try may take in all (head and body).
    package var timeout: Double
    /// Seconds until the response head (≤ `timeout`): a server that accepted the request but
    /// does not answer is given up sooner than a slow body. A body that stops arriving is given up
    /// after ``HTTPFetcher/idleTimeout``.
    package var firstByteTimeout: Double
    /// Whether a try that timed out is made again (a hung server: better the backup source).
    package var retriesTimeouts: Bool

    package init(
        attempts: Int, retryDelay: Double, maxRetryDelay: Double, timeout: Double, firstByteTimeout: Double? = nil,
        retriesTimeouts: Bool = true
    ) {
        self.attempts = max(1, attempts)
        self.retryDelay = max(0, retryDelay)
        self.maxRetryDelay = max(self.retryDelay, maxRetryDelay)
        self.timeout = max(0.1, timeout)
        self.firstByteTimeout = min(self.timeout, max(0.1, firstByteTimeout ?? timeout))
        self.retriesTimeouts = retriesTimeouts
    }

    /// A manifest or playlist: 4 tries from 0.5 s, 10 s each, the head within 6 s; a timeout is
    /// not tried again (the source has hung: the session moves on to a backup, recovery comes
    /// back later).
    package static let manifest = FetchPolicy(
        attempts: 4, retryDelay: 0.5, maxRetryDelay: 4, timeout: 10, firstByteTimeout: 6, retriesTimeouts: false)
    /// An init segment: 4 tries from 0.5 s, 10 s each, the head within 6 s (the caller retries
    /// on for good).
    package static let initSegment = FetchPolicy(
        attempts: 4, retryDelay: 0.5, maxRetryDelay: 4, timeout: 10, firstByteTimeout: 6)
    /// An AES-128 key: 3 tries from 0.5 s, 5 s each, the head within 4 s.
    package static let key = FetchPolicy(
        attempts: 3, retryDelay: 0.5, maxRetryDelay: 2, timeout: 5, firstByteTimeout: 4)

    /// Whether `error` may pass on a retry.
    package static func isTransient(_ error: FetchError) -> Bool {
        switch error.code {
        case .network, .timeout: true
        case .status: error.status >= 500 || [404, 408, 425, 429].contains(error.status)
        default: false
        }
    }

    /// Seconds to wait before try `attempt + 1` after `error` (jittered ±25 %).
    package func delay(after attempt: Int, error: FetchError) -> Double {
        if error.code == .network && attempt == 1 { return 0 }  // a reset: again at once
        let base = min(maxRetryDelay, retryDelay * Double(1 << min(attempt - 1, 16)))
        return base * Double.random(in: 0.75...1.25)
    }
}

/// GETs with AsyncHTTPClient: whole bodies (manifests, segments) or streamed chunk by chunk
/// (segments delivered while they are being produced).
///
/// Every request has a deadline for its response head (`firstByte`) and one for the whole
/// (`timeout`); with the default client a connection is given up after ``connectTimeout`` and a
/// response whose bytes stop arriving after ``idleTimeout`` (ExoPlayer's `DefaultHttpDataSource`
/// waits 8 s for each). Redirects: at most ``maxRedirects``, no cycle.
package struct HTTPFetcher: Sendable {
    package let client: HTTPClient
    /// Headers added to every request (per-source headers, cookies).
    package var headers: [(String, String)]
    /// Common Media Client Data sent with every GET and HEAD (off when nil).
    package var cmcd: CMCDSession?

    /// Seconds a connection may take to open (default client); a refused one fails at once.
    package static let connectTimeout = 5
    /// Seconds without a byte of an answer (head or body) before it is given up (default client).
    package static let idleTimeout = 5
    /// Redirects followed for one request (default client); a cycle is an error at once.
    package static let maxRedirects = 10

    /// The client of every fetcher that is not given one: AsyncHTTPClient's shared settings
    /// (browser-like, decompression limited) with the timeouts and redirect limit above. Never
    /// shut down (it lives as long as the process, as `HTTPClient.shared` does).
    package static let defaultClient: HTTPClient = {
        var configuration = HTTPClient.Configuration.singletonConfiguration
        configuration.timeout = .init(connect: .seconds(Int64(connectTimeout)), read: .seconds(Int64(idleTimeout)))
        configuration.redirectConfiguration = .follow(max: maxRedirects, allowCycles: false)
        // A refused or failed connection fails its request at once (our ``FetchPolicy`` retries,
        // and a request with alternative locations moves on): the pool's own retries would hold
        // it until the connect timeout.
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    package init(client: HTTPClient = HTTPFetcher.defaultClient, headers: [(String, String)] = []) {
        self.client = client
        self.headers = headers
    }

    /// Fetches `url` whole: the head within `firstByte` (default: `timeout`), all of it within
    /// `timeout`. `range`: only those bytes of it (``RangedBody``).
    package func get(
        _ url: URL, method: HTTPMethod = .GET, timeout: Duration = .seconds(10), firstByte: Duration? = nil,
        maxBytes: Int = 64 << 20,
        range: ByteRange? = nil
    ) async throws(FetchError) -> FetchResult {
        if let range, range.length > maxBytes {
            throw FetchError(
                .tooLarge, url: url.absoluteString, message: "byte range of \(range.length) bytes is over \(maxBytes)")
        }
        var chunks = ByteBuffer()
        var result = try await stream(url, method: method, timeout: timeout, firstByte: firstByte, range: range) {
            (chunk) throws(FetchError) in
            guard chunks.readableBytes + chunk.readableBytes <= maxBytes else {
                throw FetchError(.tooLarge, url: url.absoluteString, message: "body over \(maxBytes) bytes")
            }
            var chunk = chunk
            chunks.writeBuffer(&chunk)
        }
        result.body = chunks
        return result
    }

    /// POSTs `body` to `url` (with `headers`, after the fetcher's own); returns the status and
    /// the answer's body (up to 64 KiB). Throws on no answer within `timeout`.
    package func post(
        _ url: URL, body: [UInt8], contentType: String = "application/json", headers extra: [(String, String)] = [],
        timeout: Duration = .seconds(30)
    ) async throws(FetchError) -> (status: Int, body: ByteBuffer) {
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        for (name, value) in headers + extra { request.headers.add(name: name, value: value) }
        request.headers.replaceOrAdd(name: "Content-Type", value: contentType)
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(
                request, timeout: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000))
            let answer = try await response.body.collect(upTo: 64 << 10)
            return (Int(response.status.code), answer)
        } catch let error as FetchError {
            throw error
        } catch {
            throw FetchError(
                .network, url: url.absoluteString,
                message: "POST: " + Self.describe(error, host: url.host ?? url.absoluteString))
        }
    }

    /// Fetches `url` whole under `policy`: transient failures are tried again (see
    /// ``FetchPolicy``); throws the last error. `onRetry` hears each failure that is retried.
    package func get(
        _ url: URL, policy: FetchPolicy, maxBytes: Int = 64 << 20, range: ByteRange? = nil,
        onRetry: (FetchError) -> Void = { _ in }
    ) async throws(FetchError) -> FetchResult {
        var attempt = 0
        while true {
            attempt += 1
            do {
                return try await get(
                    url, timeout: .milliseconds(Int(policy.timeout * 1000)),
                    firstByte: .milliseconds(Int(policy.firstByteTimeout * 1000)),
                    maxBytes: maxBytes, range: range)
            } catch {
                guard attempt < policy.attempts, FetchPolicy.isTransient(error),
                    policy.retriesTimeouts || error.code != .timeout,
                    !Task.isCancelled
                else { throw error }
                onRetry(error)
                let wait = policy.delay(after: attempt, error: error)
                if wait > 0 {
                    do { try await Task.sleep(for: .milliseconds(Int(wait * 1000))) } catch {
                        throw FetchError(.cancelled, url: url.absoluteString, message: "cancelled")
                    }
                }
            }
        }
    }

    /// What the request's task hands the caller: the head, the body's chunks, and a tick every
    /// ``tick`` while waiting (deadlines are judged, the caller can judge its own).
    fileprivate enum Part: Sendable {
        /// `sent`: when the (final) request's head went out, if that was seen.
        case head(status: Int, reason: String, headers: [(String, String)], sent: Double?, at: Double, url: URL?)
        case chunk(ByteBuffer)
        case tick
    }

    /// How often a waiting ``stream(_:method:timeout:firstByte:idle:range:onChunk:onTick:awaitingHead:)`` wakes.
    package static let tick = Duration.milliseconds(100)

    /// Fetches `url`, handing each body chunk to `onChunk` as it arrives: the head within
    /// `firstByte` (default: `timeout`), the whole body within `timeout`, and with `idle` no
    /// wait of more than that for the next chunk (else ``HTTPFetcher/idleTimeout``): `.timeout`.
    /// While a chunk is awaited, `onTick` is called about every ``tick`` (it may throw to give
    /// the request up: a download too slow for the caller); while the head is awaited,
    /// `awaitingHead` is (it may throw to give up an answer no longer wanted: a live segment
    /// already late). The returned result's `body` is empty.
    /// `range`: only those bytes are asked for (`Range: bytes=a-b`) and handed on, the answer
    /// checked and cut to them (``RangedBody``); a range that cannot be asked for (empty, over
    /// ``ByteRange/maxLength``) is refused (`.tooLarge`) without a request.
    package func stream(
        _ url: URL, method: HTTPMethod = .GET, timeout: Duration = .seconds(10), firstByte: Duration? = nil,
        idle: Duration? = nil,
        range: ByteRange? = nil, onChunk: (ByteBuffer) async throws(FetchError) -> Void,
        onTick: (() throws(FetchError) -> Void)? = nil,
        awaitingHead: (() throws(FetchError) -> Void)? = nil
    ) async throws(FetchError) -> FetchResult {
        let text = url.absoluteString
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw FetchError(.invalidURL, url: text, message: "only http and https URLs can be fetched")
        }
        if let problem = range?.problem { throw FetchError(.tooLarge, url: text, message: problem) }
        var fields = HTTPHeaders()
        for (name, value) in headers { fields.add(name: name, value: value) }
        if let range { fields.replaceOrAdd(name: "Range", value: range.header) }
        if let cmcd, cmcd.mode == .headers {
            for (name, value) in cmcd.headers(for: url) { fields.add(name: name, value: value) }
        }
        let request: HTTPClient.Request
        do {
            request = try HTTPClient.Request(
                url: cmcd?.mode == .query ? cmcd!.url(url).absoluteString : text, method: method, headers: fields)
        } catch {
            throw FetchError(.invalidURL, url: text, message: "\(error)")
        }
        let sent = Monotonic.now()
        func seconds(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        let total = seconds(timeout)
        let idleLimit = idle.map(seconds)
        let headLimit = min(total, seconds(firstByte ?? timeout))
        // The request's parts come over a stream, so the caller's loop also wakes on ticks: a
        // body that stalls or crawls is judged without a byte arriving. AsyncHTTPClient's
        // delegate hands them over on the connection's event loop, where the request's sending
        // and its answer's head are timed (not after a hop to a busy cooperative pool: the live
        // edge and the server clock are learned from those times).
        let (parts, sink) = AsyncThrowingStream<Part, any Error>.makeStream()
        let delegate = PartDelegate(sink: sink)
        let task = client.execute(
            request: request, delegate: delegate, deadline: .now() + .nanoseconds(Int64(total * 1e9)))
        let headTimer = task.eventLoop.scheduleTask(in: .nanoseconds(Int64(headLimit * 1e9))) {
            if delegate.giveUpWaitingForHead(
                FetchError(.timeout, url: text, message: String(format: "no answer within %.1f s", headLimit)))
            {
                task.cancel()
            }
        }
        let ticker = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: Self.tick)
                sink.yield(.tick)
            }
        }
        defer {
            headTimer.cancel()
            task.cancel()
            ticker.cancel()
        }
        do {
            var head: (status: Int, headers: [(String, String)], sent: Double, at: Double, url: URL?)?
            var lastByte = sent
            var ranged: RangedBody?
            receiving: for try await part in parts {
                let now = Monotonic.now()
                switch part {
                case .head(let status, let reason, let headers, let wireSent, let at, let final):
                    guard (200..<300).contains(status) else {
                        var error = FetchError(.status, url: text, status: status, message: reason)
                        if (300..<400).contains(status) {
                            error.location = headers.first { $0.0.lowercased() == "location" }?.1
                        }
                        throw error
                    }
                    head = (status, headers, wireSent.map { min($0, at) } ?? sent, at, final)
                    lastByte = at
                    if let range, method == .GET {
                        let header = { (name: String) in
                            headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
                        }
                        ranged = try RangedBody(
                            range: range, status: status, contentRange: header("Content-Range"),
                            contentLength: header("Content-Length"), url: text)
                    }
                case .chunk(let chunk):
                    lastByte = now
                    guard ranged != nil else {
                        try await onChunk(chunk)
                        break
                    }
                    let part = ranged!.take(chunk)
                    if part.readableBytes > 0 { try await onChunk(part) }
                    if ranged!.isComplete { break receiving }  // the rest (a 200's whole resource) is not read
                case .tick:
                    guard head != nil else {  // (the head's deadline is the client's)
                        try awaitingHead?()
                        continue
                    }
                    if let idleLimit, now - lastByte > idleLimit {
                        throw FetchError(
                            .timeout, url: text, message: String(format: "no byte for %.1f s", now - lastByte))
                    }
                    try onTick?()
                }
                if head != nil, Monotonic.now() - sent > total {
                    throw FetchError(.timeout, url: text, message: "the body was not complete within \(total) s")
                }
            }
            guard let head, !Task.isCancelled else { throw FetchError(.cancelled, url: text, message: "cancelled") }
            try ranged?.finish(url: text)
            return FetchResult(
                status: head.status, headers: head.headers, body: ByteBuffer(), sent: head.sent, headReceived: head.at,
                finished: Monotonic.now(),
                url: head.url.flatMap { $0.absoluteString == text ? nil : $0 })
        } catch let error as FetchError {
            throw error
        } catch is CancellationError {
            throw FetchError(.cancelled, url: text, message: "cancelled")
        } catch let error as HTTPClientError
            where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout
        {
            throw FetchError(.timeout, url: text, message: "\(error)")
        } catch {
            if Task.isCancelled { throw FetchError(.cancelled, url: text, message: "cancelled") }
            throw FetchError(.network, url: text, message: Self.describe(error, host: url.host ?? text))
        }
    }

    /// A transport error in words: TLS failures say what went wrong with which host rather
    /// than BoringSSL's error stack (which carries the build's source paths).
    static func describe(_ error: any Error, host: String) -> String {
        switch error {
        case let error as NIOSSLError:
            guard case .handshakeFailed(let inner) = error else {
                return "TLS with \(host) failed (\(Self.caseName(error)))"
            }
            let stack = "\(inner)"
            if stack.contains("CERTIFICATE_VERIFY_FAILED") {
                return
                    """
                    the certificate of \(host) is not trusted (not signed by a trusted CA, or expired; a private CA: \
                    --ca-file)
                    """
            }
            if stack.contains("WRONG_VERSION_NUMBER") || stack.contains("PACKET_LENGTH_TOO_LONG") {
                return "TLS handshake with \(host) failed: it does not speak TLS there"
            }
            return "TLS handshake with \(host) failed"
        case let error as NIOSSLExtraError where error == .failedToValidateHostname:
            return "the certificate of \(host) is not for that name"
        case let error as NIOSSLExtraError:
            return "TLS with \(host) failed (\(error))"
        default:
            return "\(error)"
        }
    }

    /// An enum case's name without its payload (`handshakeFailed`).
    private static func caseName(_ value: Any) -> String {
        String("\(value)".prefix { $0 != "(" })
    }
}

extension HTTPFetcher {
    /// Hands one request's answer to `stream(_:…)` part by part, on the connection's event
    /// loop: the head (with the times its request went out and it came, stamped there), a 2xx
    /// answer's body chunks, the end or the error.
    fileprivate final class PartDelegate: HTTPClientResponseDelegate {
        typealias Response = Void
        private struct State {
            var sent: Double?
            var url: URL?
            var status = 0
            /// The head came, or waiting for it was given up (then nothing more is handed on).
            var headCame = false
            var gaveUp = false
        }
        private let sink: AsyncThrowingStream<Part, any Error>.Continuation
        private let state = Mutex(State())

        init(sink: AsyncThrowingStream<Part, any Error>.Continuation) { self.sink = sink }

        /// Ends the stream with `error` unless the head already came (true: the request is to
        /// be cancelled).
        func giveUpWaitingForHead(_ error: FetchError) -> Bool {
            let giveUp = state.withLock { state in
                guard !state.headCame else { return false }
                state.gaveUp = true
                return true
            }
            if giveUp { sink.finish(throwing: error) }
            return giveUp
        }

        func didSendRequestHead(task: HTTPClient.Task<Void>, _ head: HTTPRequestHead) {
            let now = Monotonic.now()
            state.withLock { $0.sent = now }
        }

        func didVisitURL(task: HTTPClient.Task<Void>, _ request: HTTPClient.Request, _ head: HTTPResponseHead) {
            state.withLock { $0.url = request.url }
        }

        func didReceiveHead(task: HTTPClient.Task<Void>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
            let at = Monotonic.now()
            let seen = state.withLock { state -> (sent: Double?, url: URL?)? in
                guard !state.gaveUp else { return nil }
                state.headCame = true
                state.status = Int(head.status.code)
                return (state.sent, state.url)
            }
            if let seen {
                sink.yield(
                    .head(
                        status: Int(head.status.code), reason: head.status.reasonPhrase,
                        headers: head.headers.map { ($0.name, $0.value) }, sent: seen.sent, at: at, url: seen.url))
            }
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didReceiveBodyPart(task: HTTPClient.Task<Void>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
            // (A non-2xx answer's body is not handed on: its head already ended the request.)
            if state.withLock({ (200..<300).contains($0.status) && !$0.gaveUp }) { sink.yield(.chunk(buffer)) }
            return task.eventLoop.makeSucceededVoidFuture()
        }

        func didReceiveError(task: HTTPClient.Task<Void>, _ error: any Error) {
            sink.finish(throwing: error)
        }

        func didFinishRequest(task: HTTPClient.Task<Void>) throws {
            sink.finish()
        }
    }
}

/// RFC 9110 IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`).
package enum HTTPDate {
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let days = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]

    package static func parse(_ text: String) -> Date? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT", let day = Int(parts[1]),
            let month = months.firstIndex(of: String(parts[2])),
            let year = Int(parts[3])
        else { return nil }
        let hms = parts[4].split(separator: ":").compactMap { Int($0) }
        // The grammar's 2DIGIT / 4DIGIT ranges: a server's Date header never reaches arithmetic
        // that overflows.
        guard hms.count == 3, (1...31).contains(day), (0...9999).contains(year), (0...23).contains(hms[0]),
            (0...59).contains(hms[1]),
            (0...60).contains(hms[2])
        else { return nil }
        let daysSinceEpoch = XSDateTime.daysFromCivil(year: year, month: month + 1, day: day)
        return Date(timeIntervalSince1970: Double(daysSinceEpoch * 86_400 + hms[0] * 3600 + hms[1] * 60 + hms[2]))
    }

    package static func string(_ date: Date) -> String {
        let total = Int(date.timeIntervalSince1970.rounded(.down))
        var d = total / 86_400
        var rem = total % 86_400
        if rem < 0 {
            rem += 86_400
            d -= 1
        }
        let (y, m, day) = XSDateTime.civilFromDays(d)
        let weekday = days[((d % 7) + 7) % 7]
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return
            """
            \(weekday), \(two(day)) \(months[m - 1]) \(y) \
            \(two(rem / 3600)):\(two(rem % 3600 / 60)):\(two(rem % 60)) GMT
            """
    }
}
