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
/// A packager publishes each segment a few milliseconds early or late around its cadence
/// (ffmpeg's HLS muxer: ±5 ms), so once the interval is as narrow as that jitter, an answer
/// made inside it neither contradicts it nor narrows it: the interval stops where the first
/// answers left it, up to the jitter off, another box elsewhere. From then on the phase is the
/// **median** publication (``median``): each answer says the newest was out at its instant and
/// the next was not, and the instant where as many say "out" as "not yet" is where every box's
/// answers converge, the more so the more answers (probes dithered around it, a millisecond
/// either side).
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
        /// The answer's instant (halfway through its round trip) less the newest segment's end:
        /// that one was out then, and the next, `next` seconds long, not yet (``median``). Nil
        /// for a proxy's word.
        package var at: Double?
        package var next = 0.0
        /// The phase the proxy told with it against its own anchor, and that anchor's placement
        /// (``HLSPublicationAge/told``): the bound less it bounds one constant (this box's ends
        /// against the proxy's) while the placement is one. Nil: not told.
        package var told: HLSPublicationAge.Told?
    }

    /// The bounds of the last ``window`` answers, oldest first.
    package private(set) var bounds: [Bound] = []
    /// Whether the interval was once narrower than ``medianWithin`` (or stopped narrowing,
    /// ``stallWithin``): from then on the phase is the ``median`` (answers made around it widen
    /// the interval again now and then; the median they refine stays).
    package private(set) var settled = false

    /// Answers remembered (at two reloads a segment, a minute of 1 s segments).
    package static let window = 120
    /// A venue proxy's answers read together at most (``interval``): at one or two a segment,
    /// 8 to 16 segments of its word.
    package static let sharedRun = 64
    /// The interval is read by its ``median`` once narrower than this (seconds): about the
    /// packagers' own jitter (ffmpeg's ±5 ms); wider, its middle, which a probe halves.
    package static let medianWithin = 0.004
    /// An interval this narrow or narrower (seconds) that an answer made across it, with a round
    /// trip of half its width or more, did not narrow by a quarter is read by its ``median`` too:
    /// an answer halves the interval down to about its own round trip only (the side it narrows
    /// is its request's sending, or its head's arrival), and a box whose answers take 4–6 ms (a
    /// loaded box, a slower link) held an interval 5–8 ms wide for 4 segments at a time, its
    /// estimate said within 2 ms only 27 s after play on 2 s segments (a CI run). Their middles,
    /// dithered around the median, go on narrowing it. One such answer, not two in a row: in a
    /// simulation of 64 boxes with 4–6.5 ms answers (`boxesWithSlowAnswersSettleWithinTwelveSegments`),
    /// two had half of them within 2 ms 12 s after their first answer and the slowest 20.3 s, one
    /// 10 s and 18.0 s, each placing the median publication as well (0.8 and 1.9 ms off, p50 and
    /// p90).
    package static let stallWithin = 0.016
    /// Answers this far from the interval's middle (seconds) or nearer are read for the median:
    /// an outlier (a late segment, a stale cache) never counts in it.
    package static let medianReach = 0.020

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
        var bound = Bound(
            low: sentAt - newestEnd - nextDuration, high: receivedAt - newestEnd,
            at: (sentAt + receivedAt) / 2 - newestEnd, next: nextDuration)
        if let published {
            // The proxy's word, widened by this box's round trip (the proxy made the answer
            // after `sentAt` and the time it held the request, before `receivedAt`). Not
            // narrowed by the answer's own bound: a proxy joins a request to an answer already
            // under way, made before it was sent, so
            // "the next not yet out at `sentAt`" is not this answer's to say; and within it
            // anyway (published by `receivedAt`: an age is never negative).
            let made = sentAt + min(published.held, receivedAt - sentAt)  // (made at or after it)
            bound = Bound(
                low: made - published.most - newestEnd, high: receivedAt - published.least - newestEnd, shared: true,
                told: published.told)
        }
        // (The interval before it, only where a stall can be read: an interval costs a pass
        // over the window for each of its bounds.)
        let before = settled || bound.at == nil || bound.shared ? nil : interval
        bounds.append(bound)
        if bounds.count > Self.window { bounds.removeFirst(bounds.count - Self.window) }
        guard !settled, let interval else { return }
        let width = interval.high - interval.low
        if width <= Self.medianWithin {
            settled = true
        } else if let before, let at = bound.at, before.high - before.low <= Self.stallWithin {
            // Made across the interval: its round trip (as wide as the bound less the segment
            // it spans) overlapped it, as an "out" (its middle against the newest end) or a
            // "not yet" (against the next one's). Read only when its round trip is half the
            // interval or more: a quicker answer that did not narrow it met the packager's own
            // scatter (GStreamer's 20 ms sawtooth), which the interval still sorts out.
            let was = before.high - before.low
            let roundTrip = bound.high - bound.low - nextDuration
            let reach = (was + roundTrip) / 2
            let centre = (before.low + before.high) / 2
            let across = abs(at - centre) <= reach || abs(at - nextDuration - centre) <= reach
            if roundTrip >= was / 2, across, width > 0.75 * was { settled = true }
        }
    }

    /// Whether the newest answer's bound was narrowed by a venue proxy's (the boxes behind it
    /// share its estimate).
    package var isShared: Bool { bounds.last?.shared ?? false }

    /// The anchored ends moved by `shift` seconds (the anchor nudged its new segments): the
    /// phases measured against the old ends move the other way.
    package mutating func anchorMoved(by shift: Double) {
        guard shift != 0, shift.isFinite else { return }
        bounds = bounds.map {
            Bound(
                low: $0.low - shift, high: $0.high - shift, shared: $0.shared, at: $0.at.map { $0 - shift },
                next: $0.next, told: $0.told)
        }
    }

    /// The interval of phases the fewest answers contradict (an answer contradicts a phase
    /// outside its bound), and how many do; nil before any answer. Behind a venue proxy (the
    /// newest answer told its age), the proxy's word only: its own estimate (its consensus of
    /// every answer it had), widened by this box's round trips, over the newest run of its
    /// answers that agree (at most ``sharedRun``), so every box behind it reads the same one (a
    /// box's own consensus of the proxy's earlier estimates, or of its own early answers, would
    /// pull each its own way).
    package var interval: (low: Double, high: Double, contradicting: Int)? {
        if let newest = bounds.last, newest.shared {
            // Each of the proxy's answers is its estimate widened by this box's round trip, read
            // off its middle as late as that answer's delivery and stamping were slow (one
            // answer's middle told a box up to 2 ms off its neighbour's). Less the phase the
            // proxy told with it, each bounds one constant (this box's ends against the proxy's)
            // while the proxy's anchor is one placement: the run of them, intersected, is as
            // narrow as the quickest answers, which every box reads alike, and the proxy's
            // estimate moving moves it exactly. (A run that disagrees starts anew.)
            guard let told = newest.told else { return (newest.low, newest.high, 0) }
            var (low, high) = (newest.low - told.phase, newest.high - told.phase)
            for bound in bounds.dropLast().reversed().prefix(Self.sharedRun - 1) {
                guard bound.shared, let t = bound.told, t.placement == told.placement,
                    bound.low - t.phase < high, bound.high - t.phase > low
                else { break }
                (low, high) = (max(low, bound.low - t.phase), min(high, bound.high - t.phase))
            }
            return (low + told.phase, high + told.phase, 0)
        }
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

    /// The phase (``best``) and its error, once the interval is narrower than `precision`; nil
    /// before. The error: half the interval's width; once ``settled``, half the gap around the
    /// median (between the last instant fitted "not yet" and the first fitted "out").
    package func estimate(precision: Double) -> (phase: Double, error: Double)? {
        if settled, let median = medianFit { return (median.at, median.gap / 2) }
        guard let interval, interval.high - interval.low <= precision, let best else { return nil }
        return (best, (interval.high - interval.low) / 2)
    }

    /// The middle of ``interval`` (behind a venue proxy, of the bound it told last: the proxy's
    /// estimate, which every box behind it reads alike, each within its own delivery of the
    /// answer); nil before any answer.
    package var middle: Double? {
        interval.map { ($0.low + $0.high) / 2 }
    }

    /// The phase's best value: the ``median`` once ``settled`` (and the answers near it cross),
    /// else the interval's ``middle``.
    package var best: Double? {
        guard let interval else { return nil }
        if settled, let median { return median }
        return (interval.low + interval.high) / 2
    }

    /// The median publication phase: of the answers within ``medianReach`` of the interval's
    /// middle, each an "out" at its instant and a "not yet" one segment before it, the instant
    /// where the share of "out" reaches one half (the monotone fit of the shares, by pooling
    /// neighbours that disagree); nil behind a venue proxy (its word is the phase), or when
    /// no answer near says "not yet" before one says "out".
    package var median: Double? { medianFit?.at }

    /// The ``median`` and the gap it lies in (seconds between the observations either side).
    var medianFit: (at: Double, gap: Double)? {
        guard let told = bounds.last, !told.shared, let centre = middle else { return nil }
        var seen: [(at: Double, out: Bool)] = []
        for bound in bounds {
            guard let at = bound.at else { continue }
            if abs(at - centre) <= Self.medianReach { seen.append((at, true)) }
            if abs(at - bound.next - centre) <= Self.medianReach { seen.append((at - bound.next, false)) }
        }
        return Self.halfway(seen)
    }

    /// Where the nondecreasing fit of the "out" shares of `seen` reaches one half: in the
    /// middle of the pooled run that is exactly half, or between the last run below and the
    /// first above; nil when the first run is above half already or none reaches it.
    static func halfway(_ seen: [(at: Double, out: Bool)]) -> (at: Double, gap: Double)? {
        // Pool adjacent violators: runs of (count out, count, first instant, last instant).
        var runs: [(out: Int, count: Int, first: Double, last: Double)] = []
        for s in seen.sorted(by: { $0.at < $1.at }) {
            runs.append((s.out ? 1 : 0, 1, s.at, s.at))
            while runs.count > 1,
                runs[runs.count - 2].out * runs[runs.count - 1].count >= runs[runs.count - 1].out
                    * runs[runs.count - 2].count
            {
                let b = runs.removeLast()
                runs[runs.count - 1].out += b.out
                runs[runs.count - 1].count += b.count
                runs[runs.count - 1].last = b.last
            }
        }
        guard let k = runs.firstIndex(where: { 2 * $0.out >= $0.count }) else { return nil }
        if 2 * runs[k].out == runs[k].count {
            return ((runs[k].first + runs[k].last) / 2, runs[k].last - runs[k].first)
        }
        return k > 0 ? ((runs[k - 1].last + runs[k].first) / 2, runs[k].first - runs[k - 1].last) : nil
    }

    /// When to ask next (server seconds), for the segment anchored to end at `nextEnd`: at the
    /// ``best`` phase (the interval's middle, which an answer there halves, then the median).
    /// Nil before any answer.
    package func probeTime(nextEnd: Double) -> Double? {
        best.map { nextEnd + $0 }
    }
}
