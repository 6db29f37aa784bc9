import Foundation
import Logging
import MarqueeStreaming

/// Live HLS without program date-times: the timeline placed by when the playlists were answered
/// (``HLSLiveAnchor``) is up to a segment later than when the packager published, by however
/// late in the segment cycle the first answer came, so two boxes on one stream would be up to a
/// segment apart. The publication's phase is learned from the answers (``HLSPublicationPhase``)
/// and the timeline is read as the server's clock plus the lead that puts every segment's
/// publication at its anchored end: boxes that learned it present each picture at the same
/// instant, whenever they started.
extension PlaybackSession {
    /// The phase is first applied once its interval is narrower than this (seconds): its middle
    /// at most 10 ms off, two boxes at most 20 ms apart. On a quiet box the interval narrows from
    /// a segment to ``HLSPublicationPhase/medianWithin`` within a few segments; on a busy one (its answers' head
    /// times late by the box's own scheduling) it once took 64 answers, 21 s, with the box up to a
    /// segment off meanwhile (a 0.35 s skip forward when it came): the coarse estimate comes a
    /// probe or two into the narrowing, and the rest refines it.
    static let anchorUsable = 0.020
    /// Once the phase is settled (``HLSPublicationPhase/settled``: its interval was once narrower
    /// than ``HLSPublicationPhase/medianWithin``), one probe every ``anchorProbeEvery`` segments
    /// refines the median publication (``HLSPublicationPhase/median``). A probe answered after
    /// the publication serves the feeders too (they take a copy newer than theirs that lists
    /// their next segment); one answered before it leaves them their own reload 30 ms later:
    /// about 1.5 requests a segment at the edge (measured: 1.5–1.7 a segment over 65 s with the
    /// narrowing; every 2 segments, 1.4, and GStreamer's boxes 2.5–6.6 ms apart, not 0.9–3.8).
    static let anchorProbeEvery = 1
    /// Settled probes are made this far (seconds) before and after the median in turn: answers
    /// all at one instant would only say which side of it the median is, not how far.
    static let anchorProbeDither = 0.001
    /// Probes whose wake-to-answer times are kept (the shortest sets how early the next wakes).
    static let probeTimings = 5
    /// A probe wakes at most this early (seconds): half a slow answer is not its request's time.
    static let maxProbeLead = 0.010
    /// A lead that moved less than this is not applied again (seconds): a re-anchor this small
    /// is trimmed (the sound resampled 0.1–0.2 % onto it, the pictures following), and the
    /// median moves by less from answer to answer once many agree. (3 ms, with boxes each kept
    /// up to 3 ms off their own estimate, left ffmpeg's boxes 5 ms apart.)
    static let anchorStep = 0.001
    /// The same behind a venue proxy that tells its boxes the publication (seconds): their
    /// estimates are one, narrowed together, and a box that kept a lead 3 ms off would be 3 ms
    /// from its neighbours (a re-anchor this small is trimmed: the sound, and the pictures, follow).
    static let sharedAnchorStep = 0.00025

    /// The lead that puts the publication at each segment's anchored end, once `anchor`'s phase
    /// is known within ``anchorUsable`` (its error, and whether a venue proxy told it); nil
    /// before. `answerOffset`: the clock the answers were read on; `clockOffset`: the server's.
    static func learnedLead(_ anchor: HLSLiveAnchor, answerOffset: Double, clockOffset: Double) -> (
        lead: Double, error: Double, shared: Bool
    )? {
        guard let (phase, error) = anchor.phase.estimate(precision: anchorUsable) else { return nil }
        // Timeline = server + lead reads the anchored end at the publication instant: at
        // monotonic `end + phase − answerOffset`, `mono + clockOffset + lead = end`.
        return (answerOffset - clockOffset - phase, error, anchor.phase.isShared)
    }

    /// Whether the timeline is placed by its playlists' answer times (live HLS without dates).
    var placedByAnswers: Bool {
        mpd.isLive && plans.contains { $0.representation.placedByPlaylist && !$0.representation.datedByPackager }
    }

    /// What places the live timeline (nil on demand): the manifest's dates, or the answers and
    /// what was learned of the publication from them.
    var liveAnchor: LiveAnchor? {
        guard mpd.isLive else { return nil }
        if placedByAnswers {
            return learnedEdgeError.withLock { $0 }.map {
                $0.shared ? .shared(error: $0.error) : .learned(error: $0.error)
            }
                ?? .playlistAnswer
        }
        return plans.contains { $0.representation.placedByPlaylist } ? .programDateTime : .availabilityStart
    }

