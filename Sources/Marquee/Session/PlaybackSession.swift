import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// One playing source: its manifest, the server clock, the core and a feeder per track.
final class PlaybackSession: Sendable {
    let source: URL
    let mpd: MPD
    /// The server clock, re-measured while playing live.
    let clock: SharedServerClock
    let manifest: ManifestSource
    private let fetcher: HTTPFetcher
    private let resyncInterval: Double
    let core: CoreHandle
    let feeders: [TrackFeeder]
    let plans: [TrackPlan]
    /// Seconds behind live the session holds (changed by ``setTargetLatency(_:)``).
    /// The latency target in use: the app's (``requestedLatency``), raised while the stream's
    /// segments arrive too late for it (``FeasibleLatency``).
    let targetLatency: SharedValue<Double>
    /// The latency target the app asked for (options, manifest, ``setTargetLatency(_:)``).
    let requestedLatency: SharedValue<Double>
    /// When segments really arrive, against their presentation times.
    let feasible = SharedValue(FeasibleLatency())
    /// Arrival times count from this monotonic second (``timelineMoved(by:segment:)``).
    let arrivalsFrom = SharedValue(-Double.infinity)
    /// The media clock's drift from the segments' dates: presented positions are read through
    /// it (latency, buffer, the feeders' position) and the controller steers around its rate.
    let drift = SharedValue(MediaClockDrift())
    /// Seconds the target was raised by since the last control step (a large raise is a jump:
    /// the picture held once, rather than late pictures dropped while the rate catches up).
    let raisedBy = SharedValue(0.0)
    /// Whether the latency controller steers (live, target > 0).
    let syncEnabled: Bool
    /// Where the stall supervisor hears of this session (progress, a packager restart, the end).
    let reports: AsyncStream<SessionReport>.Continuation?
    private let controller: Locked<LatencyController>
    /// Presentation time the session starts at.
    let startPosition: Double
    let startMono: Double
    let logger: Logger
    let events: PlayerEvents.Sink
    private let monitor = Locked(Monitor())
    /// Mute music, ads: fed with the manifest's and the media's events, ticked while playing.
    let mixer: MixDirector?
    /// The user delay and pause (live), and the store of segments that makes them possible.
    let shift = TimeShift()
    let store: SegmentStore?
    let maxDelay: Double
    private let pause = Locked<(mono: Double, position: Double)?>(nil)

    struct Monitor {
        var state: PlaybackState = .buffering
        var fps: Double = 0
        var samples: [(mono: Double, frames: Int)] = []
        var firstFrameReported = false
        var fatal: PlayerError?
        var lastTimeUpdate = -Double.infinity
    }

