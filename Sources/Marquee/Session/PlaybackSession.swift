import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// One playing source: its manifest, the server clock, the core and a feeder per track.
final class PlaybackSession: Sendable {
    let source: URL
    let mpd: MPD
    /// The learned live edge's error, seconds, once learned (``watchAnchor()``; live HLS without dates).
    let learnedEdgeError = Locked<(error: Double, shared: Bool)?>(nil)
    /// The lead the timeline was placed with from the start (live HLS without dates whose first
    /// answers already told the publication: behind a venue proxy), nil otherwise.
    let initialLead: Double?
    /// The server clock, re-measured while playing live.
    let clock: SharedServerClock
    let manifest: ManifestSource
    let fetcher: HTTPFetcher
    private let clocks: ServerClockBook
    private let resyncInterval: Double
    let core: CoreHandle
    let feeders: [TrackFeeder]
    let plans: [TrackPlan]
    /// The latency target: the app's (``setTargetLatency(_:)``), raised while the stream's
    /// segments arrive too late for it (``FeasibleLatency``); shared with the feeders.
    let latencyTarget: Locked<LatencyTarget>
    /// Seconds behind live the session holds now.
    var targetLatency: Double { latencyTarget.withLock { $0.current } }
    /// When the player itself was not running (a stopped process, a starved CPU), from the
    /// control step's beats: arrivals are not charged to the server for that time.
    let suspensions = Locked(Suspensions())
    /// The media clock's drift from the segments' dates: presented positions are read through
    /// it (latency, buffer, the feeders' position) and the controller steers around its rate.
    let drift = Locked(MediaClockDrift())
    /// Whether the latency controller steers (live, target > 0).
    let syncEnabled: Bool
    /// Where the stall supervisor hears of this session (progress, a packager restart, the end).
    let reports: AsyncStream<SessionReport>.Continuation?
    let controller: Locked<LatencyController>
    /// Presentation time the session starts at.
    let startPosition: Double
    let startMono: Double
    /// `PlayerOptions.memoryTrimInterval` (package: the `marquee` command sets 10 s).
    let memoryTrimInterval: Double?
    let logger: Logger
    let events: PlayerEvents.Sink
    let monitor = Locked(Monitor())
    /// Mute music, ads: fed with the manifest's and the media's events, ticked while playing.
    let mixer: MixDirector?
    /// The user delay and pause (live), and the store of segments that makes them possible.
    let shift = TimeShift()
    let store: DelayStore?
    let maxDelay: Double
    let pause = Locked<(mono: Double, position: Double)?>(nil)
    /// On demand: the first picture is due at most ``onDemandLead`` after the start, and as
    /// soon as it is decoded (``startOnFirstPicture(_:)``): when, and the track that tells.
    let onDemandStart: Locked<(anchor: Double, track: Int32)?>
    /// How long an on-demand start gives the first segments to arrive and decode, seconds.
    static let onDemandLead = 0.25

    struct Monitor {
        var state: PlaybackState = .buffering
        var fps: Double = 0
        var samples: [(mono: Double, frames: Int)] = []
        var firstFrameReported = false
        var fatal: PlayerError?
        var lastTimeUpdate = -Double.infinity
        /// What moved last (pictures presented; stream sound played) and
        /// when (monotonic; 0 before anything did): a playing core whose output stands still
        /// for ``PlaybackSession/stallAfter`` is buffering.
        var progress: (mono: Double, count: Int) = (0, 0)
    }

    /// Seconds without progress after which a playing stream is said to be buffering: its
    /// buffer ran dry (the core keeps the last picture, and the display its band after 1 s).
    static let stallAfter = 0.5

