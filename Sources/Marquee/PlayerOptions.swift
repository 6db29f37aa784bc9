public import Foundation
import MarqueeStreaming

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
        guard spec == "null" || spec == "alsa" || spec.hasPrefix("alsa:") || (spec.hasPrefix("wav:") && spec.count > 4)
        else {
            return nil
        }
        self.spec = spec
    }

    private init(unchecked: String) { self.spec = unchecked }

    /// The output spec (``spec``).
    public var description: String { spec }
}

/// Where video goes (`headless`, `frames:<dir>`, `drm[:<card>[,<connector>]]`).
public struct VideoOutput: Sendable, Hashable, CustomStringConvertible {
    /// The core's output spec.
    public let spec: String

    /// Decodes and presents on the clock without a display (audio-only boxes, CI).
    public static let headless = VideoOutput(unchecked: "headless")
    /// Like headless, and writes `<dir>/frames.tsv`: one row per presented frame with its
    /// server wall time, pts, picture md5, width, height, the playlist item and whether it is
    /// a join's still (``PlayerOptions/joinStill``: shown before its time).
    public static func frames(_ directory: String) -> VideoOutput { VideoOutput(unchecked: "frames:\(directory)") }

    /// A screen driven through DRM/KMS: `card` is `0`, `card1` or a path, `connector` a name
    /// such as `HDMI-A-1` (default: the first connected). Without a card, the first card with a
    /// connected display (`drm`, `drm:,<connector>`), as a board profile without one: a
    /// Raspberry Pi's `card0` can be the v3d render node, which drives no screen.
    public static func drm(card: String? = nil, connector: String? = nil) -> VideoOutput {
        switch (card, connector) {
        case (nil, nil): VideoOutput(unchecked: "drm")
        case (let card?, nil): VideoOutput(unchecked: "drm:\(card)")
        case (let card, let connector?): VideoOutput(unchecked: "drm:\(card ?? ""),\(connector)")
        }
    }

    /// Parses `headless`, `frames:<dir>`, `drm[:<card>[,<connector>[,<WxH>]]]`.
    public init?(spec: String) {
        guard
            spec == "headless" || (spec.hasPrefix("frames:") && spec.count > 7) || spec == "drm"
                || spec.hasPrefix("drm:")
        else {
            return nil
        }
        self.spec = spec
    }

    private init(unchecked: String) { self.spec = unchecked }

    /// The output spec (``spec``).
    public var description: String { spec }
}

/// How a picture fits the screen of a display output. The C spelling is `mq_fit`.
public struct VideoFit: Sendable, Hashable, CustomStringConvertible {
    /// The `mq_fit` value.
    package let rawValue: Int32
    private init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The whole picture, aspect kept, black bars (`MQ_FIT_CONTAIN`).
    public static let contain = VideoFit(0)
    /// The whole screen, aspect kept, the overflow cropped (`MQ_FIT_COVER`).
    public static let cover = VideoFit(1)
    /// Stretched to the screen (`MQ_FIT_FILL`).
    public static let fill = VideoFit(2)
    /// As contain, but never enlarged (`MQ_FIT_SCALEDOWN`).
    public static let scaleDown = VideoFit(3)

    /// Parses `contain`, `cover`, `fill`, `scaledown`.
    public init?(name: String) {
        switch name.lowercased() {
        case "contain": self = .contain
        case "cover": self = .cover
        case "fill": self = .fill
        case "scaledown", "scale-down": self = .scaleDown
        default: return nil
        }
    }

    /// The fit's name: `contain`, `cover`, `fill` or `scaledown`.
    public var description: String { ["contain", "cover", "fill", "scaledown"][Int(rawValue)] }
}

/// Whether closed captions are drawn over the pictures on a display output. Captions found are
/// reported either way (``PlayerEvent/captionChanged(text:position:)``).
public enum CaptionDisplay: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Never drawn.
    case off
    /// Drawn while the sound is muted (``Player/isMuted``): a screen in a bar or a lobby.
    case auto
    /// Always drawn.
    case on

    /// `off`, `auto` or `on`.
    public var description: String { rawValue }
}

/// Everything a ``Player`` is created with. Defaults: ARCHITECTURE.md, "Configuration".
public struct PlayerOptions: Sendable {
    /// Manifest URLs (DASH `.mpd`, HLS `.m3u8`), tried in order; the first that plays is used. Required.
    public var sources: [URL]
    /// The default ``targetLatency``.
    public static let defaultTargetLatency = 3.0