    /// Loads `source`, measures the server clock, picks the renditions, creates the core
    /// tracks and sets the presentation schedule. Nothing is fetched beyond the manifest and
    /// the clock yet.
    init(
        source: URL, options: PlayerOptions, core: CoreHandle, fetcher: HTTPFetcher, startMono: Double, logger: Logger,
        events: PlayerEvents.Sink, reuse: [CoreTrackKind: Int32] = [:], mixer: MixDirector? = nil, startPolicy: FetchPolicy = .manifest,
        reports: AsyncStream<SessionReport>.Continuation? = nil
    ) async throws(PlayerError) {
        let manifest = ManifestSource(url: source, fetcher: fetcher, policy: startPolicy, audioLanguage: options.audioLanguage)
        let mpd = try await manifest.load()
        let clock =
            mpd.isLive
            ? await ClockSync(fetcher: fetcher, logger: logger).synchronize(timings: mpd.utcTimings, fallback: await manifest.lastResult)
            : ServerClock.local()
        let (target, syncOptions) = Self.syncSettings(options: options, mpd: mpd)
        let start: Double
        if mpd.isLive, let ast = mpd.availabilityStartTime {
            start = clock.now().timeIntervalSince(ast) - target
        } else {
            start = 0
        }
        let periodIndex = Self.period(of: mpd, containing: start)
        let plans = try Self.plan(
            mpd: mpd, period: periodIndex, manifestURL: source, core: core, now: mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) },
            reuse: reuse, audioLanguage: options.audioLanguage)
        do {
            try core.setWallOffset(clock.offset)
            let mono = Monotonic.now()
            if mpd.isLive, let ast = mpd.availabilityStartTime {
                // Presentation time p is due at server time AST + p + targetLatency.
                try core.setTimeline(monoAnchor: mono, mediaAnchor: mono + clock.offset - ast.timeIntervalSince1970 - target)  // (no edge lead yet)
            } else {
                let first = plans.compactMap { $0.timeline.segment(containing: 0)?.start }.min() ?? 0
                try core.setTimeline(monoAnchor: mono + 0.25, mediaAnchor: first)
            }
        } catch {
            throw PlayerError(.output, error.message, coreCode: error.code)
        }
        self.source = source
        self.mpd = mpd
        let sharedClock = SharedServerClock(clock)
        self.clock = sharedClock
        self.manifest = manifest
        self.fetcher = fetcher
        self.resyncInterval = options.sync.resyncInterval
        self.core = core
        self.plans = plans
        let shared = SharedValue(target)
        self.targetLatency = shared
        self.requestedLatency = SharedValue(target)
        self.syncEnabled = mpd.isLive && options.targetLatency > 0
        self.controller = Locked(LatencyController(options: syncOptions))
        self.startPosition = start
        self.startMono = startMono
        self.logger = logger
        self.events = events
        self.mixer = mixer
        self.reports = reports
        if let mixer { Self.insertEvents(of: mpd, into: mixer, events: events) }
        self.maxDelay = options.maxDelay
        let store = mpd.isLive && options.maxDelay > 0 ? SegmentStore(maxDuration: options.maxDelay, maxBytes: options.maxDelayBytes) : nil
        self.store = store
        let shift = self.shift
        let drift = self.drift
        let positionOf: @Sendable () -> Double? = { [core] in core.status()?.position.map { p in drift.withLock { $0.presentation(of: p) } } }
        let (feasible, requested, syncing, raised) = (self.feasible, self.requestedLatency, self.syncEnabled, self.raisedBy)
        let ast = mpd.availabilityStartTime
        let restart = SharedValue(false)  // reported once
        let arrivalsFrom = self.arrivalsFrom
        let onArrival: @Sendable (Double) -> Void = { need in
            let now = Monotonic.now()
            guard syncing, now >= arrivalsFrom.withLock({ $0 }) else { return }
            feasible.withLock { $0.record(need: need, at: now) }
            Self.adjustTarget(feasible: feasible, target: shared, requested: requested, raisedBy: raised, events: events, logger: logger, now: now)
        }
        let drifting = plans.firstIndex { $0.kind == .video } ?? 0  // the feeder that measures the drift
        self.feeders = plans.enumerated().map { index, plan in
            var abr: SharedValue<ABRController>?
            if plan.renditions.count > 1 {
                var controller = ABRController(
                    renditions: plan.renditions.map { ABRController.Rendition(id: $0.id, bandwidth: $0.bandwidth, height: $0.height, frameRate: $0.frameRate) },
                    options: options.abr.controller)
                controller.pinned = options.selectedQuality
                abr = SharedValue(controller)
            }
            return TrackFeeder(
                initialPlan: plan, core: core, fetcher: fetcher, manifest: manifest, clock: sharedClock, targetLatency: shared, logger: logger,
                events: events, position: positionOf,
                onEvents: { [mixer] timed, mpd in
                    if let timed { mixer?.insert(timed) }
                    if let mpd, let mixer { Self.insertEvents(of: mpd, into: mixer, events: events) }
                    if let ast, let now = mpd?.availabilityStartTime, abs(now.timeIntervalSince(ast)) > 0.001,
                        !restart.withLock({ r in defer { r = true }; return r })
                    {
                        logger.notice("the stream restarted: a new availabilityStartTime", metadata: ["was": "\(ast)", "now": "\(now)"])
                        reports?.yield(.restart)
                    }
                }, shift: shift, store: store, abr: abr, latestMPD: SharedValue(mpd), active: SharedValue(plan.representation.id),
                locations: SharedValue(LocationChoice(count: plan.timeline.baseURLs.count)), onArrival: onArrival,
                drift: index == drifting ? drift : nil)
        }
        events.send(.sourceLoaded(url: source.absoluteString, streamType: mpd.isLive ? .live : .onDemand))
        events.send(.timeOffsetChanged(seconds: clock.localClockDifferenceMs / 1000))
        for plan in plans {
            let r = plan.representation
            events.send(.activeQualityChanged(Quality(r)))
        }
    }

    /// The latency target and steering bounds for `mpd`: the options', with a manifest's
    /// `ServiceDescription` applied (its latency target replaces the default target and is
    /// clamped to its min/max; its playback-rate range narrows the options'). Target 0 (no
    /// sync): one segment plus 0.5 s behind live.
    static func syncSettings(options: PlayerOptions, mpd: MPD) -> (target: Double, sync: SyncOptions) {
        var sync = options.sync
        guard options.targetLatency > 0 else { return ((mpd.maxSegmentDuration ?? 2) + 0.5, sync) }
        var target = options.targetLatency
        if let sd = mpd.serviceDescription {
            if target == PlayerOptions.defaultTargetLatency, let wanted = sd.latencyTarget, wanted > 0 {
                target = wanted / 1000
                if let low = sd.latencyMin, low > 0 { target = max(target, low / 1000) }
                if let high = sd.latencyMax, high > 0 { target = min(target, high / 1000) }
            }
            if let low = sd.playbackRateMin, low > sync.minRate, low <= 1 { sync.minRate = low }
            if let high = sd.playbackRateMax, high < sync.maxRate, high >= 1 { sync.maxRate = high }
        }
        return (target, sync)
    }

    /// Places the manifest's `EventStream` events on the mix timeline; unreadable ones are
    /// reported as non-fatal errors.
    static func insertEvents(of mpd: MPD, into mixer: MixDirector, events: PlayerEvents.Sink) {
        for period in mpd.periods {
            let start = period.start ?? 0
            for stream in period.eventStreams {
                let (timed, errors) = EventScheme.events(of: stream, periodStart: start)
                mixer.insert(timed)
                for error in errors { events.send(.error(PlayerError(error), fatal: false)) }
            }
        }
    }

    /// Changes the latency target while playing; the controller steers (or jumps) to it (or to
    /// the feasible latency, if the segments arrive too late for it).
    func setTargetLatency(_ seconds: Double) {
        requestedLatency.withLock { $0 = seconds }
        let feasible = self.feasible.withLock { $0.minimum(now: Monotonic.now()) }
        targetLatency.withLock { $0 = syncEnabled ? max(seconds, feasible.map { ($0 * 100).rounded(.up) / 100 } ?? 0) : seconds }
    }

    /// A raise of the target at least this large (seconds) is made by a jump.
    static let raiseJump = 0.25

    /// Moves the latency target in use as ``FeasibleLatency`` says (an event when it moves);
    /// returns by how much it moved.
    @discardableResult
    static func adjustTarget(
        feasible: SharedValue<FeasibleLatency>, target: SharedValue<Double>, requested: SharedValue<Double>, raisedBy: SharedValue<Double>,
        events: PlayerEvents.Sink, logger: Logger, now: Double
    ) -> Double {
        let asked = requested.withLock { $0 }
        let (before, after) = target.withLock { current -> (Double, Double) in
            let before = current
            current = feasible.withLock { $0.target(requested: asked, current: current, now: now) }
            return (before, current)
        }
        guard after != before else { return 0 }
        logger.notice("latency target", metadata: ["target": "\(after)", "requested": "\(asked)"])
        events.send(.targetLatencyChanged(seconds: after, requested: asked))
        if after > before { raisedBy.withLock { $0 += after - before } }
        return after - before
    }

    // MARK: time shift

    /// Seconds behind the latency target the kept segments reach back (live; 0 without a store):
    /// how far ``setDelay(_:)`` can go now.
    var availableDelay: Double {
        guard let store, let ast = mpd.availabilityStartTime,
            let since = store.continuousSince(tracks: plans.map(\.coreTrack))
        else { return 0 }
        let live = clock.now().timeIntervalSince(ast) - targetLatency.withLock { $0 }
        return max(0, min(maxDelay, live - since))
    }

    /// The presentation time at the latency target (live), nil on demand.
    var livePosition: Double? {
        guard mpd.isLive, let ast = mpd.availabilityStartTime else { return nil }
        return clock.now().timeIntervalSince(ast) - targetLatency.withLock { $0 }
    }

    /// How far behind the latency target the server's own window (DVR: `timeShiftBufferDepth`,
    /// an HLS playlist's length) still reaches, less a segment of margin; 0 without one.
    var windowDelay: Double {
        guard mpd.isLive, let depth = mpd.timeShiftBufferDepth else { return 0 }
        let target = targetLatency.withLock { $0 }
        return max(0, depth - target - 2 * (mpd.maxSegmentDuration ?? 2))
    }

    /// What can be presented (presentation times): live, from what the store or the server's
    /// window still holds to the latency target; on demand, the whole presentation.
    var seekableRange: ClosedRange<Double>? {
        if let live = livePosition { return (live - max(availableDelay, windowDelay))...live }
        guard let duration = mpd.mediaPresentationDuration else { return nil }
        return 0...duration
    }

    /// Sets the user delay (live): clamped to what the store or the server's window reaches
    /// (``availableDelay``, ``windowDelay``); returns the delay applied. A change of more than
    /// the jump threshold jumps (the feeders restart from the store, or the server); a smaller
    /// one is steered by rate.
    @discardableResult
    func setDelay(_ seconds: Double) -> Double {
        guard mpd.isLive, store != nil || windowDelay > 0 else { return 0 }
        let delay = max(0, min(seconds, max(availableDelay, windowDelay)))
        let old = shift.delay
        let jump = abs(delay - old) >= controllerJumpThreshold || !syncEnabled
        shift.set(delay: delay, reposition: jump)
        if jump { jumpToTarget() }
        return delay
    }

    /// Stops presenting (live: keeps collecting into the store; the picture stays).
    func pausePresentation() {
        let position = core.status()?.position
        guard let position else { return }
        pause.withLock { $0 = (Monotonic.now(), position) }
        shift.set(delay: shift.delay, paused: true, reposition: true)
        for plan in plans { for track in plan.coreTracks { try? core.resetTrack(track) } }
        setState(.paused)
    }

    /// Resumes from the paused position (live: as a delay, as far as the store reaches).
    func resumePresentation() {
        guard let paused = pause.withLock({ p in defer { p = nil }; return p }) else { return }
        if mpd.isLive, let ast = mpd.availabilityStartTime {
            let live = clock.now().timeIntervalSince(ast) - targetLatency.withLock { $0 }
            let delay = max(0, min(live - paused.position, max(availableDelay, windowDelay)))
            shift.set(delay: delay, paused: false, reposition: true)
            jumpToTarget()
        } else {
            shift.set(delay: 0, paused: false, reposition: true, anchor: paused.position)
            try? core.setTimeline(monoAnchor: Monotonic.now() + 0.25, mediaAnchor: paused.position)
        }
        setState(.buffering)
    }

    var isPaused: Bool { shift.paused }

    /// On demand: restarts presentation at `position` (live seeks through ``setDelay(_:)``).
    func seekOnDemand(to position: Double) {
        shift.set(delay: 0, paused: shift.paused, reposition: true, anchor: position)
        if !shift.paused { try? core.setTimeline(monoAnchor: Monotonic.now() + 0.25, mediaAnchor: position) }
    }

    /// Wall seconds of `timeline` seconds of the presentation timeline: the same but for a live
    /// edge that runs off the server's clock (``LiveEdgeRate``), whose timeline gains its drift.
    /// Latency is wall time: from when the edge had it to when it is shown.
    func wallSeconds(_ timeline: Double) -> Double { timeline / (1 + (clock.lead?.slope ?? 0)) }
    func timelineSeconds(_ wall: Double) -> Double { wall * (1 + (clock.lead?.slope ?? 0)) }

    private var controllerJumpThreshold: Double { controller.withLock { $0.options.jumpThreshold } }

    /// Re-anchors the schedule on the latency target plus the delay, now.
    func jumpToTarget() {
        guard let ast = mpd.availabilityStartTime?.timeIntervalSince1970 else { return }
        let mono = Monotonic.now()
        let latency = targetLatency.withLock { $0 } + shift.delay
        let media = drift.withLock { $0 }
        try? core.setTimeline(monoAnchor: mono, mediaAnchor: media.position(of: mono + clock.timelineOffset(atMonotonic: mono) - ast - timelineSeconds(latency)))
        controller.withLock { $0.reset() }
    }

    static func period(of mpd: MPD, containing time: Double) -> Int {
        var index = 0
        for (i, p) in mpd.periods.enumerated() where (p.start ?? 0) <= time { index = i }
        return index
    }

    /// One audio and one video track: the first audio AdaptationSet's first representation, and
    /// the video AdaptationSet of the highest-bandwidth representation, among whose
    /// representations ABR chooses segment by segment (its timeline is the one the feeder
    /// follows; a muxed HLS variant feeds the audio track too).
    /// `reuse`: the core's tracks from an earlier session (a reload): reset and re-offset
    /// instead of added.
    static func plan(
        mpd: MPD, period: Int, manifestURL: URL, core: CoreHandle, now: Double?, reuse: [CoreTrackKind: Int32] = [:],
        audioLanguage: String? = nil
    ) throws(PlayerError) -> [TrackPlan] {
        var plans: [TrackPlan] = []
        for kind in [MediaKind.video, .audio] {
            let candidates = mpd.periods[period].adaptationSets.flatMap { set in
                set.representations.filter { $0.kind == kind && $0.segmentTemplate?.media != nil }.map { (set, $0) }
            }
            let chosen = kind == .video ? candidates.max { $0.1.bandwidth < $1.1.bandwidth } : Self.audioChoice(candidates, language: audioLanguage)
            guard let (set, rep) = chosen else { continue }
            let timeline: RepresentationTimeline
            do {
                timeline = try RepresentationTimeline(mpd: mpd, period: period, adaptationSet: set, representation: rep, manifestURL: manifestURL, liveEdge: now)
            } catch {
                throw PlayerError(error)
            }
            // The video segments carry the audio too: one more core track, fed the same bytes.
            let muxed = kind == .video && rep.muxesAudio && !plans.contains { $0.kind == .audio }
                && !mpd.periods[period].adaptationSets.contains { $0.representations.contains { $0.kind == .audio } }
            var tracks: [Int32] = []
            do {
                for coreKind in [kind == .video ? CoreTrackKind.video : .audio] + (muxed ? [.audio] : []) {
                    let track: Int32
                    if let existing = reuse[coreKind] {
                        try core.reuseTrack(existing, ptsOffset: timeline.ptsOffset)
                        track = existing
                    } else {
                        track = try core.addTrack(coreKind, ptsOffset: timeline.ptsOffset)
                    }
                    try core.setTrackContainer(track, transportStream: rep.isTransportStream)
                    tracks.append(track)
                }
            } catch {
                throw PlayerError(.output, error.message, coreCode: error.code)
            }
            plans.append(
                TrackPlan(
                    kind: kind == .video ? .video : .audio, periodIndex: period, periodID: mpd.periods[period].id,
                    periodStart: RepresentationTimeline.periodStart(mpd: mpd, index: period), adaptationSet: set, representation: rep, timeline: timeline,
                    coreTrack: tracks[0], muxedAudioTrack: tracks.count > 1 ? tracks[1] : nil,
                    renditions: kind == .video ? set.representations.filter { $0.kind == .video && $0.segmentTemplate?.media != nil } : []))
        }
        guard !plans.isEmpty else {
            throw PlayerError(.noPlayableContent, "no audio or video representation with a SegmentTemplate in period \(period)")
        }
        return plans
    }

    /// The audio representation to play: the first of the language wanted, else of an adaptation
    /// set whose `Role` is `main`, else the first.
    static func audioChoice(_ candidates: [(AdaptationSet, Representation)], language: String?) -> (AdaptationSet, Representation)? {
        if let language, let wanted = candidates.first(where: { LanguageTag.matches($0.0.lang, language) }) { return wanted }
        return candidates.first { $0.0.roles.contains { $0.schemeIdUri == "urn:mpeg:dash:role:2011" && $0.value == "main" } } ?? candidates.first
    }

    /// Feeds every track and watches the core until the presentation ends or the task is cancelled.
    func run() async {
        await withTaskGroup(of: Bool.self) { group in
            for feeder in feeders {
                group.addTask {
                    await feeder.run(from: self.startPosition)
                    return false
                }
            }
            if mpd.isLive {
                group.addTask {
                    await self.resync()
                    return false
                }
                group.addTask {
                    await self.watchEdge()
                    return false
                }
            }
            group.addTask {
                await self.control()
                return false
            }
            group.addTask {
                await self.pumpEvents()
                return true
            }
            // The event pump returns when playback ended or failed for good: stop the feeders and
            // the control step. (A feeder returns first when an on-demand stream is all fetched:
            // the rest goes on.)
            while let over = await group.next(), !over {}
            group.cancelAll()
        }
        if state == .ended || state == .error { reports?.yield(.over) }
    }

    /// Re-measures the server clock every ``SyncOptions/resyncInterval`` (longer while it holds
    /// steady) and applies it: the latency controller steers away any difference.
    private func resync() async {
        var interval = resyncInterval
        let sync = ClockSync(fetcher: fetcher, logger: logger)
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
            if Task.isCancelled { return }
            let fresh = await sync.synchronize(timings: mpd.utcTimings, fallback: await manifest.lastResult)
            let old = clock.current
            guard !fresh.isLocal || old.isLocal else { continue }  // keep a measured clock over the local one
            let moved = fresh.offset - old.offset
            clock.current = fresh
            try? core.setWallOffset(fresh.offset)
            interval = abs(moved) < 0.002 ? min(interval * 2, resyncInterval * 10) : resyncInterval
            logger.debug("server clock re-measured", metadata: ["moved_ms": "\(String(format: "%.2f", moved * 1000))", "source": "\(fresh.source)"])
            if abs(moved) >= 0.001 { events.send(.timeOffsetChanged(seconds: fresh.localClockDifferenceMs / 1000)) }
        }
    }

    /// The control step's period: the latency controller's sampling interval (its gains are
    /// tuned for it), the state and frame-rate readings, the mixer's look-ahead (0.5 s of timed
    /// transitions, so a step this long never misses one) and the stall supervisor's progress
    /// readings. Events do not wait for it (``pumpEvents()``).
    static let controlInterval = 0.1

    /// The control step, every ``controlInterval``: a sampled-data loop by design (the
    /// controller steers on a fixed period), not a poll for events.
    private func control() async {
        while !Task.isCancelled {
            if let status = core.status() {
                update(status)
                steer(status)
                if let mixer, let position = status.position {
                    await mixer.tick(position: drift.withLock { $0.presentation(of: position) }, mono: status.mono, rate: controller.withLock { $0.rate })
                }
                reports?.yield(.progress(mono: status.mono, presented: status.framesPresented + status.audioFramesPlayed))
            }
            try? await Task.sleep(for: .milliseconds(Int(Self.controlInterval * 1000)))
        }
    }

    /// Reacts to the core's events as they are queued (``CoreEvents``: the core's wakeup, no
    /// timer); returns when playback is over (ended, failed for good) or the session is stopped.
    private func pumpEvents() async {
        for await event in core.events() {
            if handle(event) { return }
        }
    }

    /// Returns `true` when playback is over.
    private func handle(_ event: CoreEvent) -> Bool {
        switch event.kind {
        case .firstFrame:
            let seconds = (core.status()?.firstFrameMono ?? Monotonic.now()) - startMono
            events.send(.firstFrame(seconds: seconds))
            logger.info("first frame", metadata: ["seconds": "\(String(format: "%.3f", seconds))"])
        case .ended:
            setState(.ended)
            events.send(.ended)
            return true
        case .error:
            let coreError = event.error
            let code: PlayerError.Code = coreError?.isOutputFailure == true ? .output : .media
            let error = PlayerError(code, event.message, coreCode: coreError?.code)
            let fatal = code == .output
            logger.warning("core error", metadata: ["error": "\(error)", "track": "\(event.track ?? -1)"])
            events.send(.error(error, fatal: fatal))
            if fatal {
                monitor.withLock { $0.fatal = error }
                setState(.error)
                return true
            }
            // A damaged segment (skipped by the core): its init segment may be the bad part.
            if let track = event.track {
                for feeder in feeders where feeder.plan.coreTracks.contains(track) { feeder.initSuspect.withLock { $0 = true } }
            }
        case .trackFormat:
            logger.info("track opened", metadata: ["track": "\(event.track ?? -1)", "format": "\(event.message)"])
        case .outputChanged:
            logger.notice("display changed", metadata: ["detail": "\(event.message)"])
            events.send(.outputChanged(event.message))
        case .decoderFallback:
            logger.notice("decoder fallback", metadata: ["detail": "\(event.message)"])
            events.send(.decoderFallback(event.message))
        case .clipEnded:
            logger.debug("clip ended", metadata: ["input": "\(event.track ?? -1)", "detail": "\(event.message)"])
        case .underrun, .other:
            logger.debug("core event", metadata: ["message": "\(event.message)"])
        }
        return false
    }

    /// One latency-control step (live with a target): measures the latency of what is heard
    /// (or shown) now and re-anchors the core's schedule as the controller says.
    private func steer(_ status: CoreStatus) {
        if syncEnabled, !shift.paused, status.state == .buffering, status.position == nil, raisedBy.withLock({ $0 }) > 0 {
            // The target was raised before the first picture (a server later than the target
            // from the start): the schedule the core waits on moves there now.
            raisedBy.withLock { $0 = 0 }
            jumpToTarget()
            return
        }
        guard syncEnabled, !shift.paused, status.state == .playing, let position = status.position,
            let ast = mpd.availabilityStartTime?.timeIntervalSince1970
        else { return }
        Self.adjustTarget(
            feasible: feasible, target: targetLatency, requested: requestedLatency, raisedBy: raisedBy, events: events, logger: logger,
            now: status.mono)
        let raised = raisedBy.withLock { r in defer { r = 0 }; return r }
        let target = targetLatency.withLock { $0 } + shift.delay
        let media = drift.withLock { $0 }
        let latency = wallSeconds(status.mono + clock.timelineOffset(atMonotonic: status.mono) - ast - media.presentation(of: position))
        let (action, before) = controller.withLock { c in
            let before = c.rate
            if raised >= Self.raiseJump, latency < target - Self.raiseJump / 2 {
                c.jumped(now: status.mono)
                return (LatencyController.Action.jump(error: latency - target), before)
            }
            return (c.update(now: status.mono, latency: latency, target: target, baseRate: media.rate * (1 + (clock.lead?.slope ?? 0))), before)
        }
        do {
            switch action {
            case .hold:
                return
            case .steer(let rate):
                try core.setTimeline(monoAnchor: status.mono, mediaAnchor: position, rate: rate)
                logger.debug("steering", metadata: ["rate": "\(rate)", "error": "\(latency - target)"])
                events.send(.playbackRateChanged(rate))
            case .jump(let error):
                let mono = Monotonic.now()
                try core.setTimeline(monoAnchor: mono, mediaAnchor: media.position(of: mono + clock.timelineOffset(atMonotonic: mono) - ast - timelineSeconds(target)))
                logger.info("latency jump", metadata: ["error": "\(String(format: "%.3f", error))", "target": "\(target)"])
                events.send(.latencyJump(error: error))
                if before != 1 { events.send(.playbackRateChanged(1)) }
            }
        } catch {
            logger.warning("cannot steer", metadata: ["error": "\(error.message)"])
        }
    }

    private func update(_ status: CoreStatus) {
        var newState: PlaybackState? =
            switch status.state {
            case .playing: .playing
            case .buffering: .buffering
            default: nil
            }
        if shift.paused { newState = nil }
        if status.state == .playing, let position = status.position, !shift.paused {
            let due = monitor.withLock { m in
                guard status.mono - m.lastTimeUpdate >= 1 else { return false }
                m.lastTimeUpdate = status.mono
                return true
            }
            if due { events.send(.timeUpdate(drift.withLock { $0.presentation(of: position) })) }
        }
        monitor.withLock { m in
            m.samples.append((status.mono, status.framesPresented))
            m.samples.removeAll { status.mono - $0.mono > 1.0 }
            if let first = m.samples.first, status.mono - first.mono > 0.25 {
                m.fps = Double(status.framesPresented - first.frames) / (status.mono - first.mono)
            }
        }
        if let newState { setState(newState) }
    }

    private func setState(_ state: PlaybackState) {
        let changed = monitor.withLock { m in
            // Ended and failed are final: a control step in flight does not undo them.
            guard m.state != state, m.state != .ended, m.state != .error else { return false }
            m.state = state
            return true
        }
        if changed { events.send(.stateChanged(state)) }
    }

    var state: PlaybackState { monitor.withLock { $0.state } }

    func status() -> PlaybackStatus {
        let core = self.core.status()
        let (state, fps) = monitor.withLock { ($0.state, $0.fps) }
        var status = PlaybackStatus(state: state)
        status.framesPerSecond = fps
        status.timeOffset = clock.localClockDifferenceMs / 1000
        status.playbackRate = controller.withLock { $0.rate }
        status.targetLatency = mpd.isLive ? targetLatency.withLock { $0 } : nil
        status.delay = shift.delay
        status.availableDelay = availableDelay
        status.storeBytes = store?.bytes ?? 0
        guard let core else { return status }
        let media = drift.withLock { $0 }
        status.position = core.position.map { media.presentation(of: $0) }
        status.framesPresented = core.framesPresented
        status.framesDropped = core.framesDropped
        status.avOffset = core.avOffset
        status.width = core.width
        status.height = core.height
        if let position = status.position {
            if mpd.isLive, let ast = mpd.availabilityStartTime {
                status.latency = wallSeconds(core.mono + clock.timelineOffset(atMonotonic: core.mono) - ast.timeIntervalSince1970 - position)
            }
            let ends = feeders.compactMap { $0.pushedEnd.withLock { $0 } }
            if let end = ends.min() { status.buffer = max(0, end - position) }
        }
        return status
    }
}

