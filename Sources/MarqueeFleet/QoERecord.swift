public import Foundation
import Marquee

/// One play's quality of experience, as QoE services (Mux, Conviva) and player SDKs' analytics
/// report it: how long it took to start, whether it started at all, how often and how long it
/// stalled, what it played at, how close to the app's latency target it held (and whether a
/// late server made it hold a higher one).
///
/// Built by ``FleetTelemetry`` from the player's events and its status sampled 4 times a
/// second; encoded as JSON (`marquee play` prints it at exit, the control socket answers
/// `get qoe`; dates as ISO 8601 there).
public struct QoERecord: Codable, Sendable, Equatable {
    /// This play's id: the player's ``Player/sessionId``, sent as CMCD `sid` where CMCD is on.
    public var sessionId: String
    /// The operator's customer id (Livery's `customerId`), when given.
    public var customerId: String?
    /// The source playing (the last loaded).
    public var source: String?
    /// When the record began (the player was handed to ``FleetTelemetry``).
    public var startedAt: Date
    /// Sources loaded, the first and every reload (a recovery, a playlist item).
    public var attempts = 0
    /// Seconds from `play()` to the first picture (or sound), as
    /// ``PlayerEvent/firstFrame(seconds:)`` reported it; nil before one.
    public var startupTime: Double?
    /// The play ended before its first picture (or sound): an exit before video start.
    public var exitedBeforeVideoStart = false
    /// A fatal error came before the first picture: a start failure.
    public var startFailed = false
    /// Stalls: a stream playing after its first picture showed nothing new (no picture; no
    /// media time moving when none are shown) for ``FleetTelemetry/stallThreshold``.
    public var stalls = 0
    /// Seconds spent stalled, from the last progress before each stall (to within a sample,
    /// a quarter second).
    public var stalledSeconds = 0.0
    /// Seconds spent playing (not paused, not stalled) after the first picture.
    public var playingSeconds = 0.0
    /// Stalled time over stalled plus playing time; 0 before anything played.
    public var rebufferRatio = 0.0
    /// The video bitrate (the declared bandwidth of the quality playing), weighted by the time
    /// each played, bits per second; nil before a video quality played.
    public var timeWeightedBitrate: Double?
    /// Pictures presented.
    public var framesPresented = 0
    /// Pictures decoded but dropped (late).
    public var framesDropped = 0
    /// How far the latency was from the app's target (the one its neighbours play at), sampled
    /// while playing live; a target raised for a late server does not move it.
    public var latency = LatencyHistogram()
    /// The highest latency target the player held above the app's (the stream's segments
    /// arrived too late for it), seconds; nil while it held the app's.
    public var raisedTarget: Double?
    /// Seconds spent playing with a raised target in force (``raisedTarget``).
    public var raisedTargetSeconds = 0.0
    /// The server clock's offset from the local clock, seconds (the last measured).
    public var clockOffset = 0.0
    /// What placed the live timeline on the server's clock when last sampled
    /// (``PlaybackStatus/liveAnchor``: `availabilityStart`, `programDateTime`, `playlistAnswer`,
    /// `learned`, `shared`); nil on demand and before a live stream plays. Boxes anchored alike present
    /// each picture together, to within ``liveEdgeError`` when learned or shared.
    public var liveAnchor: String?
    /// Live HLS without program date-times: how far off, at most, the player places the
    /// packager's publication, seconds (half the interval it learned it within, the last
    /// ``PlayerEvent/liveEdgeLearned(moved:error:)``); nil on streams dated by their packager
    /// or server, and before it is learned (boxes then differ by up to a segment).
    public var liveEdgeError: Double?
    /// Media segment downloads that failed (``PlaybackStatus/failedDownloads``: an error
    /// status, a reset, a stuck or trickling body, an empty body, bytes that are no segment, a
    /// body that never ends), over every source played, whether the segment came on a later
    /// try or was skipped (a skipped one is in ``errors`` too).
    public var failedDownloads = 0
    /// Errors reported, by ``PlayerError/Code-swift.struct`` name (`network`, `media`, …).
    public var errors: [String: Int] = [:]

    public init(sessionId: String = UUID().uuidString, customerId: String? = nil, startedAt: Date = Date()) {
        self.sessionId = sessionId
        self.customerId = customerId
        self.startedAt = startedAt
    }
}

/// Latency samples by their distance from the target: counts of |latency − target| up to each
/// bound (20, 50, 100, 250, 1000 ms, then above), the largest distance, and the sum of signed
/// distances (its mean tells which side the player keeps to).
public struct LatencyHistogram: Codable, Sendable, Equatable {
    /// The buckets' upper bounds, seconds; the last bucket holds everything above.
    public static let bounds = [0.020, 0.050, 0.100, 0.250, 1.0]
    /// Samples in each bucket (``bounds`` plus one above them).
    public var counts = [Int](repeating: 0, count: LatencyHistogram.bounds.count + 1)
    /// The largest |latency − target| seen, seconds.
    public var maxDistance = 0.0
    /// The sum of (latency − target), seconds.
    public var sum = 0.0

    /// Samples recorded.
    public var samples: Int { counts.reduce(0, +) }

    /// The mean of (latency − target), seconds; nil without samples.
    public var mean: Double? { samples > 0 ? sum / Double(samples) : nil }

    /// Records a sample `distance` = latency − target, seconds.
    public mutating func record(_ distance: Double) {
        let a = abs(distance)
        counts[Self.bounds.firstIndex { a <= $0 } ?? Self.bounds.count] += 1
        maxDistance = max(maxDistance, a)
        sum += distance
    }
}
