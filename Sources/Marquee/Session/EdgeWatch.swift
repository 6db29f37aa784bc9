import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// The live edge's own rate (``LiveEdgeRate``), watched for manifests that list their segments
/// (a DASH SegmentTimeline, HLS with the packager's program date-times): when a drifting encoder's
/// edge runs off the server's clock, the presentation timeline follows the edge instead.
extension PlaybackSession {
    /// How often the edge is sampled once its rate is known well: every this many segments
    /// (every segment for the first ``edgeLearning`` seconds).
    static let edgeProbeEvery = 4
    static let edgeLearning = 120.0
    /// Seconds between the manifest requests that bracket a segment's listing.
    static let edgeProbeStep = 0.05

    /// Brackets segments' listings between two answers a tenth of a second apart (a request
    /// just before the segment is expected, then every ``edgeProbeStep`` until it is listed)
    /// and feeds ``LiveEdgeRate``; once the edge is found to drift, the server clock's lead
    /// (``SharedServerClock/setLead(_:availabilityStart:)``) follows its line. The first
    /// segment is found by asking every 0.3 s for at most two segments' time. About two or three
    /// requests per probe; the feeders' own reloads (every `minimumUpdatePeriod`) go on.
    func watchEdge() async {
        guard syncEnabled, let ast = mpd.availabilityStartTime?.timeIntervalSince1970,
            let kind = (plans.first { $0.kind == .video } ?? plans.first)?.kind,
            plans.contains(where: { Self.listsItsEdge($0.representation, $0.timeline) })
        else { return }
        var edge = LiveEdgeRate()
        var learningSince: Double?
        var last: (end: Double, at: Double, duration: Double)?  // the newest end listed, when answered
        var misses = 0  // probes in a row whose segment was not listed in time
        var early = 0.0  // seconds a probe begins earlier after one that found its segment listed
        var provisional = false  // the clock follows an edge listed ahead of it, not yet measured
        /// Server seconds since the availability start, without the edge's lead.
        func serverNow() -> Double { Monotonic.now() + clock.offset - ast }
        /// A fresh answer: the newest end it lists for the tracks' kind and when it was answered.
        func ask() async -> (end: Double, at: Double, duration: Double)? {
            guard let (mpd, mono) = await manifest.answered(),
                let newest = Self.newestListed(in: mpd, kind: kind, manifestURL: source)
            else { return nil }
            return (newest.end, mono + clock.offset - ast, newest.end - newest.start)
        }
        /// Whether the player itself was not running between two answers (``Suspensions``): a
        /// listing bracketed across a freeze says nothing about when it came.
        func frozen(between a: Double, and b: Double) -> Bool {
            let offset = clock.offset - ast
            return suspensions.withLock { $0.frozen(from: a - offset, to: b - offset, now: Monotonic.now()) } > 0
        }
        func sleep(until time: Double) async {
            let wait = time - serverNow()
            if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000))) }
        }
        while !Task.isCancelled {
            guard let known = last else {
                last = await ask()
                if last == nil { try? await Task.sleep(for: .seconds(2)) }
                continue
            }
            // The segment to catch being listed, and when it is expected.
            let learning = learningSince.map { serverNow() - $0 < Self.edgeLearning } ?? true
            let ahead = learning ? 1 : Self.edgeProbeEvery
            let end = known.end + Double(ahead) * known.duration
            let expected = edge.expectedListing(of: end)
            let step = expected == nil ? 0.3 : Self.edgeProbeStep
            // Begun at a random point before it: a probe on a fixed schedule would find the
            // listing at the same place in its bracket, segment after segment (a staircase
            // of errors up to half the bracket); at a random one the errors average out.
            if let expected { await sleep(until: expected - early - Double.random(in: 0.05...0.15)) }
            let giveUp =
                serverNow() + (expected == nil ? 2 * Double(ahead) * known.duration + 1 : known.duration / 2 + 0.5)
            var before = await ask()
            if let first = before, expected != nil, first.end >= end - 0.001 {
                // Listed already: the next probe begins earlier (the line may lag a drift).
                early = min(known.duration, early + 0.25)
            }
            while !Task.isCancelled, let previous = before, previous.end < end - 0.001, serverNow() < giveUp {
                try? await Task.sleep(for: .milliseconds(Int(step * 1000)))
                guard let now = await ask() else { break }
                if now.end > previous.end + 0.001 {
                    // Listed between the two answers: one sample when it is the one awaited
                    // (and only it is new).
                    if abs(now.end - end) < 0.01, now.end - previous.end < now.duration * 1.5,
                        !frozen(between: previous.at, and: now.at)
                    {
                        let wasActive = edge.isActive
                        edge.record(end: now.end, listedAt: now.at, notListedAt: previous.at)
                        early = 0
                        logger.debug(
                            "edge sample",
                            metadata: [
                                "end": "\(now.end)", "at": "\(now.at)", "before": "\(previous.at)",
                                "lead": "\(edge.lead(at: now.at))", "slope": "\(edge.slope)",
                            ])
                        learningSince = learningSince ?? now.at
                        if !edge.isActive, clock.lead == nil, let ahead = Self.listedAhead(now, plans: plans),
                            ahead > 0.5
                        {
                            // Listed before the manifest's own clock makes it available: an
                            // encoder fast for a while already. Until its rate is measured, the
                            // timeline follows the listing as it stands.
                            let lead = now.end - (now.at + previous.at) / 2
                            clock.setLead(
                                SharedServerClock.Lead(reference: now.at, lead: lead, slope: 0), availabilityStart: ast)
                            provisional = true
                            logger.notice(
                                "live edge ahead of the server clock: the timeline follows it",
                                metadata: ["lead": "\(String(format: "%.3f", lead))"])
                            timelineMoved(by: lead, segment: now.duration)
                        }
                        if !edge.isActive, provisional, let rough = edge.roughLead {
                            clock.setLead(rough, availabilityStart: ast)
                        }
                        if edge.isActive {
                            let moved = (edge.clockLead?.at(now.at) ?? 0) - (clock.lead?.at(now.at) ?? 0)
                            clock.setLead(edge.clockLead, availabilityStart: ast)
                            if abs(moved) > 0.25 { timelineMoved(by: moved, segment: now.duration) }
                            if !wasActive {
                                logger.notice(
                                    "live edge drifts from the server clock: the timeline follows it",
                                    metadata: [
                                        "ppm": "\(Int((edge.slope * 1_000_000).rounded()))",
                                        "lead": "\(String(format: "%.3f", edge.lead(at: now.at)))",
                                        "samples": "\(edge.samples.count)",
                                    ])
                            }
                        }
                    }
                    before = now
                    break
                }
                before = now
            }
            if let before { last = before }
            if let before, before.end < end - 0.001 {
                // Not listed in time (an outage, a packager that stopped): no polling every
                // 50 ms while it lasts; waits of 2 s, 4, … up to 30 between probes.
                misses += 1
                try? await Task.sleep(for: .seconds(min(30, 1 << min(misses, 5))))
            } else {
                misses = 0
            }
            if before == nil { try? await Task.sleep(for: .seconds(1)) }
        }
    }

    /// The timeline's clock moved `by` seconds (the edge's lead applied): the core's schedule
    /// is anchored on it again (one jump, playing or still waiting for the first picture); the
    /// segments' arrival times measured so far (``FeasibleLatency``) were on the old clock, and
    /// one measured across the move would be off by it: they start again, two segments from
    /// now, and a target raised for lateness the lead explains comes back to the app's.
    /// `jump` false: the latency controller steers to the new timeline as to any latency
    /// error (by rate beyond its dead band, a jump beyond its threshold); a move under 50 ms
    /// leaves the arrival times as they are.
    func timelineMoved(by moved: Double, segment: Double, jump: Bool = true) {
        if jump {
            logger.info(
                "latency jump",
                metadata: ["error": "\(String(format: "%.3f", moved))", "why": "the timeline follows the live edge"])
            events.send(.latencyJump(error: moved))
        }
        if jump || abs(moved) > 0.05 {
            let change = latencyTarget.withLock { $0.restart(at: Monotonic.now(), after: 2 * segment) }
            Self.report(change, events: events, logger: logger, why: "the timeline follows the live edge")
        }
        if jump { jumpToTarget() }
    }

    /// Whether the manifest's listing tells where the packager's edge is: a DASH SegmentTimeline,
    /// or HLS whose program date-times the packager wrote. Not HLS without them, placed by when
    /// its playlists were answered: its edge is the answers' clock by construction (and a fresh
    /// anchor is up to a segment ahead of it).
    static func listsItsEdge(_ rep: Representation, _ timeline: RepresentationTimeline) -> Bool {
        rep.placedByPlaylist ? rep.datedByPackager : timeline.usesTimeline
    }

    /// Seconds the newest segment of an answer was listed before the manifest makes it
    /// available (its end, less `availabilityTimeOffset`, on the server's clock).
    static func listedAhead(_ answer: (end: Double, at: Double, duration: Double), plans: [TrackPlan]) -> Double? {
        guard let template = plans.first(where: { listsItsEdge($0.representation, $0.timeline) })?.timeline else {
            return nil
        }
        let offset = template.template.availabilityTimeOffset
        let early = offset.isFinite ? offset : answer.duration
        return answer.end - early - answer.at
    }

    /// The newest segment a manifest lists for tracks of `kind`: the last period's first
    /// adaptation set of that kind, its first representation's timeline (nil with number
    /// addressing, which lists nothing).
    static func newestListed(in mpd: MPD, kind: CoreTrackKind, manifestURL: URL) -> SegmentReference? {
        guard let index = mpd.periods.indices.last else { return nil }
        let want: MediaKind = kind == .video ? .video : .audio
        for set in mpd.periods[index].adaptationSets {
            guard let rep = set.representations.first(where: { $0.kind == want }),
                let timeline = try? RepresentationTimeline(
                    mpd: mpd, period: index, adaptationSet: set, representation: rep, manifestURL: manifestURL,
                    liveEdge: nil)
            else { continue }
            return timeline.lastListedSegment
        }
        return nil
    }
}