    /// Loads `source`, measures the server clock, picks the renditions, creates the core
    /// tracks and sets the presentation schedule. Nothing is fetched beyond the manifest and
    /// the clock yet.
    init(
        source: URL, options: PlayerOptions, core: CoreHandle, fetcher: HTTPFetcher, clocks: ServerClockBook,
        startMono: Double, logger: Logger,
        events: PlayerEvents.Sink, reuse: [CoreTrackKind: Int32] = [:], mixer: MixDirector? = nil,
        startPolicy: FetchPolicy = .manifest,
        reports: AsyncStream<SessionReport>.Continuation? = nil, prepared: PreparedSource? = nil,
        stagedAt: Double? = nil, learnedTarget: Double? = nil
    ) async throws(PlayerError) {
        let manifest: ManifestSource
        let mpd: MPD
        let clock: ServerClock
        if let prepared, prepared.fits(source) {
            (manifest, mpd, clock) = (prepared.manifest, prepared.mpd, prepared.clock)  // (made ready ahead)
        } else {
            manifest = ManifestSource(
                url: source, fetcher: fetcher, policy: startPolicy, audioLanguage: options.audioLanguage)
            mpd = try await manifest.load()
            clock =
                mpd.isLive
                ? await ClockSync(fetcher: fetcher, logger: logger, book: clocks).synchronize(
                    timings: mpd.utcTimings, fallback: await manifest.lastResult)
                : ServerClock.local()
        }
        let (requested, syncOptions) = Self.syncSettings(options: options, mpd: mpd)
        let syncEnabled = mpd.isLive && options.targetLatency > 0
        // An earlier session of this stream had to raise its target (``Player/learnedTarget(for:)``):
        // this one starts there, placed for it, rather than late and raised again.
        let latency = LatencyTarget(
            requested: requested, follows: syncEnabled, learned: learnedTarget, now: Monotonic.now())
        let target = latency.current
        if target != requested {
            logger.info("latency target learned", metadata: ["target": "\(target)", "requested": "\(requested)"])
        }
        // Live HLS without dates whose first answers already tell when the packager publishes
        // (a venue proxy's, narrowed by this box's own round trips): placed by it from the start,
        // the first picture as the venue's other boxes show it, no re-anchor a moment later.
        let told =
            syncEnabled
            ? await manifest.anchorView().flatMap {
                Self.learnedLead($0.anchor, answerOffset: $0.clockOffset, clockOffset: clock.offset)
            } : nil
        let initialLead = told?.lead
        // Staged (decoded ahead of `stagedAt`): placed for then; the timeline is set at activate().
        let ahead = stagedAt.map { max(0, $0 - Monotonic.now()) } ?? 0
        let start: Double
        if mpd.isLive, let ast = mpd.availabilityStartTime {
            start = clock.now().timeIntervalSince(ast) + ahead - target + (initialLead ?? 0)
        } else {
            start = 0
        }
        var onDemandStart: (anchor: Double, track: Int32)?
        let periodIndex = Self.period(of: mpd, containing: start)
        let edge = mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) + ahead + (initialLead ?? 0) }
        let choices =
            stagedAt == nil
            ? nil
            : try Self.choose(
                mpd: mpd, period: periodIndex, manifestURL: source, now: edge, audioLanguage: options.audioLanguage)
        let entry = mpd.isLive ? start : choices?.compactMap { $0.timeline.segment(containing: 0)?.start }.min() ?? 0
        let plans = try Self.plan(
            mpd: mpd, period: periodIndex, manifestURL: source, core: core, now: edge, reuse: reuse,
            audioLanguage: options.audioLanguage,
            stage: stagedAt == nil ? nil : entry)
        let stagedFlag = Locked(stagedAt != nil)
        self.staged = stagedFlag
        self.entry = entry
        if stagedAt == nil {
            do {
                onDemandStart = try Self.setSchedule(
                    core: core, mpd: mpd, clock: clock, target: target, plans: plans, lead: Self.onDemandLead,
                    edgeLead: initialLead ?? 0)
            } catch {
                throw PlayerError(.output, error.message, coreCode: error.code)
            }
            presentingEpoch = Locked(core.epoch)
        } else {
            presentingEpoch = Locked(nil)
        }
        self.onDemandStart = Locked(onDemandStart)
        self.source = source
        self.mpd = mpd
        let sharedClock = SharedServerClock(clock)
        if let told {
            sharedClock.setLead(SharedServerClock.Lead(reference: 0, lead: told.lead, slope: 0), availabilityStart: 0)
        }
        self.clock = sharedClock
        self.initialLead = initialLead
        self.learnedEdgeError.withLock { $0 = told.map { ($0.error, $0.shared) } }
        self.manifest = manifest
        self.fetcher = fetcher
        self.clocks = clocks
        self.resyncInterval = options.sync.resyncInterval
        self.core = core
        self.plans = plans
        self.syncEnabled = syncEnabled
        let shared = Locked(latency)
        self.latencyTarget = shared
        self.controller = Locked(LatencyController(options: syncOptions))
        self.startPosition = start
        self.startMono = startMono
        self.memoryTrimInterval = options.memoryTrimInterval
        self.logger = logger
        self.events = events
        self.mixer = mixer
        self.reports = reports
        if let mixer { Self.insertEvents(of: mpd, into: mixer, events: events) }
        self.maxDelay = options.maxDelay
        let store =
            mpd.isLive && options.maxDelay > 0
            ? DelayStore(maxDuration: options.maxDelay, maxBytes: options.maxDelayBytes) : nil
        self.store = store
        let shift = self.shift
        let drift = self.drift
        // (None while staged: the core presents the item before.)
        let positionOf: @Sendable () -> Double? = { [core] in
            stagedFlag.withLock { $0 }
                ? nil : core.status()?.position.map { p in drift.withLock { $0.presentation(of: p) } }
        }
        let ast = mpd.availabilityStartTime
        let restart = Locked(false)  // reported once
        let suspensions = self.suspensions
        let onArrival: @Sendable (SegmentArrival) -> Void = { measured in
            // The time the player itself was not running is not the server's (``Suspensions``).
            let now = Monotonic.now()
            let arrival = suspensions.withLock { $0.discount(measured, at: now) }
            if arrival.need < measured.need - 0.001 {
                logger.info(
                    "segment arrival: the player's own freeze not charged to the server",
                    metadata: [
                        "need": "\(String(format: "%.3f", measured.need))",
                        "charged": "\(String(format: "%.3f", arrival.need))",
                    ])
            }
            Self.report(
                shared.withLock { $0.arrived(need: arrival.need, inHand: arrival.inHand, at: now) }, events: events,
                logger: logger)
        }
        let drifting = plans.firstIndex { $0.kind == .video } ?? 0  // the feeder that measures the drift
        self.feeders = plans.enumerated().map { index, plan in
            var abr: Locked<ABRController>?
            if plan.renditions.count > 1 {
                var controller = ABRController(
                    renditions: plan.renditions.map {
                        ABRController.Rendition(
                            id: $0.id, bandwidth: $0.bandwidth, height: $0.height, frameRate: $0.frameRate)
                    },
                    options: options.abr.controller)
                controller.pinned = options.selectedQuality
                abr = Locked(controller)
            }
            return TrackFeeder(
                initialPlan: plan, core: core, fetcher: fetcher, manifest: manifest, clock: sharedClock,
                latencyTarget: shared, logger: logger,
                events: events, position: positionOf,
                onEvents: { [mixer] timed, mpd in
                    if let timed { mixer?.insert(timed) }
                    if let mpd, let mixer { Self.insertEvents(of: mpd, into: mixer, events: events) }
                    if let ast, let now = mpd?.availabilityStartTime, abs(now.timeIntervalSince(ast)) > 0.001,
                        !restart.withLock({ r in
                            defer { r = true }
                            return r
                        })
                    {
                        logger.notice(
                            "the stream restarted: a new availabilityStartTime",
                            metadata: ["was": "\(ast)", "now": "\(now)"])
                        reports?.yield(.restart)
                    }
                }, shift: shift, store: store, abr: abr, latestMPD: Locked(mpd), active: Locked(plan.representation.id),
                loader: SegmentLoader(fetcher: fetcher, locations: plan.timeline.baseURLs.count, logger: logger),
                onArrival: onArrival,
                drift: index == drifting ? drift : nil, suspensions: suspensions)
        }
        if stagedAt == nil { announce() }
    }

    /// Sets the server clock and the presentation schedule: live, presentation time p due at
    /// server time AST + p + `target`; on demand, the first segment's start due `lead` from now
    /// (returned with the track whose first picture may come sooner: ``startOnFirstPicture(_:)``).
    private static func setSchedule(
        core: CoreHandle, mpd: MPD, clock: ServerClock, target: Double, plans: [TrackPlan], lead: Double,
        edgeLead: Double = 0
    ) throws(CoreError) -> (anchor: Double, track: Int32)? {
        try core.setWallOffset(clock.offset)
        let mono = Monotonic.now()
        if mpd.isLive, let ast = mpd.availabilityStartTime {
            try core.setTimeline(
                // (no edge lead yet, but a publication told from the start)
                monoAnchor: mono, mediaAnchor: mono + clock.offset + edgeLead - ast.timeIntervalSince1970 - target)
            return nil
        }
        let first = plans.compactMap { $0.timeline.segment(containing: 0)?.start }.min() ?? 0
        try core.setTimeline(monoAnchor: mono + lead, mediaAnchor: first)
        guard lead > 0, let track = plans.first(where: { $0.kind == .video })?.coreTrack ?? plans.first?.coreTrack
        else { return nil }
        return (mono + lead, track)
    }

    /// Whether the session is staged (decoded ahead, not presenting yet: ``activate()``).
    let staged: Locked<Bool>
    /// Where a staged session enters (presentation time): live, the target latency's position
    /// at the time it was staged for; on demand, its start.
    let entry: Double
    /// A staged session's feeders, started by ``startFeeding()``.
    private let earlyFeeding = Locked<Task<Void, Never>?>(nil)
    /// A staged session's activation armed on the core for an instant (``arm(at:label:)``).
    private let armedActivation = Locked<ArmedActivation?>(nil)
    /// The core's epoch while this session's tracks present (``CoreHandle/epoch``: set when it
    /// starts or is activated); nil while staged. Its steering of the schedule applies only
    /// then: once a cut replaced it (a switch the core made on its instant, before the
    /// cooperative pool stopped this session), it steers no more.
    let presentingEpoch: Locked<UInt64?>
    /// Signalled when playback is over (ended, failed for good): ``run()`` returns.
    let over = Wakeup()

    /// The throughput the adaptive bitrate control measured (bits per second; the video
    /// track's, else the first with a choice of renditions), nil without one.
    var throughputEstimate: Double? {
        let video = feeders.filter { $0.initialPlan.kind == .video }
        let others = feeders.filter { $0.initialPlan.kind != .video }
        return (video + others).lazy.compactMap { $0.abr?.withLock { $0.estimate } }.first
    }

    /// Starts a staged session's feeders: its first picture and sound are decoded and held.
    func startFeeding() {
        earlyFeeding.withLock { task in
            guard task == nil else { return }
            task = Task { [self] in
                await withTaskGroup(of: Void.self) { group in
                    for feeder in feeders { group.addTask { await feeder.run(from: self.startPosition) } }
                }
            }
        }
    }

    /// A staged session takes over the outputs: the server clock and the schedule are set (live,
    /// at the target latency now; on demand, its start due now), the core's staged tracks
    /// replace the others (``CoreHandle/activateTracks()``) and hand on what they hold, and the
    /// session's events begin. Throws when the core refuses. Armed for an instant
    /// (``arm(at:label:)``) that has come, the core did it then: only the events begin.
    func activate() throws(PlayerError) {
        let armed = armedActivation.withLock { a in
            defer { a = nil }
            return a
        }
        if let armed, armed.cancel() == .activated, let epoch = armed.epoch {
            presentingEpoch.withLock { $0 = epoch }
        } else {
            do {
                _ = try Self.setSchedule(
                    core: core, mpd: mpd, clock: clock.current, target: targetLatency, plans: plans, lead: 0,
                    edgeLead: initialLead ?? 0)
                let epoch = try core.activateTracks()
                presentingEpoch.withLock { $0 = epoch }
            } catch {
                throw PlayerError(.output, error.message, coreCode: error.code)
            }
        }
        staged.withLock { $0 = false }
        announce()
    }

    /// Arms the core to activate this staged session by itself at monotonic `at` (a schedule's
    /// switch: ``ArmedActivation``), its schedule then as ``activate()`` sets it (live, at the
    /// target latency; on demand, its start due then) and the `frames:` label `label`. The
    /// ``activate()`` that follows on the cooperative pool, however late, finds it done.
    func arm(at: Double, label: String?) {
        let current = clock.current
        let anchor: Double
        if mpd.isLive, let ast = mpd.availabilityStartTime {
            anchor = at + current.offset + (initialLead ?? 0) - ast.timeIntervalSince1970 - targetLatency
        } else {
            anchor = plans.compactMap { $0.timeline.segment(containing: 0)?.start }.min() ?? 0
        }
        let armed = ArmedActivation(core: core, at: at, mediaAnchor: anchor, wallOffset: current.offset, label: label)
        armedActivation.withLock { $0 }?.cancel()
        armedActivation.withLock { $0 = armed }
    }

    /// The epoch this session's steering applies in (``presentingEpoch``; a staged session's
    /// in none).
    var steeringEpoch: UInt64 { presentingEpoch.withLock { $0 } ?? .max }

    /// Cancels the activation armed for an instant (``arm(at:label:)``), unless it began.
    func disarm() { armedActivation.withLock { $0 }?.cancel() }

    /// Discards a staged session that will not play: its feeders stop, its core tracks go.
    func discard() async {
        disarm()
        let task = earlyFeeding.withLock { $0 }
        task?.cancel()
        await task?.value
        for track in Set(plans.flatMap(\.coreTracks)) { try? core.removeTrack(track) }
    }

    /// The session's source, clock and renditions, told once it presents.
    private func announce() {
        events.send(.sourceLoaded(url: source.absoluteString, streamType: mpd.isLive ? .live : .onDemand))
        events.send(.timeOffsetChanged(seconds: clock.current.localClockDifferenceMs / 1000))
        for plan in plans { events.send(.activeQualityChanged(Quality(plan.representation))) }
        let latency = latencyTarget.withLock { $0 }
        if latency.current != latency.requested {
            events.send(.targetLatencyChanged(seconds: latency.current, requested: latency.requested))
        }
    }

    /// The latency target this session was raised to (the stream's segments arrived too late
    /// for the app's), nil when it holds the app's.
    var raisedTarget: Double? {
        let latency = latencyTarget.withLock { $0 }
        return syncEnabled && latency.current > latency.requested + 0.01 ? latency.current : nil
    }

    /// Changes the latency target while playing; the controller steers (or jumps) to it (or to
    /// the feasible latency, if the segments arrive too late for it).
    func setTargetLatency(_ seconds: Double) {
        latencyTarget.withLock { $0.request(seconds, now: Monotonic.now()) }
    }

    /// A raise of the target at least this large (seconds) is made by a jump.
    static let raiseJump = 0.25

    /// Reports a change of the latency target in use (``LatencyTarget``): logged, and an event.
    static func report(_ change: LatencyTarget.Change?, events: PlayerEvents.Sink, logger: Logger, why: String? = nil) {
        guard let change else { return }
        var metadata: Logger.Metadata = ["target": "\(change.after)", "requested": "\(change.requested)"]
        if let why { metadata["why"] = "\(why)" }
        logger.notice("latency target", metadata: metadata)
        events.send(.targetLatencyChanged(seconds: change.after, requested: change.requested))
    }

    /// Feeds every track and watches the core until the presentation ends or the task is cancelled.
    func run() async {
        await withTaskGroup(of: Bool.self) { group in
            if let early = earlyFeeding.withLock({ $0 }) {
                group.addTask {
                    await withTaskCancellationHandler {
                        await early.value
                    } onCancel: {
                        early.cancel()
                    }
                    return false
                }
            } else {
                for feeder in feeders {
                    group.addTask {
                        await feeder.run(from: self.startPosition)
                        return false
                    }
                }
            }
            if mpd.isLive {
                group.addTask {
                    // (Without a usable UTCTiming, the server's Date ticks, re-checked as often.)
                    if self.readsDateTicks {
                        await self.watchDateTicks(every: self.resyncInterval)
                    } else {
                        await self.resync()
                    }
                    return false
                }
                group.addTask {
                    await self.watchEdge()
                    return false
                }
                group.addTask {
                    await self.watchAnchor()
                    return false
                }
            }
            group.addTask {
                await self.control()
                return false
            }
            if let interval = memoryTrimInterval {
                group.addTask {
                    await self.trimMemory(every: interval)
                    return false
                }
            }
            group.addTask {
                await self.over.wait(until: nil)
                return true
            }
            // Over when playback ended or failed for good (``react(to:)``): stop the feeders and
            // the control step. (A feeder returns first when an on-demand stream is all fetched:
            // the rest goes on.)
            while let over = await group.next(), !over {}
            group.cancelAll()
        }
        if state == .ended || state == .error { reports?.yield(.over) }
    }

    /// Gives back what playing stopped using (``MemoryUsage/trim()``) every `interval` seconds
    /// once pictures are shown: the code and data a reload, a manifest or a new rendition
    /// touched once, and the pages the kernel mapped around them.
    private func trimMemory(every interval: Double) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
            guard !Task.isCancelled, (core.status()?.framesPresented ?? 0) > 0,
                let released = MemoryUsage.trim(unlessWithin: interval * 0.9)
            else { continue }
            logger.debug("memory trimmed", metadata: ["released": "\(released >> 10) KiB"])
        }
    }

    /// Re-measures the server clock every ``SyncOptions/resyncInterval`` (longer while it holds
    /// steady) and applies it: the latency controller steers away any difference.
    private func resync() async {
        var interval = resyncInterval
        let sync = ClockSync(fetcher: fetcher, logger: logger, book: clocks)
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
            logger.debug(
                "server clock re-measured",
                metadata: ["moved_ms": "\(String(format: "%.2f", moved * 1000))", "source": "\(fresh.source)"])
            if abs(moved) >= 0.001 { events.send(.timeOffsetChanged(seconds: fresh.localClockDifferenceMs / 1000)) }
        }
    }
}
