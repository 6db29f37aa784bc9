import NIOCore

/// One try at downloading a media segment, and the judgement of it as it arrives.
///
/// A segment already complete on the server is kept until whole (`keepWhole`), so a reset,
/// a short body, a stuck connection or junk never reaches the decoder and the segment is simply
/// fetched again while time allows; one still being produced (low latency) is handed on chunk
/// by chunk as it comes. Each chunk, and each tick while none comes, the try is judged
/// (``verdict(now:expected:bufferAtStart:duration:judgesPace:shouldAbandon:)``).
public struct SegmentAttempt: Sendable {
    /// Monotonic seconds when the request was sent.
    public let began: Double
    /// Bytes of the body received so far.
    public private(set) var received = 0
    /// The body so far, while it is kept until whole; nil when streamed.
    private var kept: ByteBuffer?
    private var tail: SegmentEnd
    /// Where a whole segment ended before junk began (the rest is dropped).
    public private(set) var wholeBeforeJunk: Int?

    /// A try begun at `began`; `keepWhole`: the segment is complete on the server (not sent as
    /// it is produced); `transportStream`: MPEG-TS (else fMP4).
    public init(began: Double, keepWhole: Bool, transportStream: Bool) {
        self.began = began
        lastChunk = began
        kept = keepWhole ? ByteBuffer() : nil
        tail = SegmentEnd(transportStream: transportStream)
    }

    /// Monotonic seconds when the last chunk came (the request's, before any).
    public private(set) var lastChunk: Double
    /// Monotonic seconds when the first chunk came (nil: none yet, or not noted).
    public private(set) var firstChunk: Double?

    /// Takes a chunk of the body that came at monotonic `now` (nil: not noted): returns it to
    /// hand on now (streamed), or nil when it is kept.
    public mutating func take(_ chunk: ByteBuffer, at now: Double? = nil) -> ByteBuffer? {
        received += chunk.readableBytes
        if let now {
            lastChunk = now
            if firstChunk == nil { firstChunk = now }
        }
        guard kept != nil else { return chunk }
        var incoming = chunk
        kept?.writeBuffer(&incoming)  // in place (a copy would copy it all per chunk)
        return nil
    }

    /// Why a try is given up before its body ends.
    public enum Verdict: Sendable, Equatable {
        /// A whole segment came, then bytes that cannot continue it (an endless body's filler,
        /// junk): the segment is kept, the rest dropped.
        case wholeThenJunk
        /// Too slow for the buffer in this rendition: a lower one is fetched instead.
        case abandon
        /// Slower than real time and too late for the buffer (a stuck connection, a trickling
        /// or stalled edge): tried again at once.
        case stuck
    }

    /// Judges the try at monotonic `now`: `expected` bytes in all (at least what came), the
    /// buffer was `bufferAtStart` seconds when it began, the segment lasts `duration` seconds.
    /// `judgesPace`: a try that may be given up as stuck (one per segment: a second stuck try
    /// is a slow link, left to ABR); `shouldAbandon(received,
    /// expected, elapsed, buffer)`: ABR's rule (false without a lower rendition). Only a body
    /// kept until whole is judged: a streamed one is paced by its encoder.
    public mutating func verdict(
        now: Double, expected: Int, bufferAtStart: Double, duration: Double, judgesPace: Bool,
        shouldAbandon: (Int, Int, Double, Double) -> Bool
    ) -> Verdict? {
        guard let body = kept else { return nil }
        if let cut = body.withUnsafeReadableBytes({ tail.wholeBeforeJunk(in: $0) }) {
            wholeBeforeJunk = cut
            return .wholeThenJunk
        }
        let elapsed = now - began
        let total = max(received + 1, expected)
        let buffer = bufferAtStart - elapsed
        if shouldAbandon(received, total, elapsed, buffer) { return .abandon }
        if judgesPace,
            SegmentFetchPolicy.stuck(
                bytes: received, of: total, elapsed: elapsed, receiving: firstChunk.map { now - $0 }, silent: now - lastChunk, duration: duration,
                buffer: buffer)
        {
            return .stuck
        }
        return nil
    }

    /// The kept body once the download is over: cut where junk began when it did; nil when
    /// streamed or empty.
    public mutating func keptBody() -> ByteBuffer? {
        guard var body = kept, body.readableBytes > 0 else { return nil }
        if let cut = wholeBeforeJunk {
            body.moveWriterIndex(to: body.readerIndex + cut)
            received = cut
        }
        return body
    }
}
