import Foundation
import Logging
import NIOCore

/// Receives a segment's bytes, in order, as a ``SegmentLoader`` hands them on (the player's
/// feeder: into the core's tracks).
package protocol SegmentDeliverySink {
    /// The next bytes of the segment. Throws (`.cancelled`) when the receiver is closed: the
    /// load ends ``SegmentLoadOutcome/cancelled``.
    mutating func deliver(_ bytes: ByteBuffer) throws(FetchError)
    /// Whether any byte was handed on: a try that fails after that is not repeated (those
    /// bytes are in already).
    var hasDelivered: Bool { get }
    /// A new try begins (nothing was handed on yet): what was held back from the last is dropped.
    mutating func startOver()
}

/// One media segment to load, in the rendition chosen for it.
package struct SegmentRequest: Sendable {
    /// The rendition's segment at the stream's first location.
    package var url: URL
    /// The bytes of `url` that are the segment (HLS `EXT-X-BYTERANGE`), nil: all of it.
    package var range: ByteRange?
    /// The rendition's timeline: moves `url` to the stream's alternative locations (BaseURLs).
    package var timeline: RepresentationTimeline?
    /// Seconds of media.
    package var duration: Double
    /// Bytes the rendition's bandwidth says the segment holds (for ABR's abandonment).
    package var expectedBytes: Int
    /// MPEG-TS (else fMP4): how its end is recognised, how a damaged body looks.
    package var transportStream: Bool
    /// A live stream's segment.
    package var live: Bool
    /// Still being produced on the server (low latency): its bytes are handed on as they come
    /// and its pace is the encoder's, not the link's.
    package var paced: Bool

    package init(
        url: URL, range: ByteRange? = nil, timeline: RepresentationTimeline?, duration: Double, expectedBytes: Int,
        transportStream: Bool, live: Bool,
        paced: Bool
    ) {
        (self.url, self.range, self.timeline, self.duration, self.expectedBytes) = (
            url, range, timeline, duration, expectedBytes
        )
        (self.transportStream, self.live, self.paced) = (transportStream, live, paced)
    }
}

/// How a segment load ended.
package enum SegmentLoadOutcome: Sendable, Equatable {
    /// Handed on whole: `bytes` of body in `seconds` (the download, for the bandwidth estimate).
    case delivered(bytes: Int, seconds: Double)
    /// Given up with `error` (to report); `partial`: some of its bytes were handed on (a
    /// low-latency segment cut short: the receiver decodes what is whole).
    case skipped(FetchError, partial: Bool)
    /// The body came but cannot be used (an encrypted one that does not decrypt): why.
    case unusable(String)
    /// Too slow for the buffer in this rendition (ABR): `bytes` came in `seconds`.
    case abandoned(bytes: Int, seconds: Double)
    /// The task was cancelled or the receiver closed.
    case cancelled
}

/// What a load asks of the player while it runs (each try).
package struct SegmentLoadContext: Sendable {
    /// Before each try: the rendition's init segment is given to the receiver (false: cancelled).
    package var prepare: @Sendable () async -> Bool
    /// Seconds of media ahead of what is presented now (nil before the first picture of an
    /// on-demand stream), and ahead of the position the segment is wanted at.
    package var buffer: @Sendable () -> (ahead: Double?, beforeSegment: Double)
    /// Whether a live segment is behind the wanted position already (it is not tried again).
    package var isLate: @Sendable () -> Bool
    /// The first byte of the body arrived (the server had the segment then).
    package var firstByte: @Sendable () -> Void
    /// ABR's abandonment rule (`received`, `expected`, `elapsed`, `buffer`), nil without a
    /// lower rendition.
    package var shouldAbandon: (@Sendable (Int, Int, Double, Double) -> Bool)?

    package init(
        prepare: @escaping @Sendable () async -> Bool,
        buffer: @escaping @Sendable () -> (ahead: Double?, beforeSegment: Double),
        isLate: @escaping @Sendable () -> Bool, firstByte: @escaping @Sendable () -> Void,
        shouldAbandon: (@Sendable (Int, Int, Double, Double) -> Bool)?
    ) {
        (self.prepare, self.buffer, self.isLate, self.firstByte, self.shouldAbandon) = (
            prepare, buffer, isLate, firstByte, shouldAbandon
        )
    }
}

