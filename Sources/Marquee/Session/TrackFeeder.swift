import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// The chosen representation of one track and the core track it feeds.
struct TrackPlan: Sendable {
    var kind: CoreTrackKind
    /// The period's index in the manifest it was planned from (a reload may drop earlier ones:
    /// ``period(in:)`` finds it again).
    var periodIndex: Int
    var periodID: String?
    var periodStart: Double
    var adaptationSet: AdaptationSet
    var representation: Representation
    var timeline: RepresentationTimeline
    var coreTrack: Int32
    /// The core's audio track fed the same bytes when the representation muxes audio in.
    var muxedAudioTrack: Int32? = nil
    /// Video: the renditions ABR chooses among (the adaptation set's, aligned segments), empty
    /// when there is no choice.
    var renditions: [Representation] = []

    /// Every core track the segments feed.
    var coreTracks: [Int32] { [coreTrack] + (muxedAudioTrack.map { [$0] } ?? []) }

    /// The index of the plan's period in `mpd`: by `Period@id`, else by its start.
    func period(in mpd: MPD) -> Int? {
        if let periodID, let i = mpd.periods.firstIndex(where: { $0.id == periodID }) { return i }
        return mpd.periods.indices.first {
            abs(RepresentationTimeline.periodStart(mpd: mpd, index: $0) - periodStart) < 1e-3
                && (periodID == nil || mpd.periods[$0].id == nil)
        }
    }
    /// The core tracks by kind (a reload reuses them).
    var coreTracksByKind: [(CoreTrackKind, Int32)] {
        [(kind, coreTrack)] + (muxedAudioTrack.map { [(.audio, $0)] } ?? [])
    }
}

/// Fetches one track's segments around the wanted position and pushes them into the core:
/// waits for each live segment's availability on the server clock, streams its body chunk by
/// chunk, retries what can be retried, and jumps forward when it has fallen behind live.
struct TrackFeeder: Sendable {
    /// The plan the feeder began with; ``plan`` is the one in force (a new Period replaces it).
    let initialPlan: TrackPlan
    private let planned = Locked<TrackPlan?>(nil)
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
    let store: SegmentStore?
    /// MPEG-TS: the offset from the stream's PTS to presentation time is still to be measured
    /// (at the first segment pushed after a start or a restart of the tracks).
    let offsetPending = Locked(true)
    /// Adaptive bitrate over ``TrackPlan/renditions`` (nil without a choice).
    let abr: Locked<ABRController>?
    /// The newest manifest (the other renditions' timelines are built from it).
    let latestMPD: Locked<MPD>
    /// Init segments fetched, by representation id.
    private let inits = Locked<[String: ByteBuffer]>([:])
    /// The representation whose init segment the core's track was given last (nil after a
    /// restart: the next segment brings its own).
    private let pushedInit = Locked<String?>(nil)
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
    private let measuredOffset = Locked<Double?>(nil)
    /// Server seconds (since the availability start) when the segment being obtained began to
    /// arrive: its server had it then. The download after that is the link's, ABR's business.
    private let firstByteAt = Locked<Double?>(nil)
    /// Set when the core reported a damaged segment on one of the feeder's tracks: the init
    /// segment is fetched and given again before the next segment (it may be the bad part).
    let initSuspect = Locked(false)

    /// How far ahead of the presented position an on-demand stream is fetched.
    static let readAhead = 30.0