    /// Probes the playlist inside the phase's interval (an answer there halves it: about two
    /// requests a segment, besides the feeders' own reloads, until it is settled), then once
    /// every few segments. The first estimate narrow enough (``anchorUsable``) moves the
    /// timeline by up to a segment, once, by one exact re-anchor of the schedule (a few seconds
    /// after the start: a skip forward, or the picture held, as a join's catch-up is); steering
    /// there by rate would take half a minute, and leave each box within the controller's dead
    /// band of it, boxes 10 ms apart. Later refinements that move the lead by ``anchorStep`` or
    /// more (milliseconds: the interval narrowing, a server clock measured again) re-anchor the
    /// same way, for the same reason: a few milliseconds, no picture skipped, the sound written
    /// on within its lock's tolerance.
    func watchAnchor() async {
        guard syncEnabled, placedByAnswers else { return }
        // (Placed by it from the start when the first answers told it: a venue proxy's.)
        var applied = initialLead
        var settled = false
        // Seconds from a probe's wake to its answer being in hand, the last few: the request
        // goes out and comes back within that, so the wake is set half the shortest of them
        // early, and the answer brackets the instant aimed at (a box whose requests went out
        // 2–3 ms after its wake had every probe answered after the publication: the interval
        // held near 5 ms for 40 s, its high end creeping down by the answers' jitter).
        var answerTimes: [Double] = []
        var probes = 0
        var movedAt = -Double.infinity  // (monotonic) when the timeline was last moved
        var probedEnd: Double?  // the anchored end of the segment the last probe was aimed at
        if initialLead != nil, let told = learnedEdgeError.withLock({ $0 }) {
            events.send(.liveEdgeLearned(moved: 0, error: told.error))
            logger.notice(
                "live edge learned from the playlist's publication before the first picture",
                metadata: ["error": "\(String(format: "%.4f", told.error))", "shared": "\(told.shared)"])
        }
        while !Task.isCancelled {
            guard let (anchor, answerOffset) = await manifest.anchorView(), let nextEnd = anchor.nextEnd,
                let segment = anchor.nextDuration, let interval = anchor.phase.interval,
                let middle = anchor.phase.best  // (the interval's middle, then its median once settled)
            else {
                try? await Task.sleep(for: .seconds(1))
                continue
            }
            if let (lead, error, shared) = Self.learnedLead(
                anchor, answerOffset: answerOffset, clockOffset: clock.offset)
            {
                let estimate = (phase: middle, error: error)
                // (The error said is the estimate's, also when the lead stays where it was.)
                learnedEdgeError.withLock { $0 = (estimate.error, shared) }
                // A refinement waits half a segment after the move before it: moves stacked within
                // milliseconds (the first lead, then the median as the interval narrows on the
                // next answer) each re-anchored the schedule and cut the sound in turn, and one
                // CI run's pictures ended up 100 ms off the moves it announced. Not a whole
                // segment: the answers come a segment apart give or take a millisecond, so a box
                // moved every other segment only: a lone box's refinements came every 4 s on 2 s
                // segments (its error 2.4 ms 22.7 s in, a CI run), and two boxes behind a venue
                // proxy, each following its moving estimate at its own segments, were 1.5–2.3 ms
                // apart by turns.
                let spaced = Monotonic.now() - movedAt >= segment / 2
                if applied.map({ abs($0 - lead) >= (shared ? Self.sharedAnchorStep : Self.anchorStep) && spaced })
                    ?? true
                {
                    let moved = lead - (clock.lead?.at(0) ?? 0)
                    clock.setLead(SharedServerClock.Lead(reference: 0, lead: lead, slope: 0), availabilityStart: 0)
                    events.send(.liveEdgeLearned(moved: moved, error: estimate.error))
                    logger.log(
                        level: applied == nil ? .notice : .debug, "live edge learned from the playlist's publication",
                        metadata: [
                            "moved": "\(String(format: "%.4f", moved))",
                            "error": "\(String(format: "%.4f", estimate.error))",
                            "contradicting": "\(interval.contradicting)", "answers": "\(anchor.phase.bounds.count)",
                            "nextPublished": "\(String(format: "%.4f", nextEnd + estimate.phase))",
                        ])
                    timelineMoved(by: moved, segment: segment, jump: true)
                    applied = lead
                    movedAt = Monotonic.now()
                } else if anchor.phase.settled, !settled {
                    // Settled where it was applied: said, without a move.
                    events.send(.liveEdgeLearned(moved: 0, error: estimate.error))
                    logger.debug(
                        "live edge settled", metadata: ["error": "\(String(format: "%.4f", estimate.error))"])
                }
                settled = settled || anchor.phase.settled
            }
            // The next probe: in the middle of the interval for the next segment (as anchored,
            // on the answers' clock), or, once settled, ``anchorProbeEvery`` segments after the
            // last one's (which, answered just before its publication, left that segment the
            // next: counted from there, the probes came every 2 segments, then 1, 0.67 a segment).
            var probeEnd = nextEnd
            if anchor.phase.settled {
                let unlisted = probedEnd.map { abs($0 - nextEnd) < segment / 2 } ?? false
                probeEnd += Double(Self.anchorProbeEvery - (unlisted ? 0 : 1)) * segment
            }
            probedEnd = probeEnd
            let early = min(Self.maxProbeLead, (answerTimes.min() ?? 0) / 2)
            probes += 1
            let dither = anchor.phase.settled ? (probes % 2 == 0 ? 1 : -1) * Self.anchorProbeDither : 0
            let wake = probeEnd + middle + dither - answerOffset - early
            let wait = wake - Monotonic.now()
            if wait > 0 { try? await Task.sleep(for: .microseconds(Int(wait * 1_000_000))) }
            let woke = Monotonic.now()
            _ = try? await manifest.load()
            if wait > 0 {
                answerTimes.append(Monotonic.now() - woke)
                if answerTimes.count > Self.probeTimings { answerTimes.removeFirst() }
            }
            if wait < 0, await manifest.anchorView()?.anchor.nextEnd == nextEnd {
                // Late, and nothing new since (a freeze, a packager that stopped): a segment's
                // wait before looking again, not a request after another.
                try? await Task.sleep(for: .milliseconds(Int(segment * 1000)))
            }
        }
    }
}
