import HTTPTypes

extension OriginResponder {
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
}

extension OriginResponder.Reply {
    /// The body without the trailing newline plain-text replies get (time values are exact text).
    var noNewline: Self {
        var copy = self
        if copy.body.last == UInt8(ascii: "\n") { copy.body.removeLast() }
        return copy
    }
}
