import NIOCore

/// One try at downloading a media segment, and the judgement of it as it arrives.
///
/// A segment already complete on the server is kept until whole (`keepWhole`), so a reset,
/// a short body, a stuck connection or junk never reaches the decoder and the segment is simply
/// fetched again while time allows; one still being produced (low latency) is handed on chunk
/// by chunk as it comes. Each chunk, and each tick while none comes, the try is judged
/// (``verdict(now:expected:bufferAtStart:duration:judgesPace:shouldAbandon:)``).
package struct SegmentAttempt: Sendable {
    /// Monotonic seconds when the request was sent.
    package let began: Double
    /// Bytes of the body received so far.
    package private(set) var received = 0
    /// The body so far, while it is kept until whole; nil when streamed.
    private var kept: ByteBuffer?
    private var tail: SegmentEnd
    private let transportStream: Bool
    /// The body's first bytes (up to 8): enough to tell whether it can start a segment.
    private var start: [UInt8] = []
    /// Where a whole segment ended before junk began (the rest is dropped).
    package private(set) var wholeBeforeJunk: Int?
    /// The most bytes the body may bring (``SegmentFetchPolicy/largestBody(expected:)``).
    package let largest: Int
    /// A streamed body's last bytes not handed on yet: part of a box header still to be judged.
    private var held = ByteBuffer()

    /// A try begun at `began`; `keepWhole`: the segment is complete on the server (not sent as
    /// it is produced); `transportStream`: MPEG-TS (else fMP4); `largest`: the most bytes its
    /// body may bring before it is no segment's.
    package init(began: Double, keepWhole: Bool, transportStream: Bool, largest: Int = .max) {
        self.began = began
        lastChunk = began
        kept = keepWhole ? ByteBuffer() : nil
        tail = SegmentEnd(transportStream: transportStream)
        self.transportStream = transportStream
        self.largest = largest
    }

    /// The body brought more than ``largest`` bytes without a whole segment followed by junk
    /// in them: a body that never ends (or a misrouted file), a failed download.
    package var overflowed: Bool { wholeBeforeJunk == nil && received > largest }

    /// Monotonic seconds when the last chunk came (the request's, before any).
    package private(set) var lastChunk: Double
    /// Monotonic seconds when the first chunk came (nil: none yet, or not noted).
    package private(set) var firstChunk: Double?

    /// Takes a chunk of the body that came at monotonic `now` (nil: not noted): returns what to
    /// hand on now (streamed: the chunk, without any byte past the segment's end, and without
    /// the start of a box header still to be judged), or nil when it is kept. Once a whole
    /// segment followed by junk came (``wholeBeforeJunk``), nothing more is taken.
    package mutating func take(_ chunk: ByteBuffer, at now: Double? = nil) -> ByteBuffer? {
        guard wholeBeforeJunk == nil else { return kept == nil ? ByteBuffer() : nil }
        let before = received
        received += chunk.readableBytes
        if start.count < 8 { start += chunk.readableBytesView.prefix(8 - start.count) }
        if let now {
            lastChunk = now
            if firstChunk == nil { firstChunk = now }
        }
        let cut = chunk.withUnsafeReadableBytes { tail.next($0) }
        if let cut { wholeBeforeJunk = cut }
        guard kept == nil else {
            var incoming = chunk
            kept?.writeBuffer(&incoming)  // in place (a copy would copy it all per chunk)
            return nil
        }
        // Streamed: what is held, this chunk, up to the segment's end or the undecided header.
        var out = held
        var incoming = chunk
        out.writeBuffer(&incoming)
        let handedOnBefore = before - held.readableBytes
        let end = cut ?? (received - tail.undecided)
        let now = max(0, end - handedOnBefore)
        held = out.getSlice(at: out.readerIndex + now, length: out.readableBytes - now) ?? ByteBuffer()
        out.moveWriterIndex(to: out.readerIndex + now)
        if cut != nil {
            held = ByteBuffer()
            received = end
        }
        return out
    }

    /// A streamed body's last bytes held back (part of a box header never completed), handed on
    /// when the body ends: the receiver judges a segment that ends inside a header.
    package mutating func rest() -> ByteBuffer? {
        guard kept == nil, wholeBeforeJunk == nil, held.readableBytes > 0 else { return nil }
        defer { held = ByteBuffer() }
        return held
    }

    /// Why the body's first bytes cannot start a media segment (nil: they can, or too few came
    /// to tell): an MPEG-TS segment starts with a sync byte; anything else with an ISO BMFF box
    /// header, an ID3 tag or an audio frame (packed audio: ADTS, MPEG audio, AC-3), or text
    /// (WebVTT). Random bytes (a broken edge, a misrouted answer) are told from the first 8: the
    /// try is given up at once instead of waiting out its deadline.
    package var startProblem: String? {
        if transportStream {
            guard let first = start.first else { return nil }
            return first == 0x47 ? nil : "its first byte is not an MPEG-TS sync byte"
        }
        guard start.count >= 8 else { return nil }
        let size = start[0..<4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        let boxType = start[4..<8].allSatisfy { (0x20...0x7e).contains($0) }
        let box = boxType && (size == 0 || size == 1 || size >= 8)
        let id3 = start[0] == 0x49 && start[1] == 0x44 && start[2] == 0x33
        // ADTS, MPEG audio, AC-3
        let audioFrame = start[0] == 0xff && start[1] & 0xe0 == 0xe0 || start[0] == 0x0b && start[1] == 0x77
        let text = start.allSatisfy {
            (0x20...0x7e).contains($0) || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d || $0 == 0xef || $0 == 0xbb
                || $0 == 0xbf
        }
        return box || id3 || audioFrame || text ? nil : "its first bytes are not the start of a media segment"
    }

    /// Why a try is given up before its body ends.
    package enum Verdict: Sendable, Equatable {
        /// A whole segment came, then bytes that cannot continue it (an endless body's filler,
        /// junk): the segment is kept (or, streamed, was handed on), the rest dropped.
        case wholeThenJunk
        /// Too slow for the buffer in this rendition: a lower one is fetched instead.
        case abandon
        /// Slower than real time and too late for the buffer (a stuck connection, a trickling
        /// or stalled edge): tried again at once.
        case stuck
    }

    /// Judges the try at monotonic `now`: `expected` bytes in all (at least what came), the
    /// buffer was `bufferAtStart` seconds when it began, the segment lasts `duration` seconds.
    /// A whole segment followed by junk ends any try, kept or streamed.
    /// `judgesPace`: a try that may be given up as stuck (one per segment: a second stuck try
    /// is a slow link, left to ABR); `shouldAbandon(received,
    /// expected, elapsed, buffer)`: ABR's rule (false without a lower rendition). Only a body
    /// kept until whole is judged on its pace: a streamed one is paced by its encoder.
    package mutating func verdict(
        now: Double, expected: Int, bufferAtStart: Double, duration: Double, judgesPace: Bool,
        shouldAbandon: (Int, Int, Double, Double) -> Bool
    ) -> Verdict? {
        if wholeBeforeJunk != nil { return .wholeThenJunk }
        guard kept != nil else { return nil }
        let elapsed = now - began
        let total = max(received + 1, expected)
        let buffer = bufferAtStart - elapsed
        if shouldAbandon(received, total, elapsed, buffer) { return .abandon }
        if judgesPace,
            SegmentFetchPolicy.stuck(
                bytes: received, of: total, elapsed: elapsed, receiving: firstChunk.map { now - $0 },
                silent: now - lastChunk, duration: duration,
                buffer: buffer)
        {
            return .stuck
        }
        return nil
    }

    /// The kept body once the download is over: cut where junk began when it did; nil when
    /// streamed or empty.
    package mutating func keptBody() -> ByteBuffer? {
        guard var body = kept, body.readableBytes > 0 else { return nil }
        if let cut = wholeBeforeJunk {
            body.moveWriterIndex(to: body.readerIndex + cut)
            received = cut
        }
        return body
    }
}
