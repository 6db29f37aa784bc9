import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// Fetches one track's segments around the wanted position and pushes them into the core:
/// waits for each live segment's availability on the server clock, streams its body chunk by
/// chunk, retries what can be retried, and jumps forward when it has fallen behind live.
struct TrackFeeder: Sendable {
    /// The plan the feeder began with; ``plan`` is the one in force (a new Period replaces it).
    let initialPlan: TrackPlan
    let planned = Locked<TrackPlan?>(nil)
    var plan: TrackPlan { planned.withLock { $0 } ?? initialPlan }
    let core: CoreHandle
    let fetcher: HTTPFetcher
    let manifest: ManifestSource
    let clock: SharedServerClock
    /// The session's latency target (it may change while playing).
    let latencyTarget: Locked<LatencyTarget>
    let logger: Logger
    let events: PlayerEvents.Sink
    /// Presentation time at the end of the last segment pushed.
    let pushedEnd = Locked<Double?>(nil)
    /// What the core presents now (for the on-demand read-ahead limit).
    let position: @Sendable () -> Double?
    /// Receives the events found in the media (`emsg`) and each refreshed manifest.
    let onEvents: @Sendable ([TimedEvent]?, MPD?) -> Void
    /// Time-shift: the user delay (s, added to the latency target), the pause flag, and a
    /// counter bumped when the presented position moves (a delay jump, pause, resume): the
    /// feeder then flushes its core track and continues from the new wanted position.
    let shift: TimeShift
    /// Where fetched segments are kept for the delay (live only), nil without one.
    let store: DelayStore?
    /// MPEG-TS: the offset from the stream's PTS to presentation time is still to be measured
    /// (at the first segment pushed after a start or a restart of the tracks).
    let offsetPending = Locked(true)
    /// Adaptive bitrate over ``TrackPlan/renditions`` (nil without a choice).
    let abr: Locked<ABRController>?
    /// The newest manifest (the other renditions' timelines are built from it).
    let latestMPD: Locked<MPD>
    /// Init segments fetched, by representation id.
    let inits = Locked<[String: ByteBuffer]>([:])
    /// The representation whose init segment the core's track was given last (nil after a
    /// restart: the next segment brings its own).
    let pushedInit = Locked<String?>(nil)
    /// The rendition last reported by ``PlayerEvent/activeQualityChanged(_:)``.
    let active: Locked<String>
    /// Fetches the segments, init segments and keys (its alternative locations, the server's
    /// answer times, the keys fetched).
    let loader: SegmentLoader
    /// Hears, for each live segment fetched as soon as it was due, how many seconds after its
    /// presentation start it was available, its first byte came and it was in hand, whole
    /// (``FeasibleLatency``, ``Suspensions``).
    let onArrival: @Sendable (SegmentArrival) -> Void
    /// The media clock's drift from the segments' dates (``MediaClockDrift``), fed by one
    /// feeder of the session (the video one), nil for the others.
    let drift: Locked<MediaClockDrift>?
    /// When the player itself was not running (the session's, ``Suspensions``): how late a
    /// listing came is not learned from the time it was frozen.
    let suspensions: Locked<Suspensions>
    /// The offset last set from a measured timestamp (``measureOffset(_:segment:rep:)``).
    let measuredOffset = Locked<Double?>(nil)
    /// Server seconds (since the availability start) when the segment being obtained began to
    /// arrive: its server had it then. The download after that is the link's, ABR's business.
    let firstByteAt = Locked<Double?>(nil)
    /// Set when the core reported a damaged segment on one of the feeder's tracks: the init
    /// segment is fetched and given again before the next segment (it may be the bad part).
    let initSuspect = Locked(false)

    /// How far ahead of the presented position an on-demand stream is fetched.
    static let readAhead = 30.0
    /// A timeline that moved more than this (seconds) while a feeder waited for a listing is a
    /// new placement, not a lead refined (milliseconds): what was learned of the listing's
    /// lateness is forgotten (``FeedCursor/timelineMoved()``).
    static let timelineMove = 0.05

    var isLive: Bool { plan.timeline.isLive }

