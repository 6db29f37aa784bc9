import MarqueeBridge

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
    /// Pictures out of the decoder since ``Player/play()``: beyond those presented, dropped
    /// and queued to be shown, pictures decoded only to be skipped (media fetched from before
    /// the start position).
    public var framesDecoded: Int = 0
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
    /// Above ``requestedTargetLatency`` while the stream's segments arrive too late for the
    /// app's target (``PlayerEvent/targetLatencyChanged(seconds:requested:)``).
    public var targetLatency: Double?
    /// The latency target the app asked for (options, manifest, ``Player/setTargetLatency(_:)``),
    /// seconds; `nil` on demand. What the box's neighbours play at: distances are measured from it.
    public var requestedTargetLatency: Double?
    /// Whether the session holds a target raised above the app's (a late server).
    public var targetRaised: Bool {
        guard let targetLatency, let requestedTargetLatency else { return false }
        return targetLatency > requestedTargetLatency + 0.005
    }
    /// The user delay (time-shift) in effect, seconds.
    public var delay: Double = 0
    /// How far the delay can go now, seconds: what the segment store reaches back.
    public var availableDelay: Double = 0
    /// Bytes of compressed media the segment store holds.
    public var storeBytes: Int = 0
    /// Media segment downloads that failed in this source's session (each try given up or
    /// that brought no segment: an error status, a reset, a deadline, a stuck or trickling
    /// body, an empty body, bytes that are no segment, a body that never ends), whether the
    /// segment came on a later try or was skipped. A new source's session counts from 0.
    public var failedDownloads: Int = 0
    /// Seconds of silence the audio output played because stream audio ran dry after it began
    /// (under-runs), since the core started.
    public var audioSilence: Double = 0
    /// Times stream audio ran dry after it began (each a run of ``audioSilence``), since the
    /// core started.
    public var audioUnderruns: Int = 0
    /// Device xruns (the device starved or overran) the audio output recovered from.
    public var audioXruns: Int = 0
    /// Whether the audio device works: false after it failed (unplugged, gone) until it
    /// is opened again.
    public var audioDeviceOK: Bool = true
    /// What places the live timeline on the server's clock, and so how closely boxes on one
    /// stream agree (nil on demand).
    public var liveAnchor: LiveAnchor?

    /// A status in `state` with nothing measured yet: no latency or position, every count 0,
    /// rate 1.
    package init(state: PlaybackState) {
        self.state = state
    }
}

extension PlaybackStatus {
    /// The core's reading of what is shown: `position` (the presentation time, already mapped
    /// to the session's media time), the picture counts, the A/V offset and the picture size.
    mutating func read(_ core: CoreStatus, position: Double?) {
        self.position = position
        framesPresented = core.framesPresented
        framesDropped = core.framesDropped
        framesDecoded = core.framesDecoded
        avOffset = core.avOffset
        width = core.width
        height = core.height
        audioSilence = Double(core.audioSilenceFrames) / 48_000  // the core's output rate
        audioUnderruns = core.audioUnderruns
        audioXruns = core.audioXruns
        audioDeviceOK = core.audioError == 0
    }
}

/// What places a live stream's timeline on the server's clock (``PlaybackStatus/liveAnchor``):
/// every box anchored the same way on one stream presents each picture at the same instant, to
/// within the anchor's error.
public enum LiveAnchor: Sendable, Hashable {
    /// DASH: the manifest's `availabilityStartTime` (and its segment times) on the server's clock.
    case availabilityStart
    /// HLS: the packager's `EXT-X-PROGRAM-DATE-TIME`s.
    case programDateTime
    /// HLS without date-times, the publication not learned yet: the newest segment's end is
    /// placed at the first playlist answer (a box is up to a segment off).
    case playlistAnswer
    /// HLS without date-times: the packager's publication instant learned from the playlist's
    /// answers, within `error` seconds (``PlayerEvent/liveEdgeLearned(moved:error:)``).
    case learned(error: Double)
    /// HLS without date-times, behind a venue proxy: the publication instant as the proxy
    /// learned it from the answers of every box behind it (told with each playlist), within
    /// `error` seconds: those boxes share it from their first answers.
    case shared(error: Double)
}
