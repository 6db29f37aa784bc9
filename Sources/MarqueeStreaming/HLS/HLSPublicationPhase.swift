/// When a live playlist without program date-times publishes its segments, learned from the
/// answers to its reloads: the *phase* of the publication against the ends an ``HLSLiveAnchor``
/// gives the segments (server seconds; a segment whose anchored end is `e` is listed from
/// `e + phase` on).
///
/// The anchor placed the edge at its first answer, which came anywhere up to a segment after
/// the packager listed the newest segment: boxes anchored on different answers are up to a
/// segment apart. Every answer bounds the phase, on both sides: at answer time `t`, the newest
/// segment listed (anchored end `E`) had been published, and the next one (end `E + d`) had
/// not, so `t − E − d < phase ≤ t − E`. Answers at different points of the segment cycle narrow
/// the interval; an answer made inside it (``probeTime(nextEnd:)``) halves it. Within a few
/// segments it is as narrow as the answers' own jitter, and every box that learns it places the
/// publication at the same instant of the server's clock.
///
/// A packager that publishes late now and then (a slow disk, a stalled encoder) or a reload
/// answered from a stale cache contradicts the others: the phase is the one that the fewest of
/// the last ``window`` answers contradict, so an outlier never drags it; a phase that moved for
/// real (an encoder restarted on another cadence) wins once the newer answers outnumber the
/// older ones.
///
/// Behind a venue proxy, each answer also carries what the proxy learned from all its boxes'
/// answers (``HLSPublicationAge``): the bound is narrowed to it, and the boxes behind one proxy
/// share its estimate from their first answers.
///
/// A pure value; times in server Unix seconds, given by the caller.
package struct HLSPublicationPhase: Sendable, Equatable {
    /// What one answer says: the phase is above `low` and at most `high`.
    package struct Bound: Sendable, Equatable {
        package var low: Double
        package var high: Double
        /// Narrowed by what a venue proxy learned (``HLSPublicationAge``): its middle is the
        /// phase the proxy's own estimate says, the answer taken as made halfway between the
        /// request's arrival plus the time the proxy held it and the head's arrival (exact over
        /// a symmetric network; each box reads it late by its own delivery and stamping).
        package var shared = false
    }

    /// The bounds of the last ``window`` answers, oldest first.
    package private(set) var bounds: [Bound] = []

    /// Answers remembered (at two reloads a segment, a minute of 1 s segments).
    package static let window = 120

    package init() {}

    /// A playlist asked for at `sentAt` and answered (its head received) at `receivedAt`,
    /// listing its newest segment as ending at `newestEnd` (as anchored); `nextDuration` is how
    /// long the next one is expected to be. The server listed it somewhere in between: the
    /// newest was out by `receivedAt`, the next not yet at `sentAt`.
    ///
    /// `published`: what a venue proxy said of the same answer (``HLSPublicationAge``: the newest
    /// was published between `most` and `least` seconds before the proxy made the answer, which
    /// it did between `sentAt` plus the time it held the request and `receivedAt`): the bound is
    /// the proxy's, widened by the network's round trip (not by the proxy's own upstream fetch,
    /// which it says). (The proxy is the box's source of the stream itself; its answers stay one
    /// vote each among the last ``window``.)
    package mutating func record(
        sentAt: Double, receivedAt: Double, newestEnd: Double, nextDuration: Double,
        published: HLSPublicationAge? = nil
    ) {
        guard sentAt.isFinite, receivedAt.isFinite, sentAt <= receivedAt, newestEnd.isFinite, nextDuration.isFinite,
            nextDuration > 0
        else { return }
        var bound = Bound(low: sentAt - newestEnd - nextDuration, high: receivedAt - newestEnd)
        if let published {
            // The proxy's word, widened by this box's round trip (the proxy made the answer
            // after `sentAt` and the time it held the request, before `receivedAt`). Not
            // narrowed by the answer's own bound: a proxy joins a request to an answer already
            // under way, made before it was sent, so
            // "the next not yet out at `sentAt`" is not this answer's to say; and within it
            // anyway (published by `receivedAt`: an age is never negative).
            let made = sentAt + min(published.held, receivedAt - sentAt)  // (made at or after it)
            bound = Bound(
                low: made - published.most - newestEnd, high: receivedAt - published.least - newestEnd, shared: true)
        }
        bounds.append(bound)
        if bounds.count > Self.window { bounds.removeFirst(bounds.count - Self.window) }
    }

    /// Whether the newest answer's bound was narrowed by a venue proxy's (the boxes behind it
    /// share its estimate).
    package var isShared: Bool { bounds.last?.shared ?? false }

    /// The anchored ends moved by `shift` seconds (the anchor nudged its new segments): the
    /// phases measured against the old ends move the other way.
    package mutating func anchorMoved(by shift: Double) {
        guard shift != 0, shift.isFinite else { return }
        bounds = bounds.map { Bound(low: $0.low - shift, high: $0.high - shift, shared: $0.shared) }
    }

    /// The interval of phases the fewest answers contradict (an answer contradicts a phase
    /// outside its bound), and how many do; nil before any answer. Behind a venue proxy (the
    /// newest answer told its age), the newest answer's bound: the proxy's own estimate (its
    /// consensus of every answer it had), widened by this box's round trip, so every box behind
    /// it reads the same one (a box's own consensus of the proxy's earlier estimates, or of its
    /// own early answers, would pull each its own way).
    package var interval: (low: Double, high: Double, contradicting: Int)? {
        if let told = bounds.last, told.shared { return (told.low, told.high, 0) }
        guard !bounds.isEmpty else { return nil }
        // A phase just above a low or exactly at a high is where the count of contradictions
        // changes: the candidates. (At most 2 × window of them, each counted in one pass.)
        var best: (low: Double, high: Double, contradicting: Int)?
        let highs = bounds.map(\.high)
        for candidate in Set(highs) {
            let contradicting = bounds.reduce(0) { $0 + (candidate <= $1.low || candidate > $1.high ? 1 : 0) }
            if let b = best,
                b.contradicting < contradicting || (b.contradicting == contradicting && b.high <= candidate)
            {
                continue
            }
            // The interval around the candidate that the same answers allow: above the largest
            // low of those that allow it, up to the smallest high.
            let allowing = bounds.filter { candidate > $0.low && candidate <= $0.high }
            let low = allowing.map(\.low).max() ?? candidate
            let high = allowing.map(\.high).min() ?? candidate
            best = (low, high, contradicting)
        }
        return best
    }

    /// The phase (the middle of ``interval``) and its error (half the interval's width), once
    /// the interval is narrower than `precision`; nil before.
    package func estimate(precision: Double) -> (phase: Double, error: Double)? {
        guard let interval, interval.high - interval.low <= precision else { return nil }
        return ((interval.low + interval.high) / 2, (interval.high - interval.low) / 2)
    }

    /// The phase's best value, the middle of ``interval`` (behind a venue proxy, of the bound it
    /// told last: the proxy's estimate, which every box behind it reads alike, each within its
    /// own delivery of the answer); nil before any answer.
    package var middle: Double? {
        interval.map { ($0.low + $0.high) / 2 }
    }

    /// When to ask next to narrow the interval (server seconds), for the segment anchored to end
    /// at `nextEnd`: the middle of the interval, which an answer there halves. Nil before any
    /// answer.
    package func probeTime(nextEnd: Double) -> Double? {
        middle.map { nextEnd + $0 }
    }
}