    /// The presentation time that should be on screen now (live): the user delay included.
    func wantedPosition() -> Double {
        livePosition() - shift.delay
    }

    /// The presentation time at the latency target, without the user delay (live).
    func livePosition() -> Double {
        guard let ast = plan.timeline.availabilityStartTime else { return 0 }
        return clock.now().timeIntervalSince(ast) - latencyTarget.withLock { $0.current }
    }

    func run(from start: Double) async {
        guard await initSegment(plan.representation) != nil else { return }
        await withTaskGroup(of: Void.self) { group in
            if isLive, store != nil { group.addTask { await collect() } }
            group.addTask { await present(from: start) }
            _ = await group.next()  // presenting is over (on-demand end, cancellation)
            group.cancelAll()
        }
    }

    /// Pushes segments from `start`, starting over from the wanted position whenever the time
    /// shift moves it (the core track is flushed first); idle while paused.
    private func present(from start: Double) async {
        var from = start
        var wasPaused = false
        while !Task.isCancelled {
            let version = shift.version
            let generation = shift.generation
            if shift.paused {
                wasPaused = true
                await shift.changed(from: version)
                continue
            }
            if wasPaused {  // resumed: the delay (live) or the anchor (on demand) is the paused position
                from = shift.anchor ?? wantedPosition()
                wasPaused = false
            }
            let position = from
            let finished = await withTaskGroup(of: Bool.self) { group in
                group.addTask { await feed(from: position) }
                group.addTask {
                    var seen = version
                    while !Task.isCancelled, shift.generation == generation, !shift.paused {
                        await shift.changed(from: seen)
                        seen = shift.version
                    }
                    return false
                }
                let first = await group.next() ?? true
                group.cancelAll()
                return first
            }
            if finished || Task.isCancelled { return }
            // Moved: drop what the core holds and go on from the new position.
            restartTracks()
            pushedEnd.withLock { $0 = nil }
            from = shift.anchor ?? wantedPosition()
            logger.debug("feeder repositioned", metadata: ["track": "\(plan.representation.id)", "from": "\(from)"])
        }
    }

