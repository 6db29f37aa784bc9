import Foundation

/// Where audio goes. The C spelling is the output spec string (`alsa:default`, `wav:/tmp/x.wav`, `null`).
public struct AudioOutput: Sendable, Hashable, CustomStringConvertible {
    /// The core's output spec.
    public let spec: String

    /// An ALSA PCM through alsa-lib (`default`, `hw:0,0`, `sysdefault:CARD=vc4hdmi0`, or a plugin
    /// such as `file:'/tmp/out.raw',raw`).
    public static func alsa(_ pcm: String = "default") -> AudioOutput { AudioOutput(unchecked: "alsa:\(pcm)") }
    /// A 16-bit PCM WAV file holding exactly what was played (paced in real time).
    public static func wav(_ path: String) -> AudioOutput { AudioOutput(unchecked: "wav:\(path)") }
    /// Discards audio, still paced in real time (headless boxes, CI).
    public static let null = AudioOutput(unchecked: "null")

    /// Parses `alsa[:pcm]`, `wav:<path>`, `null`.
    public init?(spec: String) {
        guard spec == "null" || spec == "alsa" || spec.hasPrefix("alsa:") || (spec.hasPrefix("wav:") && spec.count > 4) else {
            return nil
        }
        self.spec = spec
    }

    private init(unchecked: String) { self.spec = unchecked }

    public var description: String { spec }
}

/// Where video goes (`headless`, `frames:<dir>`).
public struct VideoOutput: Sendable, Hashable, CustomStringConvertible {
    public let spec: String

    /// Decodes and presents on the clock without a display (audio-only boxes, CI).
    public static let headless = VideoOutput(unchecked: "headless")
    /// Like headless, and writes `<dir>/frames.tsv`: one row per presented frame with its
    /// server wall time, pts, picture md5, width and height.
    public static func frames(_ directory: String) -> VideoOutput { VideoOutput(unchecked: "frames:\(directory)") }

    /// Parses `headless`, `frames:<dir>`.
    public init?(spec: String) {
        guard spec == "headless" || (spec.hasPrefix("frames:") && spec.count > 7) else { return nil }
        self.spec = spec
    }

    private init(unchecked: String) { self.spec = unchecked }

    public var description: String { spec }
}

/// Everything a ``Player`` is created with. Defaults follow DESIGN.md §7.
public struct PlayerOptions: Sendable {
    /// Manifest URLs (DASH `.mpd`), tried in order; the first that plays is used. Required.
    public var sources: [URL]
    /// Start playing as soon as the player is created by ``MarqueeSDK`` (the CLI plays explicitly).
    public var autoplay: Bool
    public var muted: Bool
    /// Seconds behind the live edge (server time) at which media is presented. Default 3.
    public var targetLatency: Double
    public var audioOutput: AudioOutput
    public var videoOutput: VideoOutput
    /// Headers sent with every request (tokens, cookies).
    public var httpHeaders: [String: String]

    public init(
        sources: [URL], autoplay: Bool = false, muted: Bool = false, targetLatency: Double = 3,
        audioOutput: AudioOutput = .null, videoOutput: VideoOutput = .headless, httpHeaders: [String: String] = [:]
    ) {
        self.sources = sources
        self.autoplay = autoplay
        self.muted = muted
        self.targetLatency = targetLatency
        self.audioOutput = audioOutput
        self.videoOutput = videoOutput
        self.httpHeaders = httpHeaders
    }

    func validated() throws(PlayerError) -> PlayerOptions {
        guard !sources.isEmpty else { throw PlayerError(.invalidOptionsSources, "at least one source URL is required") }
        for url in sources where !["http", "https"].contains(url.scheme?.lowercased() ?? "") {
            throw PlayerError(.invalidOptionsSources, "source \(url.absoluteString) is not an http(s) URL")
        }
        guard targetLatency.isFinite, targetLatency >= 0, targetLatency <= 300 else {
            throw PlayerError(.invalidOptions, "targetLatency \(targetLatency) s is outside 0…300")
        }
        return self
    }
}
