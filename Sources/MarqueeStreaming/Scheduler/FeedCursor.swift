import Foundation

/// Where a track's feeding is on its timeline, and what it has learned of the server's listing:
/// the state a feeder keeps from one segment to the next. It changes only through the
/// transitions below, each a pure function of the cursor and what the feeder observed (a
/// reload's timeline, the server clock's reading, a fetch's outcome), beside ``SegmentChoice``'s
/// decisions; the feeder's loop only does the I/O and the waiting they ask for.
package struct FeedCursor: Sendable {
    /// The timeline segments are taken from (replaced by reloads and a new period).
    package private(set) var timeline: RepresentationTimeline
    /// The segment to feed next; nil: the timeline holds none yet (reload and look again).
    package private(set) var next: SegmentReference?
    /// The end of the last segment fed (pushed or skipped); nil before the first.
    package private(set) var lastEnd: Double?
    /// Reloads in a row that listed nothing new.
    package private(set) var misses = 0
    /// After a wait: only a manifest requested since this monotonic time will do.
    package private(set) var reloadSince: Double?
    /// Whether anything of this stream was pushed (a discontinuity before it begins nothing).
    package private(set) var pushedAny = false
    /// The next segment was looked for before it was there (a reload listed nothing new, or its
    /// availability time had not come): when it arrives says how late the server is.
    package private(set) var awaited = false
    /// The discontinuity the core's tracks were told of.
    package private(set) var marked: SegmentReference?
    /// Monotonic time of the last manifest reload.
    package private(set) var loadedAt: Double
    /// Seconds after a segment's end the server lists it
    /// (``SegmentChoice/listingLateness(observed:missed:segmentDuration:)``).
    package private(set) var listingLate = 0.0
    /// Server second of the last reload after a wait that listed nothing new.
    package private(set) var missedAt: Double?
    /// The next segment was listed between the reload that missed it and the one that found
    /// it: its arrival is measured from the middle (seconds before the finding reload).
    package private(set) var listedBefore = 0.0

    /// Feeding `timeline` from `start` (the segment holding it), its manifest loaded at `now`.
    package init(timeline: RepresentationTimeline, from start: Double, now: Double) {
        self.timeline = timeline
        self.next = timeline.segment(containing: start)
        self.loadedAt = now
    }

    /// Whether a manifest that changes (`minimumUpdatePeriod`, s) is due for a reload at `now`
    /// while the template still computes the next segments: a new period, a period's end, are
    /// seen in time.
    package func refreshDue(now: Double, minimumUpdatePeriod: Double?) -> Bool {
        guard next != nil, lastEnd != nil, let minimumUpdatePeriod else { return false }
        return now - loadedAt >= max(1, minimumUpdatePeriod)
    }

    /// A reload made because ``refreshDue(now:minimumUpdatePeriod:)``, at `now`: its timeline,
    /// nil when it failed (the old one is kept).
    package mutating func refreshed(_ fresh: RepresentationTimeline?, now: Double) {
        loadedAt = now
        guard let fresh, let lastEnd else { return }
        timeline = fresh
        next = fresh.segment(following: lastEnd)
    }

    /// The exhausted timeline reloaded at `now` (`fresh` nil: the reload failed), looked at for
    /// the segment after the last one fed, else the one holding `wanted`; a live start whose
    /// listing ends before `wanted` starts at its newest segment (``SegmentChoice/edgeStart``).
    package mutating func reloaded(_ fresh: RepresentationTimeline?, now: Double, wanted: Double, isLive: Bool) {
        timeline = fresh ?? timeline
        loadedAt = now
        reloadSince = nil
        next = lastEnd.map { timeline.segment(following: $0) } ?? timeline.segment(containing: wanted)
        if next == nil, lastEnd == nil, isLive {
            next = SegmentChoice.edgeStart(on: timeline, wanted: wanted, misses: misses)
        }
    }

    /// Whether `other` lists the segment ``reloaded(_:now:wanted:isLive:)`` would take next
    /// from it (the one after the last fed, else the one holding `wanted`).
    package func lists(on other: RepresentationTimeline, wanted: Double) -> Bool {
        (lastEnd.map { other.segment(following: $0) } ?? other.segment(containing: wanted)) != nil
    }

    /// The period is over: on in `following`, from its start or `wanted`, whichever is later
    /// (its first segment begins a new stream: it is marked, nothing of it pushed yet).
    package mutating func enter(_ following: RepresentationTimeline, wanted: Double) {
        timeline = following
        let from = max(following.periodStart, lastEnd ?? wanted)
        next = following.segment(containing: from + 1e-3) ?? following.segment(following: from)
        marked = next
        pushedAny = false
    }

    /// Nothing new was listed: the seconds to wait before the next reload
    /// (``SegmentChoice/listingWait(expectedIn:segmentDuration:misses:)``), the next segment's
    /// listing `expectedIn` seconds from now by the server's clock (nil: unknown), `serverNow`
    /// the server second now. Counts the miss; the reload after the wait is made at or after
    /// ``reloadSince`` (``waited(now:)``).
    package mutating func missed(expectedIn: Double?, serverNow: Double?) -> Double {
        let wait = SegmentChoice.listingWait(
            expectedIn: expectedIn, segmentDuration: SegmentChoice.segmentDuration(timeline), misses: misses)
        if misses > 0 { missedAt = serverNow }  // (the first reload comes at once, before the wait)
        misses += 1
        awaited = true
        return wait
    }

    /// The timeline's clock moved (a lead learned anew): the listing lateness learned on it, and
    /// the miss being measured, are forgotten (the next listing is expected at the segment's end).
    package mutating func timelineMoved() {
        listingLate = 0
        missedAt = nil
        listedBefore = 0
        misses = 0
    }

    /// The wait after a miss ended at monotonic `now`: the next reload must be newer.
    package mutating func waited(now: Double) { reloadSince = now }

    /// The next segment was found by a reload at server second `serverNow` after misses: how
    /// late the server lists segments is learned from it. `frozen(from, to)` is how much of
    /// that span (server seconds) the player itself was not running: its reloads were late,
    /// not the listing.
    package mutating func found(serverNow: Double?, frozen: (Double, Double) -> Double) {
        if misses > 0, let found = next, lastEnd != nil, let now = serverNow {
            listingLate = SegmentChoice.listingLateness(
                observed: now - found.end - frozen(found.end, now),
                missed: missedAt.map { $0 - found.end - frozen(found.end, $0) },
                segmentDuration: SegmentChoice.segmentDuration(timeline))
            listedBefore = missedAt.map { max(0, now - $0 - frozen($0, now)) / 2 } ?? 0
        }
        missedAt = nil
        misses = 0
    }

    /// Behind live: `jump` (``SegmentChoice/catchUp(from:wanted:on:)``) is fed next instead.
    package mutating func catchUp(to jump: SegmentReference) {
        next = jump
        awaited = false
    }

    /// The next segment was waited for until it was available.
    package mutating func awaitedAvailability() { awaited = true }

    /// Whether `segment` begins a new stream the core's tracks must be told of: a
    /// discontinuity after something of this stream was pushed, not the one already marked.
    /// Marks it.
    package mutating func beginsStream(_ segment: SegmentReference) -> Bool {
        guard segment.discontinuity, pushedAny, marked?.start != segment.start else { return false }
        marked = segment
        return true
    }

    /// `segment` is about to be fed.
    package mutating func feeding() { pushedAny = true }

    /// Its arrival was measured: the next one is measured from its own listing.
    package mutating func measured() { listedBefore = 0 }

    /// `segment` was fed (pushed or skipped): on to the one after it.
    package mutating func fed(_ segment: SegmentReference) {
        lastEnd = segment.end
        next = timeline.segment(after: segment)
        awaited = false
    }

    /// When the segment after the last fed should be listed, seconds from the server's `now`
    /// (`availabilityStart` the timeline's): its end, a segment, plus how late the server lists
    /// (nil without a last segment or an availability start).
    /// Whether the segment after the last one fed is overdue at server second `serverNow`, by
    /// this server's own listing lateness (``SegmentChoice/isOverdue(after:now:segmentDuration:listingLate:)``).
    package func overdue(serverNow: Double?) -> Bool {
        SegmentChoice.isOverdue(
            after: lastEnd, now: serverNow, segmentDuration: SegmentChoice.segmentDuration(timeline),
            listingLate: listingLate)
    }

    package func expectedListing(now: Date) -> Double? {
        let duration = SegmentChoice.segmentDuration(timeline)
        return lastEnd.flatMap { end in
            timeline.availabilityStartTime.map {
                $0.addingTimeInterval(end + duration + listingLate).timeIntervalSince(now)
            }
        }
    }
}