    /// Start muted (``Player/setVolume(_:muted:)`` changes it).
    public var muted: Bool
    /// Mute music, ad breaks and their ramps.
    public var mixing = MixOptions()
    /// Live: how far back the user delay (``Player/setDelay(_:)``) and a pause can reach from
    /// what this player keeps, s (up to 3600): segments are kept in memory for this long as they
    /// are fetched. Default 0: nothing is kept (a box that never time-shifts spends no memory on
    /// it), and a delay, a seek or a resume after a pause reaches back only as far as the
    /// server's window (DVR). An app that offers a delay sets the deepest it offers (e.g. 300).
    public var maxDelay: Double = 0
    /// The most bytes the delay's segment store holds (the oldest segments leave first; a high
    /// bitrate then reaches back less than ``maxDelay``). Default 64 MiB.
    package var maxDelayBytes: Int = 64 << 20
    /// Seconds behind the live edge (server time) at which media is presented, held there by
    /// the latency controller (see ``sync``). Default 3. A manifest's `ServiceDescription`
    /// latency target replaces the default 3 (an explicit other value wins), clamped to its
    /// min/max. 0 disables sync: playback starts one segment (`MPD@maxSegmentDuration`) plus
    /// 0.5 s behind live and is not steered. Change it while playing with
    /// ``Player/setTargetLatency(_:)``. A stream whose segments arrive too late for it plays
    /// at the smallest target that has them in time until they do
    /// (``PlayerEvent/targetLatencyChanged(seconds:requested:)``).
    public var targetLatency: Double
    /// How latency is held: playback-rate bounds, gain, dead band, jump threshold. A manifest's
    /// `ServiceDescription` `PlaybackRate` min/max narrow the rate bounds.
    public var sync = SyncOptions()
    /// Stall recovery: a stall this long (s) reloads the stream; each reload doubles it up to
    /// ``maxRecoveryDelay``, and stable playback resets it. Default 10.
    public var minRecoveryDelay: Double = 10
    /// The longest stall before a reload, s. Default 90.
    public var maxRecoveryDelay: Double = 90
    /// While a backup source plays, the main one (the first of ``sources``) is tried this often
    /// (s); when its manifest loads again the player switches back to it. Default 60.
    public var mainSourceRetryInterval: Double = 60
    /// When no source plays at ``Player/play()``: `false` (default, for unattended boxes) keeps
    /// the outputs and tries the sources again under the recovery delays, with
    /// ``PlayerEvent/recovering(nextDelay:)`` events, until one plays or the player is stopped
    /// (`play()` returns); `true` makes `play()` throw the last source's error (scripts, tests).
    /// Wrong options and output failures always throw.
    public var failFast = false
    /// Where audio goes: ALSA on a box, a WAV file or nothing (``AudioOutput/null``, the
    /// default) elsewhere.
    public var audioOutput: AudioOutput
    /// Where video goes: a screen through DRM/KMS on a box, ``VideoOutput/headless`` (the
    /// default) or a frames log elsewhere.
    public var videoOutput: VideoOutput
    /// Headers sent with every request (tokens, cookies).
    public var httpHeaders: [String: String]
    /// Common Media Client Data (CTA-5004) sent with every request; nil (the default): none.
    public var cmcd: CMCDOptions?
    /// Display outputs: how pictures fit the screen. Default contain.
    public var fit: VideoFit
    /// Display outputs: clockwise rotation in degrees (0, 90, 180, 270).
    public var rotation: Int
    /// Display outputs: a PNG or JPEG path shown until the first picture (nil: black).
    public var poster: String?
    /// Display outputs: when the closed captions carried in the video (CEA-608) are drawn over
    /// the pictures, with libass (white on black, where the stream places each row). Default
    /// ``CaptionDisplay/auto``: while muted.
    public var captions: CaptionDisplay = .auto
    /// Decoders to try first, in order (e.g. `h264_v4l2m2m`, or `h264_vaapi`: the codec's own
    /// decoder with that hardware device's hwaccel); the codec's software decoder is the
    /// fallback, reported by ``PlayerEvent/decoderFallback(_:)``. Empty: software only. With
    /// `video` `drm`, 4:2:0 and hardware pictures go to a YCbCr overlay plane where the driver
    /// takes them (`boards/README.md`, "Hardware decode and scan-out").
    package var decoders: [String] = []
    /// Software decoder threads per track, 0…64. 0 (auto): one for video up to 1920×1080 at
    /// 30 fps, for as long as it keeps well ahead of real time (decoding in under half of the
    /// media time, judged every 2 s; else the track takes libavcodec's frame threads, one per
    /// core and one more, from the next keyframe on), frame threads above 1080p30. Frame
    /// threads cost CPU and pictures held per thread (at 1080p: ~7 % more CPU and ~23 MiB
    /// measured), so one thread is the cheapest while it keeps up.
    package var decodeThreads: Int = 0
    /// Adaptive bitrate: safety margin, buffer levels and caps (a board profile sets the caps:
    /// `decode.max_height`, `decode.max_fps`).
    public var abr = ABROptions()
    /// A video rendition (representation id, see ``Player/qualities``) to play instead of
    /// choosing by throughput; nil: automatic. ``Player/selectedQuality`` changes it while playing.
    public var selectedQuality: String?
    /// The audio language wanted (a language tag such as `fr`, `fr-CA` or `fra`, compared
    /// case-insensitively, whole or by its first subtag, two- and three-letter codes alike: `fr`
    /// takes `fra`, `fre` and `fr-CA`): the DASH adaptation set or HLS audio
    /// rendition with that language. nil, or none with it: the stream's default (DASH `Role`
    /// `main`, HLS `DEFAULT=YES`), else the first.
    public var audioLanguage: String?
    /// Decoded pictures queued ahead of presentation, 2…240; 0 (auto): as many of up to 6 as
    /// fit in 4.5 MiB, at least 3 (720p: 3 of 1.4 MB; 1080p: 3 of 3.1 MB; SD: 6). More rides out
    /// longer decoder stalls, at a picture's memory each.
    package var videoQueueFrames: Int = 0
    /// A live start lands inside a group of pictures: the decoder starts at the
    /// keyframe before the position and catches up to it, unseen (up to a GOP's decoding: ~60 ms
    /// on average for 1 s GOPs at 720p on a PC, far longer on a small board). `true` (default)
    /// shows that keyframe at once, as a still, until the first picture that is due replaces
    /// it: the screen shows the stream instead of black (or the poster) while the decoder
    /// catches up. ``PlayerEvent/firstFrame(seconds:)`` then reports the still; the state turns
    /// `playing`, and position and latency are measured, from the first due picture. Only at
    /// the start: a later reload or jump keeps the last picture on screen instead. `false`:
    /// nothing is shown before the first due picture.
    public var joinStill = true
    /// Every this many seconds while a stream plays (and as ``Player/play()`` begins, at the
    /// first picture, and as ``Player/stop()`` begins its teardown), the process gives back
    /// what it holds but playing does not use (``MemoryUsage/trim()``: the heap's free pages, the
    /// code and read-only data that loading, initialising and opening the stream touched),
    /// 1…3600; nil (the default): never. It acts on the whole process, so it is the process
    /// owner's choice: the `marquee` command, a player process of its own, sets 10. With it set,
    /// heap blocks of 128 KiB or more (segment bodies, demuxer buffers) are also mapped on their
    /// own and given back as they are freed (``MemoryUsage/mapLargeBlocks()``). (720p30 headless:
    /// resident 81 → 57–61 MiB. A page used again comes back with a minor fault; a trim costs
    /// about 3 ms of CPU, most of it those faults. Several players in one process trim at most once
    /// per interval.)
    package var memoryTrimInterval: Double?

