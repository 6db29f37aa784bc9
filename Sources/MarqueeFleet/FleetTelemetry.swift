public import CoreMetrics
import Foundation
public import Marquee
public import MarqueeSignage
import MarqueeStreaming
import MarqueeVenue

/// What a box reports about its player: the play's ``QoERecord``, the same figures as
/// swift-metrics counters and gauges (for any metrics backend; ``MetricsEndpoint`` serves them
/// to Prometheus), and the player's events to the control socket's observers.
///
/// The player has one event consumer, so whoever consumes them passes each to
/// ``observe(_:)``; ``run()`` samples the player's status 4 times a second (time playing and
/// stalled, the latency's distance from its target, frame counts). A scrape samples it first,
/// so counters are current to the moment of the scrape.
///
/// Metrics (Prometheus names): `marquee_frames_presented_total`, `marquee_frames_dropped_total`,
/// `marquee_stalls_total`, `marquee_attempts_total`, `marquee_errors_total{code}`,
/// `marquee_failed_downloads_total` (media segment tries that failed: ``QoERecord/failedDownloads``), and gauges
/// `marquee_playing`, `marquee_latency_seconds`, `marquee_target_latency_seconds` (the target
/// held), `marquee_requested_target_latency_seconds` (the app's), `marquee_target_raised` (1
/// while a late server holds the target above the app's),
/// `marquee_buffer_seconds`, `marquee_playback_rate`, `marquee_clock_offset_seconds`,
/// `marquee_video_bitrate_bps`, `marquee_startup_seconds`, `marquee_rebuffer_ratio`,
/// `marquee_display_off`, `marquee_display_connected` (0 after the display output reported it
/// unplugged or lost, 1 again when it comes back), `marquee_audio_underrun_seconds` (silence
/// played because stream audio ran dry), counters `marquee_audio_underruns_total` (times it ran
/// dry) and `marquee_audio_xruns_total` (device xruns recovered), `marquee_audio_device_ok` (0
/// after the audio device failed), `marquee_cpu_temperature_celsius` (where the board has
/// a thermal zone), a counter `marquee_output_changes_total` (display hot-plug and mode changes); a histogram
/// `marquee_latency_distance_seconds` (|latency − the app's target|); with a venue proxy
/// `marquee_venue_bytes_total{from=cdn|peers}`, `marquee_venue_store_hits_total`,
/// `marquee_venue_bytes_served_to_peers_total`, `marquee_venue_peers_connected`,
/// `marquee_venue_verification_failures_total`.
public final class FleetTelemetry: Sendable {
    /// The player reported on.
    public let player: Player
    private let state: Locked<State>
    private let metrics: Instruments

    struct State {
        var record: QoERecord
        var lastSample: ContinuousClock.Instant?
        var started = false  // first picture (or sound)
        var lastFrames = 0
        var lastPosition: Double?
        var lastProgress: ContinuousClock.Instant?
        var stalledSince: ContinuousClock.Instant?
        var videoBitrate: Double?
        var output: String?
        var bitrateWeighted = 0.0
        var bitrateSeconds = 0.0
        var counted = Counted()
        var observers: [Int: AsyncStream<SignageEvent>.Continuation] = [:]
        var nextObserver = 0
    }

    /// Totals already added to the counters (they are incremented by what is new).
    struct Counted {
        var presented = 0, dropped = 0, underruns = 0, xruns = 0, failedDownloads = 0
        var fromCDN: Int64 = 0, fromPeers: Int64 = 0, servedToPeers: Int64 = 0, storeHits = 0, verificationFailures = 0
    }

    /// Reports on `player`; `customerId` goes in the record; metrics are made with `factory`
    /// (default: the process's bootstrapped `MetricsSystem.factory`).
    public init(player: Player, customerId: String? = nil, factory: (any MetricsFactory)? = nil) {
        self.player = player
        self.state = Locked(State(record: QoERecord(sessionId: player.sessionId, customerId: customerId)))
        self.metrics = Instruments(
            factory: factory ?? MetricsSystem.factory, venue: player.venueStatistics != nil,
            thermal: DeviceHealth.cpuTemperature() != nil,
            display: player.options.videoOutput.description.hasPrefix("drm"))
    }

    /// The record so far.
    public var record: QoERecord { state.withLock { $0.record } }

    /// What the display output last reported of itself (``PlayerEvent/outputChanged(_:)``:
    /// "display HDMI-A-1 connected 1920x1080@60", "… disconnected"); nil before it did.
    public var output: String? { state.withLock { $0.output } }

    /// Takes in one of the player's events (call it for every event, in order).
    public func observe(_ event: PlayerEvent) { observe(.player(event)) }