/// Loads one track's segments over HTTP and hands their bytes on: the scheduler's fetching half.
///
/// Each try of a media segment is a ``SegmentAttempt`` (a segment complete on the server is kept
/// until whole, so a reset, a short body, a stuck connection or junk never reaches the decoder;
/// one still being produced streams in chunk by chunk), its deadlines and what follows a failed
/// one are ``SegmentFetchPolicy``'s, a failing location gives way to the next
/// (``LocationChoice``), a damaged body is fetched once more, and a download too slow for the
/// buffer is abandoned for ABR. Init segments and HLS AES-128 keys are fetched with their own
/// policies (``FetchPolicy``), keys once. What it learns of the server (its usual answer time,
/// the locations that failed) is kept across segments.
package struct SegmentLoader: Sendable {
    private let fetcher: HTTPFetcher
    private let logger: Logger
    /// Which of the stream's alternative locations (BaseURLs) segments are fetched from.
    private let locations: Locked<LocationChoice>
    /// The server's usual answer time.
    private let heads = Locked(HeadTimes())
    /// AES-128 keys fetched, by URL.
    private let keys = Locked<[URL: [UInt8]]>([:])
    /// Media segment tries that failed (``failedDownloads``).
    private let failures = Locked(0)

    /// Keys kept (HLS AES-128).
    static let keyCacheLimit = 64

    /// A loader over `locations` alternative locations of the stream.
    package init(fetcher: HTTPFetcher, locations: Int, logger: Logger) {
        self.fetcher = fetcher
        self.logger = logger
        self.locations = Locked(LocationChoice(count: locations))
    }

    /// A new period: its own alternative locations.
    package func resetLocations(count: Int) {
        locations.withLock { $0 = LocationChoice(count: count) }
    }

    /// Media segment downloads that failed, since this loader was made: each try given up or
    /// that brought no segment (an error status, a reset, a deadline, a stuck or stalled body,
    /// an empty body, bytes that are no segment, a body that never ends, a damaged one fetched
    /// again), whether the segment then came on another try or was skipped. Not counted: a
    /// download ABR abandoned for a lower rendition, a cancelled one, a live segment's 404 (not
    /// published yet: asked for again).
    package var failedDownloads: Int { failures.withLock { $0 } }

    private func countFailure() { failures.withLock { $0 += 1 } }

    /// The server's usual answer time (seconds from request to head), nil before its first answer.
    package var usualHead: Double? { heads.withLock { $0.usual } }

    private func noteHead(_ result: FetchResult) {
        heads.withLock { $0.note(result.headReceived - result.sent) }
    }

    // MARK: init segments and keys

    /// The init segment at `url` (its bytes `range` when given; on `timeline`'s alternative
    /// locations), tried until it comes: each failure is handed to `onError`, then the next
    /// location is tried at once, or the same again after 0.5 s, doubling to 8 s. Nil when
    /// cancelled.
    package func initSegment(
        _ url: URL, range: ByteRange? = nil, timeline: RepresentationTimeline?, onError: (FetchError) -> Void
    ) async -> ByteBuffer? {
        var delay = 0.5
        while !Task.isCancelled {
            let location = locations.withLock { $0.current(now: Monotonic.now()) }
            do {
                var policy = FetchPolicy.initSegment
                if locations.withLock({ $0.count }) > 1 { policy.attempts = 2 }  // then the next location
                let result = try await fetcher.get(
                    timeline?.relocated(url, to: location) ?? url, policy: policy, maxBytes: 4 << 20, range: range)
                noteHead(result)  // the server's first answer time
                return result.body
            } catch {
                if error.code == .cancelled { return nil }
                onError(error)
                // another location at once
                if locations.withLock({ $0.failed(location, now: Monotonic.now()) }) { continue }
            }
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            delay = min(delay * 2, 8)
        }
        return nil
    }

    /// The 16-byte AES-128 key at `url`, fetched once.
    package func key(_ url: URL) async throws(FetchError) -> [UInt8] {
        if let cached = keys.withLock({ $0[url] }) { return cached }
        let result = try await fetcher.get(url, policy: .key, maxBytes: 1024)
        let bytes = Array(result.body.readableBytesView)
        guard bytes.count == 16 else {
            throw FetchError(
                .tooLarge, url: url.absoluteString, message: "an AES-128 key is 16 bytes, this one \(bytes.count)")
        }
        keys.withLock { k in
            if k.count >= Self.keyCacheLimit { k.removeAll() }
            k[url] = bytes
        }
        return bytes
    }

    // MARK: media segments

    /// Loads `request` into `sink`, trying again as ``SegmentFetchPolicy`` says.
    package func load(_ request: SegmentRequest, into sink: inout some SegmentDeliverySink, context: SegmentLoadContext)
        async -> SegmentLoadOutcome
    {
        var attempt = 0
        // A damaged body is fetched again once, whichever try brought it (a 503, then a body
        // cut short: both the edge's); a stuck try is given up once (then the link is slow).
        var (refetchedDamage, judgedStuck) = (false, false)
        // The last error the server answered with (a status), if any.
        var answered: FetchError?
        let duration = request.duration
        while !Task.isCancelled {
            attempt += 1
            let location = locations.withLock { $0.current(now: Monotonic.now()) }
            let url = request.timeline?.relocated(request.url, to: location) ?? request.url
            guard await context.prepare() else { return .cancelled }
            sink.startOver()
            var state = SegmentAttempt(
                began: Monotonic.now(), keepWhole: !request.paced, transportStream: request.transportStream,
                largest: SegmentFetchPolicy.largestBody(expected: request.expectedBytes))
            let (ahead, bufferAtStart) = context.buffer()
            let judgesPace = !judgedStuck
            var verdict: SegmentAttempt.Verdict?
            // This try's body could not start a segment (nil: it could, or nothing came).
            var notASegment: String?
            // This try was given up unanswered when the segment became late.
            var cutLate = false
            do {
                do {
                    let result = try await fetcher.stream(
                        url,
                        timeout: .milliseconds(Int(SegmentFetchPolicy.downloadDeadline(duration: duration) * 1000)),
                        firstByte: .milliseconds(
                            Int(
                                SegmentFetchPolicy.firstByteDeadline(
                                    buffer: ahead, usualHead: usualHead, attempt: attempt) * 1000)),
                        idle: .milliseconds(
                            Int(SegmentFetchPolicy.idle(duration: duration, paced: request.paced) * 1000)),
                        range: request.range
                    ) { (chunk) throws(FetchError) in
                        if state.received == 0 { context.firstByte() }
                        let streamed = state.take(chunk, at: Monotonic.now())
                        if let problem = state.startProblem {
                            // Not a segment (garbage from its first byte): given up at once, as
                            // a failed download, while a try can still bring the real one.
                            notASegment = problem
                            throw FetchError(.network, url: url.absoluteString, message: "not a segment: \(problem)")
                        }
                        if let now = streamed, now.readableBytes > 0 { try sink.deliver(now) }
                        if state.overflowed {
                            // A body that never ends (or is no segment's): a failed download,
                            // not a wait for the download's deadline with memory growing.
                            try Self.failed(url, "the body passed \(state.largest) bytes without ending: not a segment")
                        }
                        verdict = judge(
                            &state, request, bufferAtStart: bufferAtStart, judgesPace: judgesPace, context: context)
                        try Self.giveUp(verdict, state: state, url: url)
                    } onTick: { () throws(FetchError) in
                        verdict = judge(
                            &state, request, bufferAtStart: bufferAtStart, judgesPace: judgesPace, context: context)
                        try Self.giveUp(verdict, state: state, url: url)
                    } awaitingHead: { () throws(FetchError) in
                        // Late while the server has not answered: nothing of it could be shown,
                        // so the answer is not waited for (up to the first-byte deadline, 3 s).
                        if request.live, context.isLate() {
                            cutLate = true
                            throw FetchError(.timeout, url: url.absoluteString, message: "no answer before it was late")
                        }
                    }
                    noteHead(result)
                    // A 200 with nothing in it is a failed download, not a segment: tried again
                    // (or from another location) as the policy allows.
                    if state.received == 0 { try Self.failed(url, "an empty body") }
                    if let rest = state.rest() { try sink.deliver(rest) }
                } catch let error where verdict == .wholeThenJunk && error.code == .cancelled {
                    logger.info(
                        "segment whole, then junk: kept",
                        metadata: ["url": "\(Redact.url(url))", "bytes": "\(state.wholeBeforeJunk ?? 0)"])
                }
                if let pending = state.keptBody() {
                    // Cut short or garbage: fetched again once (an edge's fault passes); the
                    // second time the receiver gets it (the core reports it and skips it).
                    if !refetchedDamage,
                        let problem = SegmentShape.problem(
                            pending.readableBytesView, transportStream: request.transportStream)
                    {
                        refetchedDamage = true
                        countFailure()
                        logger.info(
                            "segment damaged: fetched again",
                            metadata: ["url": "\(Redact.url(url))", "problem": "\(problem)"])
                        continue
                    }
                    try sink.deliver(pending)
                }
                return .delivered(bytes: state.received, seconds: Monotonic.now() - state.began)
            } catch {
                if verdict == .abandon {
                    // What came so far is the link's speed now.
                    let elapsed = Monotonic.now() - state.began
                    logger.info(
                        "download abandoned",
                        metadata: [
                            "url": "\(Redact.url(url))", "bytes": "\(state.received)",
                            "seconds": "\(String(format: "%.2f", elapsed))",
                        ])
                    return .abandoned(bytes: state.received, seconds: elapsed)
                }
                if error.code == .cancelled { return .cancelled }
                // (A live segment not there yet, asked for again, is no failed download.)
                if !(request.live && error.status == 404) { countFailure() }
                if sink.hasDelivered { return .skipped(error, partial: true) }
                if verdict == .stuck { judgedStuck = true }
                if error.code == .status { answered = error }
                let late = request.live && context.isLate()
                // Another location (an alternative BaseURL) is tried at once; this one is
                // avoided for a while.
                if locations.withLock({ $0.failed(location, now: Monotonic.now()) }), !late,
                    attempt < SegmentFetchPolicy.attempts + locations.withLock({ $0.count })
                {
                    logger.warning(
                        "segment fetched from another location",
                        metadata: ["url": "\(Redact.url(url))", "error": "\(error)"])
                    continue
                }
                switch SegmentFetchPolicy.next(
                    after: error, attempt: attempt, live: request.live, late: late, slow: verdict == .stuck)
                {
                case .skip:
                    logger.warning("segment skipped", metadata: ["url": "\(Redact.url(url))", "error": "\(error)"])
                    // The last try brought bytes that are no segment (the packager's, every
                    // time): the media is bad, not the network, and is reported so.
                    if let notASegment {
                        return .unusable("segment \(Redact.url(url)) is not a media segment: \(notASegment)")
                    }
                    // (Cut unanswered: what the server last answered says why it was missed.)
                    return .skipped(cutLate ? answered ?? error : error, partial: false)
                case .retry(let after):
                    logger.info(
                        "segment fetched again",
                        metadata: ["url": "\(Redact.url(url))", "attempt": "\(attempt + 1)", "error": "\(error)"])
                    if after > 0 { try? await Task.sleep(for: .milliseconds(Int(after * 1000))) }
                }
            }
        }
        return .cancelled
    }

    /// An encrypted segment (HLS AES-128) fetched whole and decrypted with its key by
    /// `decrypt(body, key)`: the clear bytes and the download's size and time. A key that
    /// cannot be fetched, or a body that does not decrypt, skips the segment.
    package func loadEncrypted(
        _ request: SegmentRequest, key: SegmentKey, context: SegmentLoadContext,
        decrypt: ([UInt8], [UInt8]) throws -> [UInt8]
    ) async -> (outcome: SegmentLoadOutcome, clear: ByteBuffer?) {
        let url = request.url
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            guard await context.prepare() else { return (.cancelled, nil) }
            let began = Monotonic.now()
            do {
                let deadline = SegmentFetchPolicy.firstByteDeadline(
                    buffer: context.buffer().ahead, usualHead: usualHead, attempt: attempt)
                let result = try await fetcher.get(
                    url,
                    timeout: .milliseconds(Int(SegmentFetchPolicy.downloadDeadline(duration: request.duration) * 1000)),
                    firstByte: .milliseconds(Int(deadline * 1000)), range: request.range)
                noteHead(result)
                let seconds = Monotonic.now() - began
                let keyBytes = try await self.key(key.url)
                do {
                    let clear = try decrypt(Array(result.body.readableBytesView), keyBytes)
                    return (.delivered(bytes: result.body.readableBytes, seconds: seconds), ByteBuffer(bytes: clear))
                } catch {
                    return (
                        .unusable(
                            """
                            segment \(Redact.url(url)) does not decrypt with the key at \(Redact.url(key.url)): \
                            \(error)
                            """
                        ), nil
                    )
                }
            } catch {
                if error.code == .cancelled { return (.cancelled, nil) }
                countFailure()
                switch SegmentFetchPolicy.nextEncrypted(
                    after: error, attempt: attempt, late: request.live && context.isLate())
                {
                case .skip:
                    logger.warning("segment skipped", metadata: ["url": "\(Redact.url(url))", "error": "\(error)"])
                    return (.skipped(error, partial: false), nil)
                case .retry(let after):
                    try? await Task.sleep(for: .milliseconds(Int(after * 1000)))
                }
            }
        }
        return (.cancelled, nil)
    }

    /// Judges a try kept until whole
    /// (``SegmentAttempt/verdict(now:expected:bufferAtStart:duration:judgesPace:shouldAbandon:)``)
    /// with ABR's abandonment rule, when there is one.
    private func judge(
        _ state: inout SegmentAttempt, _ request: SegmentRequest, bufferAtStart: Double, judgesPace: Bool,
        context: SegmentLoadContext
    ) -> SegmentAttempt.Verdict? {
        state.verdict(
            now: Monotonic.now(), expected: request.expectedBytes, bufferAtStart: bufferAtStart,
            duration: request.duration, judgesPace: judgesPace,
            shouldAbandon: { bytes, total, elapsed, buffer in
                context.shouldAbandon?(bytes, total, elapsed, buffer) ?? false
            })
    }

    /// Fails the try with a network error: the policy tries again (or another location).
    private static func failed(_ url: URL, _ message: String) throws(FetchError) {
        throw FetchError(.network, url: url.absoluteString, message: message)
    }

    /// Ends the download with the error `verdict` calls for (none: it goes on).
    private static func giveUp(_ verdict: SegmentAttempt.Verdict?, state: SegmentAttempt, url: URL) throws(FetchError) {
        switch verdict {
        case nil: return
        case .wholeThenJunk: throw FetchError(.cancelled, url: url.absoluteString, message: "whole segment, then junk")
        case .abandon:
            throw FetchError(.cancelled, url: url.absoluteString, message: "abandoned: too slow for the buffer")
        case .stuck:
            throw FetchError(
                .timeout, url: url.absoluteString,
                message: """
                    \(state.received) bytes in \(String(format: "%.1f", Monotonic.now() - state.began)) s: too slow \
                    for the buffer
                    """
            )
        }
    }
}