    /// The feeding loop from `start`; returns true when the presentation is over (on-demand end).
    private func feed(from start: Double) async -> Bool {
        // Where feeding is, and what was learned of the listing: changed only by its transitions.
        var cursor = FeedCursor(timeline: plan.timeline, from: start, now: Monotonic.now())
        while !Task.isCancelled {
            if isLive,
                cursor.refreshDue(now: Monotonic.now(), minimumUpdatePeriod: latestMPD.withLock(\.minimumUpdatePeriod))
            {
                let now = Monotonic.now()
                cursor.refreshed(await reloadedTimeline(), now: now)
            }
            guard let segment = cursor.next else {
                guard isLive else {
                    for track in plan.coreTracks { try? core.endTrack(track) }
                    return true
                }
                // The timeline is exhausted: reload the manifest and look again, unless a copy
                // newer than the cursor's (a live HLS anchor's probe, the other track's reload)
                // lists what comes next already (a box on ffmpeg's 2 s HLS made 1.5 playlist
                // requests a segment at its edge: the probe, then the feeder's own 30 ms later).
                let held = await heldTimeline(since: cursor.loadedAt)
                let fresh =
                    if let held, cursor.lists(on: held, wanted: wantedPosition()) {
                        held
                    } else {
                        await reloadedTimeline(since: cursor.reloadSince)
                    }
                cursor.reloaded(fresh, now: Monotonic.now(), wanted: wantedPosition(), isLive: isLive)
                // Nothing fetched yet and the listing ends before the wanted position (a server
                // later than the target, an encoder whose clock runs slow): its newest segment
                // is the live edge; what arrives late raises the target (``FeasibleLatency``).
                let overdue = cursor.overdue(serverNow: serverSeconds())
                if cursor.next == nil,
                    let following = nextPeriod(after: cursor.lastEnd ?? wantedPosition(), waited: overdue)
                {
                    cursor.enter(following, wanted: wantedPosition())  // (the new stream is begun already)
                }
                if cursor.next == nil {
                    // Reload just after the next segment should be listed (``SegmentChoice/listingWait``).
                    let wait = cursor.missed(
                        expectedIn: cursor.expectedListing(now: clock.now()), serverNow: serverSeconds())
                    let missed = Monotonic.now()
                    let placed = clock.timelineOffset(atMonotonic: missed)
                    try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
                    if abs(clock.timelineOffset(atMonotonic: missed) - placed) > Self.timelineMove {
                        // The timeline moved meanwhile (live HLS's edge learned from the
                        // publication, up to a segment): when the listing came, on the old one,
                        // says nothing of the new (a box learned 1.25 s of lateness that way, and
                        // reloaded a second after each publication for 40 s).
                        cursor.timelineMoved()
                    }
                    cursor.waited(now: Monotonic.now())
                } else {
                    // (Less the time the player was not running: its reloads were late, not the listing.)
                    let now = serverSeconds()
                    cursor.found(serverNow: now) { from, to in frozen(from: from, to: to, now: now ?? to) }
                }
                continue
            }
            if isLive, let jump = SegmentChoice.catchUp(from: segment, wanted: wantedPosition(), on: cursor.timeline) {
                logger.info(
                    "behind live, skipping ahead",
                    metadata: [
                        "track": "\(plan.representation.id)", "from": "\(segment.number)", "to": "\(jump.number)",
                    ])
                cursor.catchUp(to: jump)
                firstByteAt.withLock { $0 = nil }
                continue
            }
            if !isLive { await waitForReadAhead(segment) }
            if isLive {
                // Delayed: from the store, no further ahead of the wanted position than a live
                // edge would be.
                let lead = SegmentChoice.storeLead(segmentDuration: segment.end - segment.start)
                while !Task.isCancelled, segment.start > wantedPosition() + lead {
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            if isLive, store?.entry(track: plan.coreTrack, time: segment.time) == nil,
                await waitUntilAvailable(segment, cursor.timeline)
            {
                cursor.awaitedAvailability()
            }
            let askedAt = serverSeconds()
            if Task.isCancelled { return false }
            if cursor.beginsStream(segment) {
                // An encoder restart or a splice (HLS): the timestamps start afresh. What the
                // core's tracks hold plays to its end; a new stream begins there, placed anew.
                logger.info(
                    "discontinuity", metadata: ["track": "\(plan.representation.id)", "segment": "\(segment.number)"])
                beginStream(ptsOffset: nil)
            }
            cursor.feeding()
            switch await obtain(segment) {
            case .pushed:
                pushedEnd.withLock { $0 = segment.end }
                // Fetched whole as soon as it was there (not streamed while being produced).
                if isLive, cursor.awaited, let askedAt, askedAt >= segment.end - 0.05,
                    let arrived = firstByteAt.withLock({ $0 }),
                    let whole = serverSeconds()
                {
                    let timeline = cursor.timeline
                    let available =
                        timeline.availabilityStart(of: segment).flatMap { date in
                            timeline.availabilityStartTime.map { date.timeIntervalSince($0) }
                        } ?? segment.end
                    let from = cursor.listedBefore + segment.start
                    onArrival(SegmentArrival(available: available - from, need: arrived - from, inHand: whole - from))
                }
                cursor.measured()
            case .skipped:
                break
            case .abandoned:
                continue  // the same segment again, in the rendition the new estimate allows
            case .cancelled:
                return false
            }
            cursor.fed(segment)
            firstByteAt.withLock { $0 = nil }  // (kept across an abandoned download: the first try's)
        }
        return false
    }

    /// Seconds of `from`…`to` (server seconds since the availability start, the present being
    /// `now`) the player itself was not running (``Suspensions``).
    private func frozen(from: Double, to: Double, now: Double) -> Double {
        let mono = Monotonic.now()
        return suspensions.withLock { $0.frozen(from: mono - (now - from), to: mono - (now - to), now: mono) }
    }

    /// Server seconds since the availability start time (live), nil without one.
    func serverSeconds() -> Double? {
        plan.timeline.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
    }
}