    /// Takes in one of a playlist's or a schedule's events (call it for every event, in order):
    /// its player's count in the record, and every one reaches the observers.
    public func observe(_ event: SignageEvent) {
        let observers = state.withLock { s -> [AsyncStream<SignageEvent>.Continuation] in
            guard case .player(let event) = event else { return Array(s.observers.values) }
            switch event {
            case .sourceLoaded(let url, _):
                s.record.attempts += 1
                s.record.source = url
                metrics.attempts.increment()
            case .firstFrame(let seconds):
                if s.record.startupTime == nil {
                    s.record.startupTime = seconds
                    metrics.startup.record(seconds)
                }
                s.started = true
            case .activeQualityChanged(let q) where q.kind == "video":
                s.videoBitrate = Double(q.bandwidth)
                metrics.bitrate.record(Double(q.bandwidth))
            case .error(let error, let fatal):
                s.record.errors[error.code.description, default: 0] += 1
                metrics.error(error.code.description).increment()
                if fatal && !s.started { s.record.startFailed = true }
            case .timeOffsetChanged(let seconds):
                s.record.clockOffset = seconds
            case .liveEdgeLearned(_, let error):
                s.record.liveEdgeError = error
            case .outputChanged(let detail):
                // The DRM output's words: "display HDMI-A-1 connected 1920x1080@60", "… lost …",
                // "display HDMI-A-1 disconnected".
                let connected = !(detail.contains(" disconnected") || detail.contains(" lost "))
                metrics.outputChanges.increment()
                metrics.displayConnected?.record(connected ? 1 : 0)
                s.output = detail
            default:
                break
            }
            return Array(s.observers.values)
        }
        for o in observers { o.yield(event) }
    }

    /// Reads the player's status into the record and the metrics (``run()`` calls it 4 times
    /// a second; a scrape calls it first).
    public func sample() {
        let status = player.status
        let venue = player.venueStatistics
        let displayOff = player.isDisplayOff
        let now = ContinuousClock.now
        let stream = player.streamType != .unknown  // a manifest's stream, not a file or image item
        state.withLock { s in
            // Progress: new pictures; the media position when none are shown (audio only, or
            // the display off).
            let progressed =
                (displayOff || status.width == 0)
                ? status.position != nil && status.position != s.lastPosition : status.framesPresented != s.lastFrames
            s.lastFrames = status.framesPresented
            s.lastPosition = status.position
            if let last = s.lastSample, s.started {
                let dt = Self.seconds(now - last)
                if s.stalledSince != nil {
                    s.record.stalledSeconds += dt  // (up to the sample that sees the progress)
                } else if status.state == .playing {
                    s.record.playingSeconds += dt
                    if status.targetRaised { s.record.raisedTargetSeconds += dt }
                    if let b = s.videoBitrate {
                        s.bitrateWeighted += b * dt
                        s.bitrateSeconds += dt
                    }
                }
            }
            if progressed {
                s.stalledSince = nil
                s.lastProgress = now
            } else if s.started, stream, status.state == .playing || status.state == .buffering, s.stalledSince == nil,
                let since = s.lastProgress, Self.seconds(now - since) >= FleetTelemetry.stallThreshold
            {
                // A stall: playing (or buffering again: the player's own verdict after the same
                // half second), and nothing new shown for the threshold. It began at the last
                // progress: that time moves from playing to stalled.
                s.stalledSince = since
                s.record.stalls += 1
                metrics.stalls.increment()
                let lost = Self.seconds(now - since)
                s.record.playingSeconds -= lost
                s.record.stalledSeconds += lost
            }
            s.lastSample = now
            let total = s.record.stalledSeconds + s.record.playingSeconds
            s.record.rebufferRatio = total > 0 ? s.record.stalledSeconds / total : 0
            s.record.timeWeightedBitrate = s.bitrateSeconds > 0 ? s.bitrateWeighted / s.bitrateSeconds : nil
            s.record.clockOffset = status.timeOffset
            if let anchor = status.liveAnchor {
                s.record.liveAnchor = anchor.kind
                switch anchor {
                case .learned(let error), .shared(let error): s.record.liveEdgeError = error
                default: break
                }
            }
            // From the app's target: a box that holds a raised one is that far from its neighbours.
            if status.state == .playing, let latency = status.latency,
                let target = status.requestedTargetLatency ?? status.targetLatency
            {
                s.record.latency.record(latency - target)
                metrics.latencyDistance.record(abs(latency - target))
            }
            if status.targetRaised, let raised = status.targetLatency {
                s.record.raisedTarget = max(s.record.raisedTarget ?? 0, raised)
            }
            // The counts go on across loads; a stopped or reloaded core's start again from 0,
            // and what it counts then is all new.
            if status.framesPresented < s.counted.presented { s.counted.presented = 0 }
            if status.framesDropped < s.counted.dropped { s.counted.dropped = 0 }
            let presented = status.framesPresented - s.counted.presented
            let dropped = status.framesDropped - s.counted.dropped
            metrics.presented.increment(by: Int64(presented))
            metrics.dropped.increment(by: Int64(dropped))
            s.record.framesPresented += presented
            s.record.framesDropped += dropped
            s.counted.presented = status.framesPresented
            s.counted.dropped = status.framesDropped
            if status.failedDownloads < s.counted.failedDownloads { s.counted.failedDownloads = 0 }
            let failed = status.failedDownloads - s.counted.failedDownloads
            metrics.failedDownloads.increment(by: Int64(failed))
            s.record.failedDownloads += failed
            s.counted.failedDownloads = status.failedDownloads
            if status.audioUnderruns < s.counted.underruns { s.counted.underruns = 0 }
            if status.audioXruns < s.counted.xruns { s.counted.xruns = 0 }
            metrics.audioUnderruns.increment(by: Int64(status.audioUnderruns - s.counted.underruns))
            metrics.audioXruns.increment(by: Int64(status.audioXruns - s.counted.xruns))
            s.counted.underruns = status.audioUnderruns
            s.counted.xruns = status.audioXruns
            if let venue, let instruments = metrics.venue { instruments.update(venue, counted: &s.counted) }
        }
        metrics.playing.record(status.state == .playing ? 1 : 0)
        metrics.latency.record(status.latency ?? .nan)
        metrics.target.record(status.targetLatency ?? .nan)
        metrics.requestedTarget.record(status.requestedTargetLatency ?? .nan)
        metrics.targetRaised.record(status.targetRaised ? 1 : 0)
        metrics.buffer.record(status.buffer)
        metrics.rate.record(status.playbackRate)
        metrics.clockOffset.record(status.timeOffset)
        metrics.displayOff.record(displayOff ? 1 : 0)
        metrics.rebufferRatio.record(record.rebufferRatio)
        metrics.audioSilence.record(status.audioSilence)
        metrics.audioDeviceOK.record(status.audioDeviceOK ? 1 : 0)
        if let temperature = metrics.temperature, let celsius = DeviceHealth.cpuTemperature() {
            temperature.record(celsius)
        }
    }