    private var isLive: Bool { plan.timeline.isLive }

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
        var timeline = plan.timeline
        var next: SegmentReference? = timeline.segment(containing: start)
        var lastEnd: Double? = nil
        var misses = 0  // reloads in a row that listed nothing new
        var reloadSince: Double? = nil  // after a wait: only a manifest requested since it
        var pushedAny = false
        // The next segment was looked for before it was there (a reload listed nothing new, or
        // its availability time had not come): when it arrives says how late the server is.
        var awaited = false
        var marked: SegmentReference? = nil  // the discontinuity the core's tracks were told of
        var loadedAt = Monotonic.now()
        // Seconds after a segment's end the server lists it
        // (``SegmentChoice/listingLateness(observed:segmentDuration:)``).
        var listingLate = 0.0
        var missedAt: Double? = nil  // server second of the last reload after a wait that listed nothing new
        // The next segment was listed between the reload that missed it and the one that found
        // it: its arrival is measured from the middle (seconds before the finding reload).
        var listedBefore = 0.0
        while !Task.isCancelled {
            // A manifest that changes (minimumUpdatePeriod) is reloaded that often even while its
            // template computes the next segments: a new period, a period's end, are seen in time.
            if isLive, next != nil, let lastEnd, let mup = latestMPD.withLock({ $0.minimumUpdatePeriod }),
                Monotonic.now() - loadedAt >= max(1, mup)
            {
                loadedAt = Monotonic.now()
                if let fresh = await reloadedTimeline() {
                    timeline = fresh
                    next = fresh.segment(following: lastEnd)
                }
            }
            guard let segment = next else {
                guard isLive else {
                    for track in plan.coreTracks { try? core.endTrack(track) }
                    return true
                }
                // The timeline is exhausted: reload the manifest and look again.
                timeline = await reloadedTimeline(since: reloadSince) ?? timeline
                loadedAt = Monotonic.now()
                reloadSince = nil
                next = lastEnd.map { timeline.segment(following: $0) } ?? timeline.segment(containing: wantedPosition())
                // Nothing fetched yet and the listing ends before the wanted position (a server
                // later than the target, an encoder whose clock runs slow): its newest segment
                // is the live edge; what arrives late raises the target (``FeasibleLatency``).
                if next == nil, lastEnd == nil, isLive {
                    next = SegmentChoice.edgeStart(on: timeline, wanted: wantedPosition(), misses: misses)
                }
                let overdue = SegmentChoice.isOverdue(
                    after: lastEnd, now: serverSeconds(), segmentDuration: SegmentChoice.segmentDuration(timeline))
                if next == nil, isLive, let following = nextPeriod(after: lastEnd ?? wantedPosition(), waited: overdue)
                {
                    // The period is over: on in the next one, from its start (or the wanted position).
                    timeline = following
                    let from = max(following.periodStart, lastEnd ?? wantedPosition())
                    next = following.segment(containing: from + 1e-3) ?? following.segment(following: from)
                    marked = next  // the new stream is begun already
                    pushedAny = false
                }
                if next == nil {
                    // Reload just after the next segment should be listed (``SegmentChoice/listingWait``).
                    let duration = SegmentChoice.segmentDuration(timeline)
                    let expected = lastEnd.flatMap { end in
                        timeline.availabilityStartTime.map {
                            $0.addingTimeInterval(end + duration + listingLate).timeIntervalSince(clock.now())
                        }
                    }
                    let wait = SegmentChoice.listingWait(
                        expectedIn: expected, segmentDuration: duration, misses: misses)
                    if misses > 0 { missedAt = serverSeconds() }  // (the first reload comes at once, before the wait)
                    misses += 1
                    awaited = true
                    try? await Task.sleep(for: .milliseconds(Int(wait * 1000)))
                    reloadSince = Monotonic.now()
                } else {
                    if misses > 0, let found = next, lastEnd != nil, let now = serverSeconds() {
                        // (Less the time the player was not running: its reloads were late, not the listing.)
                        listingLate = SegmentChoice.listingLateness(
                            observed: now - found.end - frozen(from: found.end, to: now, now: now),
                            missed: missedAt.map { $0 - found.end - frozen(from: found.end, to: $0, now: now) },
                            segmentDuration: SegmentChoice.segmentDuration(timeline))
                        listedBefore = missedAt.map { max(0, now - $0 - frozen(from: $0, to: now, now: now)) / 2 } ?? 0
                    }
                    missedAt = nil
                    misses = 0
                }
                continue
            }
            if isLive, let jump = SegmentChoice.catchUp(from: segment, wanted: wantedPosition(), on: timeline) {
                logger.info(
                    "behind live, skipping ahead",
                    metadata: [
                        "track": "\(plan.representation.id)", "from": "\(segment.number)", "to": "\(jump.number)",
                    ])
                next = jump
                awaited = false
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
                await waitUntilAvailable(segment, timeline)
            {
                awaited = true
            }
            let askedAt = serverSeconds()
            if Task.isCancelled { return false }
            if segment.discontinuity, pushedAny, marked?.start != segment.start {
                // An encoder restart or a splice (HLS): the timestamps start afresh. What the
                // core's tracks hold plays to its end; a new stream begins there, placed anew.
                logger.info(
                    "discontinuity", metadata: ["track": "\(plan.representation.id)", "segment": "\(segment.number)"])
                beginStream(ptsOffset: nil)
                marked = segment
            }
            pushedAny = true
            switch await obtain(segment) {
            case .pushed:
                pushedEnd.withLock { $0 = segment.end }
                // Fetched whole as soon as it was there (not streamed while being produced).
                if isLive, awaited, let askedAt, askedAt >= segment.end - 0.05,
                    let arrived = firstByteAt.withLock({ $0 }),
                    let whole = serverSeconds()
                {
                    let available =
                        timeline.availabilityStart(of: segment).flatMap { date in
                            timeline.availabilityStartTime.map { date.timeIntervalSince($0) }
                        } ?? segment.end
                    let from = listedBefore + segment.start
                    onArrival(SegmentArrival(available: available - from, need: arrived - from, inHand: whole - from))
                }
                listedBefore = 0
            case .skipped:
                break
            case .abandoned:
                continue  // the same segment again, in the rendition the new estimate allows
            case .cancelled:
                return false
            }
            lastEnd = segment.end
            next = timeline.segment(after: segment)
            awaited = false
            firstByteAt.withLock { $0 = nil }  // (kept across an abandoned download: the first try's)
        }
        return false
    }