    /// How documents fetched from the network are trusted (a pinned key, local directories,
    /// http, a CA file): give it to ``RemoteConfig``, `ContentFeed` (MarqueeSignage) and `ScheduleFeed`. The
    /// player itself uses its ``DocumentSecurity/caFile``: its media requests trust that CA
    /// too (a venue's private origin).
    public var documentSecurity = DocumentSecurity()

    /// Options for playing `sources` (main first, then backups); `targetLatency` in seconds
    /// behind live (0…300, 0 disables sync); `rotation` in degrees clockwise (0, 90, 180,
    /// 270). The other fields start at their documented defaults. Nothing is checked here:
    /// ``Player/init(options:router:logger:)`` validates.
    public init(
        sources: [URL], muted: Bool = false,
        targetLatency: Double = PlayerOptions.defaultTargetLatency,
        audioOutput: AudioOutput = .null, videoOutput: VideoOutput = .headless, httpHeaders: [String: String] = [:],
        fit: VideoFit = .contain, rotation: Int = 0, poster: String? = nil
    ) {
        self.fit = fit
        self.rotation = rotation
        self.poster = poster
        self.sources = sources
        self.muted = muted
        self.targetLatency = targetLatency
        self.audioOutput = audioOutput
        self.videoOutput = videoOutput
        self.httpHeaders = httpHeaders
    }