/// A snapshot of what a player is doing, for status lines and the SDK's properties.
public struct PlaybackStatus: Sendable, Hashable {
    /// What the player is doing.
    public var state: PlaybackState
    /// Seconds between the live edge (server time) and what is presented now; `nil` on demand
    /// and before the first frame.
    public var latency: Double?
    /// Seconds of media fetched ahead of the presented position (the least of the tracks').
    public var buffer: Double = 0
    /// The presentation time presented now, seconds; `nil` before the first frame.
    public var position: Double?
    /// Frames presented per second, over the last second.
    public var framesPerSecond: Double = 0
    /// Pictures presented since ``Player/play()``.
    public var framesPresented: Int = 0
    /// Pictures dropped as late since the first one was presented (a picture skipped on the
    /// way to the start position is not counted).
    public var framesDropped: Int = 0
    /// The audio heard minus the picture shown with it, seconds: the largest over the last
    /// second (positive: the picture lags the sound); `nil` without both audio and video.
    public var avOffset: Double?
    /// Width of the pictures presented, pixels; 0 before the first picture and without video.
    public var width: Int = 0
    /// Height of the pictures presented, pixels; 0 before the first picture and without video.
    public var height: Int = 0
    /// Server clock minus local wall clock, seconds.
    public var timeOffset: Double = 0
    /// The rate media plays at (the latency controller's; 1 when not steering).
    public var playbackRate: Double = 1
    /// The latency the session holds, seconds; `nil` on demand (the user delay comes on top).
    public var targetLatency: Double?
    /// The user delay (time-shift) in effect, seconds.
    public var delay: Double = 0
    /// How far the delay can go now, seconds: what the segment store reaches back.
    public var availableDelay: Double = 0
    /// Bytes of compressed media the segment store holds.
    public var storeBytes: Int = 0

    /// A status in `state` with nothing measured yet: no latency or position, every count 0,
    /// rate 1.
    public init(state: PlaybackState) {
        self.state = state
    }
}