    /// Sleeps until the server makes `segment` available (live; on its clock).
    /// Returns whether it had to wait.
    @discardableResult
    private func waitUntilAvailable(_ segment: SegmentReference, _ timeline: RepresentationTimeline) async -> Bool {
        guard let available = timeline.availabilityStart(of: segment) else { return false }
        let wait = available.timeIntervalSince(clock.now())
        if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 5)) }
        return wait > 0
    }

    /// Seconds of `from`…`to` (server seconds since the availability start, the present being
    /// `now`) the player itself was not running (``Suspensions``).
    private func frozen(from: Double, to: Double, now: Double) -> Double {
        let mono = Monotonic.now()
        return suspensions.withLock { $0.frozen(from: mono - (now - from), to: mono - (now - to), now: mono) }
    }

    /// Server seconds since the availability start time (live), nil without one.
    private func serverSeconds() -> Double? {
        plan.timeline.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
    }

    /// Pushes `segment` from the store when it is kept there, else fetches it in the rendition
    /// ABR chooses.
    private func obtain(_ segment: SegmentReference) async -> Outcome {
        if initSuspect.withLock({ s in
            defer { s = false }
            return s
        }) {
            inits.withLock { $0.removeAll() }
            pushedInit.withLock { $0 = nil }
        }
        guard let kept = store?.entry(track: plan.coreTrack, time: segment.time) else {
            let (rep, repSegment) = rendition(for: segment)
            if let key = repSegment.key {
                return await fetchEncrypted(segment, rep: rep, url: repSegment.url, range: repSegment.range, key: key)
            }
            return await fetch(segment, rep: rep, url: repSegment.url, range: repSegment.range)
        }
        let rep = plan.renditions.first { $0.id == kept.representation } ?? plan.representation
        guard await pushInit(rep) else { return .cancelled }
        return pushWhole(kept.bytes, of: segment, rep: rep) ? .pushed : .cancelled
    }

    /// Pushes a whole segment that is in memory (from the store, or decrypted): a transport
    /// stream's offset first when it is pending, then its in-band events. False when the core
    /// is closed.
    private func pushWhole(_ bytes: ByteBuffer, of segment: SegmentReference, rep: Representation) -> Bool {
        if rep.measuresTimestamps, offsetPending.withLock({ $0 }) { measureOffset(bytes, segment: segment, rep: rep) }
        do {
            try push(bytes)
            try endSegment()
        } catch { return false }
        var scanner = EventMessageScanner()
        let boxes = bytes.withUnsafeReadableBytes { scanner.feed($0) }
        if !boxes.isEmpty { inbandEvents(boxes, segment: segment) }
        reportRefused(scanner)
        return true
    }

    /// Keeps the live edge in the store while the presentation is behind it (a user delay, a
    /// pause): every segment at the latency target is fetched whole, as it becomes available.
    private func collect() async {
        guard let store else { return }
        var timeline = plan.timeline
        var next: SegmentReference?
        while !Task.isCancelled {
            let version = shift.version
            guard shift.delay > 0 || shift.paused else {
                next = nil  // the presenter fetches (and keeps) the live edge itself
                await shift.changed(from: version)
                continue
            }
            let live = livePosition()
            if next == nil || next!.end < live - (next!.end - next!.start) { next = timeline.segment(containing: live) }
            guard let segment = next else {
                timeline = await reloadedTimeline() ?? timeline
                try? await Task.sleep(for: .milliseconds(500))
                continue
            }
            if store.entry(track: plan.coreTrack, time: segment.time) == nil {
                await waitUntilAvailable(segment, timeline)
                if Task.isCancelled { return }
                // In the rendition playing last (a choice made for the live edge holds).
                let rep = plan.renditions.first { $0.id == active.withLock { $0 } } ?? plan.representation
                let other =
                    rep.id == plan.representation.id
                    ? nil : self.timeline(for: rep)?.segment(containing: segment.start + 1e-3)
                let source = other ?? segment
                do {
                    var bytes = try await fetcher.get(
                        source.url, timeout: .seconds(max(4, (segment.end - segment.start) * 3)), range: source.range
                    ).body
                    if let key = source.key {  // kept in the clear
                        guard
                            let clear = try? CoreHandle.decryptAES128(
                                Array(bytes.readableBytesView), key: try await loader.key(key.url), iv: key.iv)
                        else {
                            next = timeline.segment(after: segment)
                            continue
                        }
                        bytes = ByteBuffer(bytes: clear)
                    }
                    store.put(
                        track: plan.coreTrack, time: segment.time, start: segment.start, end: segment.end, bytes: bytes,
                        representation: other == nil ? plan.representation.id : rep.id)
                } catch {
                    if error.code == .cancelled { return }
                    logger.debug(
                        "collector: segment missed",
                        metadata: ["url": "\(Redact.url(source.url))", "error": "\(error)"])
                }
            }
            next = timeline.segment(after: segment)
        }
    }

    private func waitForReadAhead(_ segment: SegmentReference) async {
        while !Task.isCancelled, let pos = position(), segment.start - pos > Self.readAhead {
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// The timeline of a manifest requested at or after monotonic time `since` (default: in the
    /// last 0.1 s).
    private func reloadedTimeline(since: Double? = nil) async -> RepresentationTimeline? {
        let (mpd, error) = await manifest.refreshed(requestedSince: since ?? Monotonic.now() - 0.1)
        if let error { events.send(.error(error, fatal: false)) }
        if let mpd {
            onEvents(nil, mpd)  // its EventStreams (repeats are ignored)
            latestMPD.withLock { $0 = mpd }
        }
        let plan = self.plan
        guard let mpd, let index = plan.period(in: mpd) else { return nil }
        for set in mpd.periods[index].adaptationSets {
            guard let rep = set.representations.first(where: { $0.id == plan.representation.id }) else { continue }
            let edge = mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
            return try? RepresentationTimeline(
                mpd: mpd, period: index, adaptationSet: set, representation: rep, manifestURL: manifest.url,
                liveEdge: edge)
        }
        return nil
    }

    /// The next period's timeline when the plan's period ends at or before `time` (or `waited`:
    /// what should follow `time` in it is overdue) and the newest manifest lists the period
    /// after it (a new Period: an encoder restart, a stitched ad): the
    /// plan moves there (the adaptation set of the same kind and language, the representation
    /// of the same id or nearest bandwidth) and a new stream begins in the core's tracks, placed
    /// by the new period's presentationTimeOffset. Nil while there is none.
    private func nextPeriod(after time: Double, waited: Bool) -> RepresentationTimeline? {
        let mpd = latestMPD.withLock { $0 }
        let plan = self.plan
        guard let index = plan.period(in: mpd), index + 1 < mpd.periods.count else { return nil }
        let start = RepresentationTimeline.periodStart(mpd: mpd, index: index + 1)
        // A segment beginning before the period's end is the period's (an audio segment may
        // run past it): the period is over once it is in, or when what follows is overdue (an
        // encoder that stopped mid-segment never completes it).
        guard start <= time + 0.001 || (waited && start <= time + 2 * SegmentChoice.segmentDuration(plan.timeline))
        else { return nil }
        let want = plan.kind == .video ? MediaKind.video : .audio
        let sets = mpd.periods[index + 1].adaptationSets.filter { set in
            set.representations.contains { $0.kind == want && $0.segmentTemplate?.media != nil }
        }
        guard let set = sets.first(where: { $0.lang == plan.adaptationSet.lang }) ?? sets.first else { return nil }
        let reps = set.representations.filter { $0.kind == want && $0.segmentTemplate?.media != nil }
        let playing = plan.renditions.first { $0.id == active.withLock { $0 } } ?? plan.representation
        guard
            let rep = reps.first(where: { $0.id == playing.id })
                ?? reps.min(by: { abs($0.bandwidth - playing.bandwidth) < abs($1.bandwidth - playing.bandwidth) })
        else { return nil }
        let edge = mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
        guard
            let timeline = try? RepresentationTimeline(
                mpd: mpd, period: index + 1, adaptationSet: set, representation: rep, manifestURL: manifest.url,
                liveEdge: edge)
        else {
            return nil
        }
        var next = plan
        next.periodIndex = index + 1
        next.periodID = mpd.periods[index + 1].id
        next.periodStart = start
        next.adaptationSet = set
        next.representation = rep
        next.timeline = timeline
        next.renditions = plan.renditions.isEmpty ? [] : reps
        logger.notice(
            "new period",
            metadata: ["track": "\(rep.id)", "period": "\(next.periodID ?? String(index + 1))", "start": "\(start)"])
        if let abr, Set(abr.withLock { $0.renditions.map(\.id) }) != Set(reps.map(\.id)), reps.count > 1 {
            abr.withLock { old in
                var fresh = ABRController(
                    renditions: reps.map {
                        ABRController.Rendition(
                            id: $0.id, bandwidth: $0.bandwidth, height: $0.height, frameRate: $0.frameRate)
                    }, options: old.options)
                fresh.pinned = old.pinned
                old = fresh
            }
        }
        inits.withLock { $0.removeAll() }  // the same ids may name other init segments there
        loader.resetLocations(count: timeline.baseURLs.count)
        planned.withLock { $0 = next }
        if rep.isTransportStream != plan.representation.isTransportStream {
            restartTracks()  // another container: the tracks start over
            for track in next.coreTracks { try? core.setTrackContainer(track, transportStream: rep.isTransportStream) }
            if !rep.measuresTimestamps {
                for track in next.coreTracks { try? core.setTrackOffset(track, ptsOffset: timeline.ptsOffset) }
            }
        } else {
            beginStream(ptsOffset: rep.measuresTimestamps ? nil : timeline.ptsOffset)
        }
        return timeline
    }

    // MARK: fetching

    /// `rep`'s init segment, fetched once (retried until it comes or the task ends:
    /// ``SegmentLoader/initSegment(_:timeline:onError:)``); empty for a transport stream.
    private func initSegment(_ rep: Representation) async -> ByteBuffer? {
        if rep.isTransportStream { return ByteBuffer() }  // no init segment
        if let cached = inits.withLock({ $0[rep.id] }) { return cached }
        let repTimeline = timeline(for: rep)
        guard let url = repTimeline?.initializationURL else {
            events.send(
                .error(PlayerError(.manifest, "representation \(rep.id) has no initialization segment"), fatal: false))
            return nil
        }
        let events = self.events
        let loader = self.loader
        let fetched = await CMCDSession.$object.withValue(CMCDSession.Object(type: "i", bitrate: rep.bandwidth)) {
            await loader.initSegment(
                url, range: repTimeline?.initializationRange, timeline: repTimeline,
                onError: { events.send(.error(PlayerError($0), fatal: false)) })
        }
        guard let body = fetched else {
            return nil
        }
        inits.withLock { $0[rep.id] = body }
        return body
    }

    /// Gives the core's track `rep`'s init segment unless it has it already (a rendition
    /// switch: the core starts a new demuxer session there, without a gap), and reports a
    /// change of the active rendition. False when cancelled or the core is closed.
    private func pushInit(_ rep: Representation) async -> Bool {
        guard pushedInit.withLock({ $0 }) != rep.id else { return true }
        guard let bytes = await initSegment(rep) else { return false }
        do { try push(bytes, init: true) } catch { return false }
        pushedInit.withLock { $0 = rep.id }
        let previous = active.withLock { a in
            defer { a = rep.id }
            return a
        }
        if previous != rep.id {
            let before = plan.renditions.first { $0.id == previous }
            if let before, rep.bandwidth > before.bandwidth, let estimate = abr?.withLock({ $0.estimate }) {
                events.send(.bandwidthTest(bitsPerSecond: estimate, quality: Quality(rep)))
            }
            events.send(.activeQualityChanged(Quality(rep)))
            logger.info("rendition", metadata: ["id": "\(rep.id)", "bandwidth": "\(rep.bandwidth)"])
        }
        return true
    }

    /// The rendition ABR wants for `segment` (a segment of the plan's timeline) and that
    /// rendition's segment covering the same time.
    private func rendition(for segment: SegmentReference) -> (Representation, SegmentReference) {
        guard let abr, plan.renditions.count > 1 else { return (plan.representation, segment) }
        let buffer = max(0, (pushedEnd.withLock { $0 } ?? segment.start) - (position() ?? segment.start))
        let choice = abr.withLock {
            $0.choose(buffer: buffer, segmentDuration: isLive ? segment.end - segment.start : nil)
        }
        guard choice.id != plan.representation.id else { return (plan.representation, segment) }
        guard let rep = plan.renditions.first(where: { $0.id == choice.id }),
            let other = timeline(for: rep)?.segment(containing: segment.start + 1e-3)
        else { return (plan.representation, segment) }
        return (rep, other)
    }

    /// `rep`'s timeline in the newest manifest.
    private func timeline(for rep: Representation) -> RepresentationTimeline? {
        if rep.id == plan.representation.id, latestMPD.withLock({ $0.periods.isEmpty }) { return plan.timeline }
        let mpd = latestMPD.withLock { $0 }
        let plan = self.plan
        guard let index = plan.period(in: mpd) else { return rep.id == plan.representation.id ? plan.timeline : nil }
        for set in mpd.periods[index].adaptationSets {
            guard let r = set.representations.first(where: { $0.id == rep.id }) else { continue }
            let edge = mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
            return try? RepresentationTimeline(
                mpd: mpd, period: index, adaptationSet: set, representation: r, manifestURL: manifest.url,
                liveEdge: edge)
        }
        return nil
    }

    private enum Outcome { case pushed, skipped, abandoned, cancelled }

    /// What the loader asks while it loads `segment` as `rep`: the init segment given first,
    /// the buffer, whether it is late, when its first byte came, ABR's abandonment rule.
    private func loadContext(_ segment: SegmentReference, rep: Representation) -> SegmentLoadContext {
        let feeder = self
        let prepare: @Sendable () async -> Bool = { await feeder.pushInit(rep) }
        let buffer: @Sendable () -> (ahead: Double?, beforeSegment: Double) = {
            let pushed = feeder.pushedEnd.withLock { $0 } ?? segment.start
            return (feeder.bufferAhead(from: segment.start), max(0, pushed - (feeder.position() ?? segment.start)))
        }
        let isLate: @Sendable () -> Bool = { segment.end < feeder.wantedPosition() }
        let firstByte: @Sendable () -> Void = {
            guard feeder.isLive else { return }
            let now = feeder.serverSeconds()
            feeder.firstByteAt.withLock { $0 = $0 ?? now }
        }
        var shouldAbandon: (@Sendable (Int, Int, Double, Double) -> Bool)?
        if let abr {
            shouldAbandon = { bytes, total, elapsed, buffer in
                abr.withLock {
                    $0.shouldAbandon(bytes: bytes, of: total, elapsed: elapsed, buffer: buffer)
                        && $0.renditions.first?.id != rep.id
                }
            }
        }
        return SegmentLoadContext(
            prepare: prepare, buffer: buffer, isLate: isLate, firstByte: firstByte, shouldAbandon: shouldAbandon)
    }

    /// What CMCD says of a request for `segment` as `rep`: its type, bitrate, duration and the
    /// buffer ahead of it.
    private func cmcdObject(_ segment: SegmentReference, rep: Representation) -> CMCDSession.Object {
        let type: String
        switch rep.kind {
        case .video: type = rep.isTransportStream ? "av" : "v"
        case .audio: type = "a"
        case .text: type = "c"
        default: type = "o"
        }
        return CMCDSession.Object(
            type: type, bitrate: rep.bandwidth, duration: segment.end - segment.start,
            buffer: bufferAhead(from: segment.start))
    }

    /// The request for `segment` (of the plan's timeline) as `rep` from `url` (its bytes `range`).
    private func request(_ segment: SegmentReference, rep: Representation, url: URL, range: ByteRange?)
        -> SegmentRequest
    {
        let duration = segment.end - segment.start
        // Sent as it is produced (low latency): its rate says little about the link.
        let paced =
            isLive
            && (plan.timeline.availabilityStartTime.map { $0.addingTimeInterval(segment.end) > clock.now() } ?? false)
        return SegmentRequest(
            url: url, range: range, timeline: timeline(for: rep), duration: duration,
            expectedBytes: rep.bandwidth * Int(duration * 1000) / 8000,
            transportStream: rep.isTransportStream, live: isLive, paced: paced)
    }

    /// An encrypted segment (HLS AES-128): fetched whole with its key, decrypted by the core,
    /// then pushed like any other. A key that cannot be fetched or does not decrypt the
    /// segment is reported and the segment skipped.
    private func fetchEncrypted(
        _ segment: SegmentReference, rep: Representation, url: URL, range: ByteRange?, key: SegmentKey
    ) async -> Outcome {
        let (outcome, clear) = await CMCDSession.$object.withValue(cmcdObject(segment, rep: rep)) {
            await loader.loadEncrypted(
                request(segment, rep: rep, url: url, range: range), key: key, context: loadContext(segment, rep: rep),
                decrypt: { try CoreHandle.decryptAES128($0, key: $1, iv: key.iv) })
        }
        switch outcome {
        case .delivered(let bytes, let seconds):
            guard let clear else { return .cancelled }
            abr?.withLock { $0.downloaded(bytes: bytes, seconds: seconds, weight: segment.end - segment.start) }
            guard pushWhole(clear, of: segment, rep: rep) else { return .cancelled }
            store?.put(
                track: plan.coreTrack, time: segment.time, start: segment.start, end: segment.end, bytes: clear,
                representation: rep.id)
            return .pushed
        default:
            return settle(outcome)
        }
    }

    /// Fetches `segment` (of the plan's timeline) as `rep` from `url` into the core
    /// (``SegmentLoader/load(_:into:context:)``): what it hands on goes through a
    /// ``SegmentSink``; the download is measured for ABR and the segment kept for the delay.
    private func fetch(_ segment: SegmentReference, rep: Representation, url: URL, range: ByteRange?) async -> Outcome {
        let request = request(segment, rep: rep, url: url, range: range)
        var sink = SegmentSink(feeder: self, segment: segment, rep: rep, url: url)
        let context = loadContext(segment, rep: rep)
        let outcome = await CMCDSession.$object.withValue(cmcdObject(segment, rep: rep)) {
            await loader.load(request, into: &sink, context: context)
        }
        switch outcome {
        case .delivered(let bytes, let seconds):
            guard sink.finish() else { return .cancelled }
            abr?.withLock {
                $0.downloaded(bytes: bytes, seconds: seconds, paced: request.paced, weight: request.duration)
            }
            store?.put(
                track: plan.coreTrack, time: segment.time, start: segment.start, end: segment.end, bytes: sink.whole,
                representation: rep.id)
            return .pushed
        case .abandoned(let bytes, let seconds):
            // What came so far is the link's speed now.
            abr?.withLock { $0.downloaded(bytes: bytes, seconds: seconds, weight: request.duration) }
            return .abandoned
        default:
            return settle(outcome)
        }
    }

    /// A load that ended without a segment: reported (a partial low-latency segment in the core
    /// is ended there: it decodes what is whole and skips a box cut short).
    private func settle(_ outcome: SegmentLoadOutcome) -> Outcome {
        switch outcome {
        case .skipped(let error, let partial):
            if partial { try? endSegment() }
            events.send(.error(PlayerError(error), fatal: false))
            return .skipped
        case .unusable(let why):
            events.send(.error(PlayerError(.media, why), fatal: false))
            return .skipped
        case .abandoned: return .abandoned
        case .delivered, .cancelled: return .cancelled
        }
    }

    /// Where a segment's bytes go as they are handed on: the core's tracks (a transport
    /// stream's first bytes held until its offset is measured from its first PTS), the media
    /// clock's drift sample, the in-band event scanner and the copy kept for the store.
    private struct SegmentSink: SegmentDeliverySink {
        let feeder: TrackFeeder
        let segment: SegmentReference
        let rep: Representation
        let url: URL
        /// MPEG-TS whose offset is still to be measured: the first chunks wait until the first
        /// PTS is in them (the offset must be set before the core decodes a frame).
        private var held: ByteBuffer?
        /// Placed already: its first timestamp against its date (a drifting media clock).
        private var unsampled: ByteBuffer?
        private var scanner = EventMessageScanner()
        /// Whether any byte reached the core.
        private(set) var hasDelivered = false
        /// The whole segment, for the store (empty without one).
        private(set) var whole = ByteBuffer()

        init(feeder: TrackFeeder, segment: SegmentReference, rep: Representation, url: URL) {
            (self.feeder, self.segment, self.rep, self.url) = (feeder, segment, rep, url)
            startOver()
        }

        mutating func startOver() {
            held = rep.measuresTimestamps && feeder.offsetPending.withLock({ $0 }) ? ByteBuffer() : nil
            unsampled =
                held == nil && feeder.drift != nil && rep.datedByPackager && rep.measuresTimestamps ? ByteBuffer() : nil
            scanner = EventMessageScanner()
            whole = ByteBuffer()
        }

        /// `probe` with `bytes` after it (the first bytes taken as they are: no copy).
        private static func appending(_ bytes: ByteBuffer, to probe: ByteBuffer) -> ByteBuffer {
            guard probe.readableBytes > 0 else { return bytes }
            var joined = probe
            var copy = bytes
            joined.writeBuffer(&copy)
            return joined
        }

        /// Hands bytes of the segment on, in order.
        mutating func deliver(_ bytes: ByteBuffer) throws(FetchError) {
            var out = bytes
            if let pending = held {
                let waiting = Self.appending(bytes, to: pending)
                guard
                    feeder.measureOffset(waiting, segment: segment, rep: rep)
                        || waiting.readableBytes >= TrackFeeder.offsetProbeBytes
                else {
                    held = waiting
                    return
                }
                held = nil
                out = waiting
            }
            if let sampled = unsampled {
                let probe = Self.appending(out, to: sampled)
                unsampled =
                    feeder.sampleDrift(probe, segment: segment, rep: rep)
                        || probe.readableBytes >= TrackFeeder.offsetProbeBytes ? nil : probe
            }
            do { try feeder.push(out) } catch {
                throw FetchError(.cancelled, url: url.absoluteString, message: "core closed")
            }
            hasDelivered = true
            if feeder.store != nil {
                var copy = bytes
                whole.writeBuffer(&copy)
            }
            let boxes = bytes.withUnsafeReadableBytes { scanner.feed($0) }
            if !boxes.isEmpty { feeder.inbandEvents(boxes, segment: segment) }
        }

        /// The segment is all in: what is still held (a short segment without a PTS) goes to
        /// the core, which is told the segment ended. False when the core is closed.
        mutating func finish() -> Bool {
            if let waiting = held, waiting.readableBytes > 0 {
                do { try feeder.push(waiting) } catch { return false }
            }
            do { try feeder.endSegment() } catch { return false }
            feeder.reportRefused(scanner)
            return true
        }
    }

    /// An error event when `scanner` skipped `emsg` boxes (too many or too big in one segment).
    fileprivate func reportRefused(_ scanner: EventMessageScanner) {
        guard scanner.refused > 0 else { return }
        let why = """
            \(scanner.refused) emsg boxes skipped in one segment (over \(EventMessageScanner.maxEvents), \
            or over \(EventMessageScanner.maxEventBytes) bytes)
            """
        events.send(.error(PlayerError(ManifestError(.tooLarge, why)), fatal: false))
    }

    /// Places the events of `emsg` boxes found in `segment`; unreadable boxes are reported.
    fileprivate func inbandEvents(_ bodies: [[UInt8]], segment: SegmentReference) {
        var timed: [TimedEvent] = []
        for body in bodies {
            do {
                if let e = try EventMessageBox(body: body).timedEvent(
                    segmentStart: segment.start, ptsOffset: plan.timeline.ptsOffset)
                {
                    timed.append(e)
                }
            } catch {
                events.send(.error(PlayerError(error), fatal: false))
            }
        }
        onEvents(timed, nil)
    }

    fileprivate func push(_ buffer: ByteBuffer, init isInit: Bool = false) throws {
        guard buffer.readableBytes > 0 else { return }
        try buffer.withUnsafeReadableBytes { raw in
            for track in plan.coreTracks {
                if isInit {
                    try core.pushInit(track: track, bytes: raw)
                } else {
                    try core.push(track: track, bytes: raw)
                }
            }
        }
    }

    /// Marks the end of a media segment on the core's tracks: a damaged one is skipped there.
    fileprivate func endSegment() throws {
        for track in plan.coreTracks { try core.endSegment(track: track) }
    }

    /// A new stream begins in the core's tracks (a discontinuity): what they hold plays to its
    /// end, the next segment brings its init segment (fMP4) and is placed at `ptsOffset` (nil:
    /// measured from its first timestamp). When the core cannot take another, the tracks restart.
    private func beginStream(ptsOffset: Double?) {
        do {
            for track in plan.coreTracks { try core.pushDiscontinuity(track, ptsOffset: ptsOffset) }
        } catch {
            logger.warning("discontinuity: the tracks restart", metadata: ["error": "\(error)"])
            restartTracks()
            if let ptsOffset { for track in plan.coreTracks { try? core.setTrackOffset(track, ptsOffset: ptsOffset) } }
            return
        }
        pushedInit.withLock { $0 = nil }
        offsetPending.withLock { $0 = ptsOffset == nil }
    }

    /// Flushes the core's tracks: the next segment pushed brings its init segment (fMP4), and a
    /// transport stream's offset is measured again.
    private func restartTracks() {
        for track in plan.coreTracks { try? core.resetTrack(track) }
        pushedInit.withLock { $0 = nil }
        offsetPending.withLock { $0 = true }
    }

    /// How far into a transport stream segment its first PTS is looked for.
    static let offsetProbeBytes = 256 << 10

    /// Seconds of media pushed ahead of the position presented now (live, before the first
    /// picture: the position wanted); nil before the first picture of an on-demand stream.
    private func bufferAhead(from start: Double) -> Double? {
        guard let presented = position() ?? (isLive ? wantedPosition() : nil) else { return nil }
        return max(0, (pushedEnd.withLock { $0 } ?? start) - presented)
    }

    /// Places the media on the presentation timeline from `bytes`, the start of `segment`: its
    /// first timestamp (MPEG-TS: the first PTS, a video one if any; fMP4: the first `tfdt`) is
    /// presented at the segment's start (its program date-time). Returns false while no
    /// timestamp is in `bytes`.
    @discardableResult
    fileprivate func measureOffset(_ bytes: ByteBuffer, segment: SegmentReference, rep: Representation) -> Bool {
        guard let first = firstTimestamp(bytes, rep: rep) else { return false }
        let pts = first
        let offset = segment.start - first
        for track in plan.coreTracks { try? core.setTrackOffset(track, ptsOffset: offset) }
        offsetPending.withLock { $0 = false }
        measuredOffset.withLock { $0 = offset }
        if let drift, rep.datedByPackager { drift.withLock { $0.rebase(at: segment.start) } }
        logger.debug(
            "media placed by its first timestamp",
            metadata: ["track": "\(plan.representation.id)", "pts": "\(pts)", "offset": "\(offset)"])
        return true
    }

    /// A segment of media already placed: where its first timestamp lands against its date
    /// (``MediaClockDrift``). Returns false while no timestamp is in `bytes`.
    fileprivate func sampleDrift(_ bytes: ByteBuffer, segment: SegmentReference, rep: Representation) -> Bool {
        guard let drift, let offset = measuredOffset.withLock({ $0 }) else { return true }
        guard var first = firstTimestamp(bytes, rep: rep) else { return false }
        if rep.isTransportStream {
            // The 33-bit PTS wraps every 26.5 h: the drift is what is left modulo the wrap.
            let wrap = Double(TransportStreamTimestamps.wrap) / Double(TransportStreamTimestamps.clockRate)
            first += ((segment.start - (first + offset)) / wrap).rounded() * wrap
        }
        drift.withLock { $0.record(position: first + offset, start: segment.start) }
        return true
    }

    /// The first timestamp in `bytes`, the start of a segment of `rep`, in seconds: MPEG-TS,
    /// its first PTS (a video one if any); fMP4, its first `tfdt` in the init segment's
    /// timescale. Nil while none is in `bytes`.
    private func firstTimestamp(_ bytes: ByteBuffer, rep: Representation) -> Double? {
        if rep.isTransportStream {
            return TransportStreamTimestamps.firstPTS(bytes.readableBytesView).map {
                Double($0) / Double(TransportStreamTimestamps.clockRate)
            }
        }
        return inits.withLock { $0[rep.id] }.flatMap {
            FragmentTime.firstDecodeTime(segment: bytes.readableBytesView, initSegment: $0.readableBytesView)
        }
    }
}