    /// These options with a board profile's device settings applied: its ALSA PCM, display
    /// output, rotation, decoders, decoder threads, picture queue and the largest stream it
    /// decodes (each option whose row in the option table names a board key).
    public func applying(_ board: BoardProfile) -> PlayerOptions {
        var options = self
        for spec in OptionTable.all {
            guard let value = spec.fromBoard?(board) else { continue }
            // A loaded profile was validated; a value its row refuses leaves the option as it was.
            try? spec.apply(value, to: &options, as: spec.name)
        }
        return options
    }

    /// The options, checked; `requiringSources` false: an empty source list is allowed (a
    /// playlist's player, given each item's source as it plays). Each field in the option table
    /// is checked by its row (``OptionTable``), as the command line, a remote config and the
    /// control socket are; the rest, and the rules between fields, here.
    package func validated(requiringSources: Bool = true) throws(PlayerError) -> PlayerOptions {
        guard !sources.isEmpty || !requiringSources else {
            throw PlayerError(.invalidOptionsSources, "at least one source URL is required")
        }
        var scratch = self
        for spec in OptionTable.all {
            guard let value = spec.read(self), !(spec.name == "sources" && sources.isEmpty) else { continue }
            try spec.apply(value, to: &scratch, as: spec.name)
        }
        _ = try sync.validated()
        _ = try mixing.validated()
        guard maxDelay.isFinite, maxDelay >= 0, maxDelay <= 3600 else {
            throw PlayerError(.invalidOptions, "maxDelay \(maxDelay) s is outside 0…3600")
        }
        guard maxDelayBytes >= 0 else {
            throw PlayerError(.invalidOptions, "maxDelayBytes \(maxDelayBytes) is negative")
        }
        guard minRecoveryDelay <= maxRecoveryDelay else {
            throw PlayerError(
                .invalidOptions,
                "recovery delays \(minRecoveryDelay)…\(maxRecoveryDelay) s: the first is above the second")
        }
        return self
    }
}

/// Adaptive bitrate settings (``PlayerOptions/abr``): the next video rendition is the highest
/// whose bitrate fits in a safety factor × the measured throughput while the buffer is under
/// a safe buffer (10 s by default) seconds; above it a buffer rule may go higher, reaching the top rendition at
/// a target buffer (20 s by default) seconds, never above what the throughput sustains for the buffer ahead.
public struct ABROptions: Sendable, Hashable {
    /// The controller's own options: the defaults are its, stated once.
    private(set) var controller = ABRController.Options()

    /// Fraction of the measured throughput a rendition may use, 0…1. Default 0.85.
    package var safety: Double {
        get { controller.safety }
        set { controller.safety = newValue }
    }
    /// Seconds of buffer under which only throughput decides. Default 6.
    package var bufferSafe: Double {
        get { controller.bufferSafe }
        set { controller.bufferSafe = newValue }
    }
    /// Seconds of buffer at which the buffer rule reaches the top rendition. Default 18.
    package var bufferTarget: Double {
        get { controller.bufferTarget }
        set { controller.bufferTarget = newValue }
    }
    /// Renditions taller than this (pixels) are never chosen (a board profile's decoder limit).
    public var maxHeight: Int? {
        get { controller.maxHeight }
        set { controller.maxHeight = newValue }
    }
    /// Renditions above this frame rate are never chosen (a board profile's decoder limit).
    public var maxFrameRate: Double? {
        get { controller.maxFrameRate }
        set { controller.maxFrameRate = newValue }
    }

    /// The defaults above.
    public init() {}
}

/// Common Media Client Data (CTA-5004 version 1) on every request the player makes: the CDN's
/// logs then carry the session, the object (`ot`, `br`, `d`, `tb`), the buffer (`bl`), startup
/// (`su`), a stall (`bs`), the stream (`sf`, `st`), the rate (`pr`) and the content id (`cid`).
public struct CMCDOptions: Sendable, Hashable {
    /// How the data travel.
    public enum Transmission: String, Sendable, Hashable, CaseIterable {
        /// The `CMCD` query argument (works with any CDN; changes the URL).
        case query
        /// The `CMCD-Request`, `-Object`, `-Status` and `-Session` headers (a browser would need
        /// the CDN's CORS consent; a box does not).
        case headers
    }

    /// Query argument or headers. Default query.
    public var transmission: Transmission
    /// The content id (`cid`), e.g. the stream id; nil: not sent.
    public var contentId: String?
    /// The session id (`sid`); nil: a new UUID for each player (``Player/sessionId``).
    public var sessionId: String?

    public init(transmission: Transmission = .query, contentId: String? = nil, sessionId: String? = nil) {
        self.transmission = transmission
        self.contentId = contentId
        self.sessionId = sessionId
    }
}
