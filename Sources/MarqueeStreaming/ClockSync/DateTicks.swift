import Foundation
import NIOHTTP1

/// The server's clock from HTTP `Date` headers, which tell whole seconds, narrowed to about a
/// round trip by answers timed at the server's ticks.
///
/// An answer whose head came back between `sent` and `headReceived` (monotonic seconds) saying
/// `Date: D` was stamped at an instant of that round trip when the server's clock read from D to
/// D + 1: its offset (server − monotonic) lies in [D − headReceived, D + 1 − sent]. One answer
/// leaves a second (two boxes up to a second apart on a stream without a usable `UTCTiming`, and
/// a box's clock moving by up to a second at each re-measurement); an answer whose round trip
/// holds one of the server's ticks cuts what is left at that tick. ``nextProbe(after:roundTrip:)``
/// says when to send a request so the tick falls in the middle of what is left: each one halves
/// it, less the round trip's own width (a second down to 2 ms in 10 answers with a round trip
/// of 0.2 ms, to 6 ms with one of 4 ms).
///
/// Hostile or odd answers (a cache's stale `Date`, a server whose clock was stepped, a header
/// from another server behind one name) are outvoted: the estimate is the interval the most of
/// the last ``kept`` answers agree with, never narrower than what they all allow together.
package struct DateTicks: Sendable {
    /// One answer's bounds on the offset (server Unix seconds − monotonic seconds), and when it
    /// came (monotonic seconds).
    package struct Bound: Sendable, Equatable {
        package var low: Double
        package var high: Double
        package var at: Double
    }

    /// Answers kept (the oldest dropped beyond).
    package static let kept = 32
    /// How fast two clocks may drift apart (seconds a second): an answer's bounds widen by this
    /// much a second of its age (crystals are within 100 ppm; twice that), so the server's and
    /// this box's clocks running apart never leave the answers disagreeing.
    package static let drift = 200e-6

    package private(set) var bounds: [Bound] = []

    package init() {}

    /// Adds an answer: its `Date` (whole seconds; a fraction is dropped, as the header has none)
    /// and the monotonic seconds its request was sent and its head came back. An answer that
    /// came back before it was sent, or a date that is not finite, is ignored.
    package mutating func add(date: Date, sent: Double, headReceived: Double) {
        let second = date.timeIntervalSince1970.rounded(.down)
        guard second.isFinite, sent.isFinite, headReceived.isFinite, headReceived >= sent else { return }
        bounds.append(Bound(low: second - headReceived, high: second + 1 - sent, at: headReceived))
        if bounds.count > Self.kept { bounds.removeFirst(bounds.count - Self.kept) }
    }

    /// The offsets the most answers allow (their intersection, each widened by its age at the
    /// newest answer: ``drift``), and how many: the first such stretch when several are as good.
    /// Nil before any answer.
    package var interval: (low: Double, high: Double, agreeing: Int)? {
        guard let newest = bounds.map(\.at).max() else { return nil }
        // A sweep over the bounds' ends: +1 at a low, −1 past a high (a low and a high at one
        // point overlap there).
        let ends = bounds.flatMap { b -> [(Double, Int)] in
            let widen = (newest - b.at) * Self.drift
            return [(b.low - widen, 1), (b.high + widen, -1)]
        }.sorted {
            $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 > $1.1)
        }
        var (depth, best, low, high) = (0, 0, 0.0, 0.0)
        for (i, (at, step)) in ends.enumerated() {
            depth += step
            if step > 0, depth > best, i + 1 < ends.count {
                (best, low, high) = (depth, at, ends[i + 1].0)
            }
        }
        return (low, high, best)
    }

    /// The clock this gives: the middle of ``interval``, its width as the round trip (the
    /// error is at most half of it), or nil before any answer.
    package func clock(source: String) -> ServerClock? {
        interval.map { ServerClock(offset: ($0.low + $0.high) / 2, source: source, roundTrip: $0.high - $0.low) }
    }

    /// When to send the next request (monotonic seconds) so that the server's next tick after
    /// `now`, placed by the middle of ``interval``, comes halfway through a round trip of
    /// `roundTrip` seconds; nil before any answer.
    package func nextProbe(after now: Double, roundTrip: Double) -> Double? {
        guard let (low, high, _) = interval else { return nil }
        // The server's clock reads a whole second K at monotonic K − offset.
        let offset = (low + high) / 2
        let tick = (now + roundTrip / 2 + offset).rounded(.up)
        return tick - offset - roundTrip / 2
    }
}

extension HTTPFetcher {
    /// One request for its answer's `Date`, for ``DateTicks``: HEAD, or GET (a manifest, at
    /// most 4 MiB) where a server refuses HEAD.
    package func dated(_ url: URL, head: Bool) async throws(FetchError) -> FetchResult {
        try await get(url, method: head ? .HEAD : .GET, timeout: .seconds(5), maxBytes: 4 << 20)
    }
}