    /// Seconds without progress (no new picture; no media time moving without pictures) while
    /// playing a stream that make a stall: 0.5, two samples.
    public static let stallThreshold = 0.5

    private static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    /// Samples until the calling task is cancelled.
    public func run() async {
        while !Task.isCancelled {
            sample()
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    /// Ends the record: a play that never showed a picture (or played a sound) is an exit
    /// before video start. Returns the record.
    @discardableResult
    public func finish() -> QoERecord {
        sample()
        return state.withLock { s in
            if !s.started { s.record.exitedBeforeVideoStart = true }
            for o in s.observers.values { o.finish() }
            s.observers.removeAll()
            return s.record
        }
    }

    /// The player's events from now on, for one observer (the control socket's `observe
    /// events`); at most 256 waiting, the oldest dropped beyond.
    func events() -> (AsyncStream<SignageEvent>, cancel: @Sendable () -> Void) {
        let (stream, continuation) = AsyncStream.makeStream(
            of: SignageEvent.self, bufferingPolicy: .bufferingNewest(256))
        let id = state.withLock { s in
            s.nextObserver += 1
            s.observers[s.nextObserver] = continuation
            return s.nextObserver
        }
        let cancel: @Sendable () -> Void = { [weak self] in
            _ = self?.state.withLock { $0.observers.removeValue(forKey: id) }
            continuation.finish()
        }
        return (stream, cancel)
    }
}

/// The metric handles ``FleetTelemetry`` updates.
struct Instruments: Sendable {
    let factory: any MetricsFactory
    let presented, dropped, stalls, attempts: Counter
    let playing, latency, target, requestedTarget, targetRaised, buffer, rate, clockOffset, bitrate, startup,
        rebufferRatio, displayOff, audioSilence, audioDeviceOK: Gauge
    let audioUnderruns, audioXruns, failedDownloads: Counter
    let displayConnected: Gauge?  // a display output's only
    let outputChanges: Counter
    let temperature: Gauge?
    let latencyDistance: Recorder
    let venue: VenueInstruments?

    /// With `venue`, the venue proxy's too; with `thermal`, the CPU temperature; with `display`
    /// (a DRM output), whether the display is connected.
    init(factory: any MetricsFactory, venue: Bool, thermal: Bool, display: Bool) {
        self.factory = factory
        func counter(_ name: String) -> Counter { Counter(label: name, factory: factory) }
        func gauge(_ name: String) -> Gauge { Gauge(label: name, factory: factory) }
        presented = counter("marquee_frames_presented_total")
        dropped = counter("marquee_frames_dropped_total")
        stalls = counter("marquee_stalls_total")
        attempts = counter("marquee_attempts_total")
        playing = gauge("marquee_playing")
        latency = gauge("marquee_latency_seconds")
        target = gauge("marquee_target_latency_seconds")
        requestedTarget = gauge("marquee_requested_target_latency_seconds")
        targetRaised = gauge("marquee_target_raised")
        buffer = gauge("marquee_buffer_seconds")
        rate = gauge("marquee_playback_rate")
        clockOffset = gauge("marquee_clock_offset_seconds")
        bitrate = gauge("marquee_video_bitrate_bps")
        startup = gauge("marquee_startup_seconds")
        rebufferRatio = gauge("marquee_rebuffer_ratio")
        displayOff = gauge("marquee_display_off")
        displayConnected = display ? gauge("marquee_display_connected") : nil
        displayConnected?.record(1)  // until the output says otherwise
        audioSilence = gauge("marquee_audio_underrun_seconds")
        audioUnderruns = counter("marquee_audio_underruns_total")
        audioXruns = counter("marquee_audio_xruns_total")
        failedDownloads = counter("marquee_failed_downloads_total")
        audioDeviceOK = gauge("marquee_audio_device_ok")
        outputChanges = counter("marquee_output_changes_total")
        temperature = thermal ? gauge("marquee_cpu_temperature_celsius") : nil
        latencyDistance = Recorder(
            label: "marquee_latency_distance_seconds", dimensions: [], aggregate: true, factory: factory)
        self.venue = venue ? VenueInstruments(factory: factory) : nil
    }

    func error(_ code: String) -> Counter {
        Counter(label: "marquee_errors_total", dimensions: [("code", code)], factory: factory)
    }
}

/// The venue proxy's delivery metrics.
struct VenueInstruments: Sendable {
    let fromCDN, fromPeers, storeHits, servedToPeers, verificationFailures: Counter
    let peersConnected: Gauge

    init(factory: any MetricsFactory) {
        fromCDN = Counter(label: "marquee_venue_bytes_total", dimensions: [("from", "cdn")], factory: factory)
        fromPeers = Counter(label: "marquee_venue_bytes_total", dimensions: [("from", "peers")], factory: factory)
        storeHits = Counter(label: "marquee_venue_store_hits_total", factory: factory)
        servedToPeers = Counter(label: "marquee_venue_bytes_served_to_peers_total", factory: factory)
        verificationFailures = Counter(label: "marquee_venue_verification_failures_total", factory: factory)
        peersConnected = Gauge(label: "marquee_venue_peers_connected", factory: factory)
    }

    func update(_ v: VenueStatistics, counted: inout FleetTelemetry.Counted) {
        fromCDN.increment(by: max(0, v.bytesFromCDN - counted.fromCDN))
        fromPeers.increment(by: max(0, v.bytesFromPeers - counted.fromPeers))
        storeHits.increment(by: Int64(max(0, v.storeHits - counted.storeHits)))
        servedToPeers.increment(by: max(0, v.bytesServedToPeers - counted.servedToPeers))
        verificationFailures.increment(by: Int64(max(0, v.verificationFailures - counted.verificationFailures)))
        counted.fromCDN = max(counted.fromCDN, v.bytesFromCDN)
        counted.fromPeers = max(counted.fromPeers, v.bytesFromPeers)
        counted.storeHits = max(counted.storeHits, v.storeHits)
        counted.servedToPeers = max(counted.servedToPeers, v.bytesServedToPeers)
        counted.verificationFailures = max(counted.verificationFailures, v.verificationFailures)
        peersConnected.record(v.peersConnected)
    }
}

/// Board health read from the kernel.
enum DeviceHealth {
    /// The first thermal zone's temperature (`/sys/class/thermal/thermal_zone0/temp`, millidegrees),
    /// °C; nil where the board exposes none.
    static func cpuTemperature() -> Double? {
        guard let text = try? String(contentsOfFile: "/sys/class/thermal/thermal_zone0/temp", encoding: .utf8),
            let milli = Double(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { return nil }
        return milli / 1000
    }
}
