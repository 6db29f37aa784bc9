import Foundation

/// What to fetch next on a live timeline, and when to look again: pure decisions from the
/// timeline, the positions and the server clock's reading, taken by the feeder each time round.
package enum SegmentChoice {
    /// A segment's duration on `timeline`: the template's, else the last listed segment's, else 2 s.
    package static func segmentDuration(_ timeline: RepresentationTimeline) -> Double {
        let t = timeline.template
        if let d = t.duration { return Double(d) / Double(t.timescale) }
        return timeline.lastListedSegment.map { $0.end - $0.start } ?? 2
    }

    /// When a live segment ended more than a segment before the `wanted` position (a stall, a
    /// slow fetch): the segment holding the wanted position instead; nil when on time.
    package static func catchUp(from segment: SegmentReference, wanted: Double, on timeline: RepresentationTimeline)
        -> SegmentReference?
    {
        guard segment.end < wanted - (segment.end - segment.start) else { return nil }
        guard let jump = timeline.segment(containing: wanted), jump.start > segment.start else { return nil }
        return jump
    }

    /// Nothing fetched yet and, after `misses` reloads that listed nothing new, the listing
    /// ends before the `wanted` position (a server later than the target, an encoder whose clock
    /// runs slow): its newest segment is the live edge to start at. Nil otherwise.
    package static func edgeStart(on timeline: RepresentationTimeline, wanted: Double, misses: Int) -> SegmentReference?
    {
        guard misses >= 2, let newest = timeline.lastListedSegment, newest.end <= wanted else { return nil }
        return newest
    }

    /// Whether the segment after one ending at `lastEnd` is overdue at server second `now`
    /// (since the availability start): a second past its expected listing, a segment after it
    /// ended plus `listingLate`, how late this server was seen to list
    /// (``listingLateness(observed:missed:segmentDuration:)``): a server that lists 1.2 s late
    /// and opens each new Period on time still lists the old one's last segment, and it must
    /// not be skipped for the new Period. Without either reading it is taken as overdue.
    package static func isOverdue(after lastEnd: Double?, now: Double?, segmentDuration: Double, listingLate: Double)
        -> Bool
    {
        guard let lastEnd, let now else { return true }
        return now >= lastEnd + segmentDuration + listingLate + 1
    }

    /// Seconds before a new Period's first segment is due that a period whose last segment
    /// is still missing is given up for it: the new Period's initialization and first segment
    /// are fetched in that time (loopback or a LAN: tens of milliseconds; a CDN: hundreds).
    package static let periodSwitchLead = 0.5

    /// How long to wait, seconds, before reloading a listing that has nothing after the segment
    /// ending at `lastEnd`: the next segment is listed once complete, at the end of the last one
    /// plus a segment on the server clock, so the reload comes just after that (30 ms), not on a
    /// fixed cadence that would eat the margin the latency target leaves; when it is not there
    /// yet, again after 50 ms (four times), then 100, 200, ... (doubling with `misses`) up to half a segment.
    /// `expectedIn`: seconds from now until that listing (nil without a last segment or a clock).
    package static func listingWait(expectedIn: Double?, segmentDuration duration: Double, misses: Int) -> Double {
        guard let expected = expectedIn else { return min(2, max(0.2, duration / 2)) }
        if expected > 0.05 { return min(2, expected + 0.03) }
        return min(max(0.05, duration / 2), 0.05 * Double(1 << min(max(0, misses - 3), 6)))
    }

    /// How late the server lists its segments (seconds after a segment's end on the server
    /// clock), learned from one a reload found `observed` seconds after its end: when a reload
    /// `missed` it before (seconds after its end), it was listed between the two and the next
    /// reload is planned at the miss; found at the first reload planned for it, somewhat before
    /// that (``listingProbeAhead``), so that a server that lists earlier again is followed. The
    /// reload is then made just before the listing and the backoff's fine first steps find it
    /// (``listingWait(expectedIn:segmentDuration:misses:)``): each arrival is measured to a few
    /// hundredths of a second, not to the last doubling of a backoff (up to half a segment),
    /// and a server that lists late raises the latency target once, to what it needs, not by
    /// the phase of the reloads. Never below zero, at most a segment and a half.
    package static func listingLateness(observed: Double, missed: Double?, segmentDuration: Double) -> Double {
        let estimate = missed.map { min($0, observed) } ?? observed - listingProbeAhead
        guard estimate.isFinite else { return 0 }
        return min(1.5 * segmentDuration, max(0, estimate))
    }

    /// Seconds before the last listing time the reload for a segment is made when no reload
    /// missed it (``listingLateness(observed:missed:segmentDuration:)``).
    package static let listingProbeAhead = 0.1

    /// A delayed presentation is fed from the store no further ahead of the wanted position than
    /// a live edge would be: this many seconds for a segment of `duration` seconds.
    package static func storeLead(segmentDuration duration: Double) -> Double { max(3, 2 * duration) }
}
