/// How a media segment is fetched: the deadlines of each request, when a download is judged
/// stuck, and what follows a failed try. Pure (no clock, no I/O): the scheduler asks with the
/// times and sizes it measured.
///
/// A box on a wall must ride out servers that reset, answer 5xx, say nothing, trickle or send
/// junk, without giving up a segment it could still have had in time, and without waiting on
/// one it can no longer show.
package enum SegmentFetchPolicy {
    /// How long a media segment's response head may take at most: a server that accepted the
    /// request and says nothing is given up sooner than the whole download's deadline. While
    /// pictures are shown, the buffer sets it (``firstByteDeadline(buffer:usualHead:attempt:)``).
    package static let firstByte = 3.0

    /// Seconds a media segment's body may go without a byte before the connection is given up
    /// (a stalled edge); a segment still being produced waits up to its duration + 1 s (its
    /// chunks come as they are made): ``idle(duration:paced:)``.
    package static let idle = 3.0

    /// The most tries of one segment (a 404 at a live edge: ``attempts(status:live:)``).
    package static let attempts = 4

    /// The head's deadline, seconds, of a media segment's `attempt`th request made with `buffer`
    /// seconds of media ahead of the presented position (nil: not known) from a server whose
    /// heads usually take `usualHead` seconds (nil: none came yet): half the buffer, so that a
    /// server silent on this connection leaves the other half to a new try at once; never under
    /// 0.5 s nor three times the usual head (a deadline a healthy server cannot meet would fail
    /// every try), never over ``firstByte``, which a third try and an unknown server get.
    package static func firstByteDeadline(buffer: Double?, usualHead: Double?, attempt: Int) -> Double {
        guard let buffer, let usualHead, attempt <= 2 else { return firstByte }
        return min(firstByte, max(0.5, 3 * usualHead, buffer / 2))
    }

    /// The whole download's deadline, seconds, of a segment of `duration` seconds.
    package static func downloadDeadline(duration: Double) -> Double { max(4, duration * 3) }

    /// The most bytes a media segment's body may bring, `expected` bytes by its rendition's
    /// bandwidth: four times that (a segment's size varies with its pictures; a declared
    /// bandwidth may be an average), never under ``bodyFloor`` (a bandwidth declared too low)
    /// nor over ``bodyCeiling`` (one declared absurdly high must not let a body fill the
    /// memory). A body past it that brought no whole segment followed by junk is no segment
    /// (an endless body, a misrouted file): a failed download, tried again.
    package static func largestBody(expected: Int) -> Int {
        min(
            bodyCeiling,
            max(bodyFloor, expected.multipliedReportingOverflow(by: 4).overflow ? bodyCeiling : expected * 4))
    }

    /// The least and the most ``largestBody(expected:)`` says: 8 MiB, 256 MiB.
    package static let bodyFloor = 8 << 20
    package static let bodyCeiling = 256 << 20

    /// How long the body may pause, seconds: ``idle``, or (a segment still being produced, sent
    /// as it is made) its duration + 1 s.
    package static func idle(duration: Double, paced: Bool) -> Double { paced ? max(idle, duration + 1) : idle }

    /// A download slower than the media it carries plays (`bytes` of `total` expected after
    /// `elapsed` s of a `duration` s segment) that will not be whole before the `buffer` runs
    /// out: no link that healthy is that slow for its own rendition.
    /// `silent`: seconds since the last byte came (or since the request, before any): a body
    /// that stops for half of what is left of the buffer (at least ``stallAtLeast``) is stuck
    /// whatever its pace so far: a stalled edge is left while a new try still has time.
    /// `receiving`: seconds since the first byte came (nil: `elapsed`): the pace is the body's,
    /// not the wait for its head (a proxy that answers once it has the whole segment, checked,
    /// sends it at once after a long wait).
    package static func stuck(
        bytes: Int, of total: Int, elapsed: Double, receiving: Double? = nil, silent: Double = 0, duration: Double,
        buffer: Double
    ) -> Bool {
        guard bytes < total, total > 0 else { return false }
        if bytes > 0, silent > max(stallAtLeast, buffer / 2) { return true }
        guard elapsed > 0.5 else { return false }
        let rate = Double(max(bytes, 1)) / max(receiving ?? elapsed, 0.1)
        let realTime = Double(total) / max(duration, 0.1)
        return rate < realTime && Double(total - bytes) / rate > max(0.5, buffer - 0.5)
    }

    /// The shortest pause of a body judged a stall (``stuck(bytes:of:elapsed:silent:duration:buffer:)``):
    /// a healthy link's TCP recovers a lost packet well within it.
    package static let stallAtLeast = 0.4

    /// How many tries a segment gets: a 404 at a live edge (a server that publishes late) is
    /// asked again while it can still be on time (40 tries at 150–300 ms), other failures
    /// ``attempts``.
    package static func attempts(status: Int, live: Bool) -> Int { status == 404 && live ? 40 : attempts }

    /// What follows a failed try.
    package enum Next: Sendable, Equatable {
        /// Try again after this many seconds (0: at once).
        case retry(after: Double)
        /// Give the segment up (report it; the next one is fetched).
        case skip
    }

    /// What follows the `attempt`th try of a segment failing with `error`. `late`: the segment
    /// is behind the wanted position already (live); `slow`: the try was given up as too slow
    /// for the buffer. A reset, a stuck body or a server silent on that connection is tried
    /// again at once; a 5xx after 0.1 s, then 0.4 s, then 1.6 s (a live edge leaves about a
    /// second between a segment's publication and its presentation: an edge's passing 503 must
    /// not use it up); a 404 after 150 ms × tries (at most 300 ms).
    package static func next(after error: FetchError, attempt: Int, live: Bool, late: Bool, slow: Bool) -> Next {
        guard FetchPolicy.isTransient(error), !late, attempt < attempts(status: error.status, live: live) else {
            return .skip
        }
        if slow || error.code == .network || error.code == .timeout { return .retry(after: 0) }
        return .retry(
            after: error.status == 404
                ? min(0.3, 0.15 * Double(attempt)) : [0.1, 0.4, 1.6][min(max(attempt, 1), 3) - 1])
    }

    /// What follows the `attempt`th try of an encrypted segment (fetched whole, then decrypted)
    /// failing with `error`: any answer but a client error is tried again, 4 times, after 0.4 s ×
    /// the tries so far, while it is not late.
    package static func nextEncrypted(after error: FetchError, attempt: Int, late: Bool) -> Next {
        let retryable = error.code != .status || error.status == 404 || error.status >= 500
        guard retryable, attempt < attempts, !late else { return .skip }
        return .retry(after: 0.4 * Double(attempt))
    }
}

/// A server's usual answer time: the median of its last 16 response heads (media and init
/// segments), seconds from request to head.
package struct HeadTimes: Sendable, Equatable {
    private var recent: [Double] = []
    /// How many heads are remembered.
    package static let count = 16

    package init() {}

    /// Notes one answer: its head came `seconds` after the request.
    package mutating func note(_ seconds: Double) {
        recent.append(max(0, seconds))
        if recent.count > Self.count { recent.removeFirst() }
    }

    /// The median head time; nil before the first answer.
    package var usual: Double? { recent.isEmpty ? nil : recent.sorted()[recent.count / 2] }
}
