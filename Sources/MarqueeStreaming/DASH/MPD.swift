import Foundation

/// A DASH Media Presentation Description, as far as Marquee uses it.
///
/// Times are in seconds (`Double`) unless a field says it is in a timescale's ticks.
/// Parse one with ``MPDParser``.
public struct MPD: Sendable, Equatable {
    /// `MPD@type`: a `static` presentation is on demand, a `dynamic` one is live.
    public enum PresentationType: String, Sendable {
        case `static`
        case dynamic
    }

    public var type: PresentationType = .static
    public var id: String?
    public var profiles: String?
    /// `MPD@availabilityStartTime`: the wall-clock anchor of a live presentation.
    public var availabilityStartTime: Date?
    public var publishTime: Date?
    public var mediaPresentationDuration: Double?
    public var minimumUpdatePeriod: Double?
    public var timeShiftBufferDepth: Double?
    public var suggestedPresentationDelay: Double?
    public var maxSegmentDuration: Double?
    public var minBufferTime: Double?
    public var baseURLs: [String] = []
    /// `Location` elements: where to reload the manifest from.
    public var locations: [String] = []
    /// Where the document was finally fetched from (after redirects, or from its `Location`):
    /// its relative URLs resolve against it. Nil: the URL the player was given.
    public var documentURL: URL?
    public var utcTimings: [UTCTiming] = []
    public var serviceDescription: ServiceDescription?
    public var periods: [Period] = []

    public init() {}

    /// `true` for a live (`dynamic`) presentation.
    public var isLive: Bool { type == .dynamic }
}

/// `UTCTiming`: how a client learns the server's clock.
public struct UTCTiming: Sendable, Equatable {
    public var schemeIdUri: String
    public var value: String

    public init(schemeIdUri: String, value: String) {
        self.schemeIdUri = schemeIdUri
        self.value = value
    }

    /// The schemes defined by ISO/IEC 23009-1 (both the 2012 and the 2014 URNs are accepted).
    public enum Scheme: Sendable, Equatable {
        case httpXSDate, httpISO, httpHead, httpNTP, direct, ntp, sntp, unknown
    }

    public var scheme: Scheme {
        let s = schemeIdUri.lowercased()
        guard s.hasPrefix("urn:mpeg:dash:utc:") else { return .unknown }
        let name = s.dropFirst("urn:mpeg:dash:utc:".count).split(separator: ":").first.map(String.init) ?? ""
        switch name {
        case "http-xsdate": return .httpXSDate
        case "http-iso": return .httpISO
        case "http-head": return .httpHead
        case "http-ntp": return .httpNTP
        case "direct": return .direct
        case "ntp": return .ntp
        case "sntp": return .sntp
        default: return .unknown
        }
    }
}

/// `ServiceDescription`: the operator's latency and playback-rate wishes.
public struct ServiceDescription: Sendable, Equatable {
    /// `Latency@target/min/max`, in milliseconds.
    public var latencyTarget: Double?
    public var latencyMin: Double?
    public var latencyMax: Double?
    /// `PlaybackRate@min/max`.
    public var playbackRateMin: Double?
    public var playbackRateMax: Double?

    public init() {}
}

public struct Period: Sendable, Equatable {
    public var id: String?
    /// `Period@start`; for the first period of a presentation `nil` means 0.
    public var start: Double?
    public var duration: Double?
    public var baseURLs: [String] = []
    public var adaptationSets: [AdaptationSet] = []
    public var eventStreams: [EventStream] = []

    public init() {}
}

public struct AdaptationSet: Sendable, Equatable {
    public var id: String?
    public var contentType: String?
    public var mimeType: String?
    public var codecs: String?
    public var lang: String?
    public var baseURLs: [String] = []
    public var representations: [Representation] = []
    public var eventStreams: [EventStream] = []
    /// `Role` descriptors (e.g. `urn:mpeg:dash:role:2011` / `main`).
    public var roles: [Descriptor] = []
    /// `AudioChannelConfiguration` descriptors given on the AdaptationSet.
    public var audioChannelConfigurations: [Descriptor] = []
    /// Every XML attribute of the element as written (`par`, `sar`, `startWithSAP`, `maxWidth`, ...).
    public var attributes: [String: String] = [:]

    public init() {}
}

/// Language tags as manifests write them (`lang`, HLS `LANGUAGE`): BCP 47 (`fr`, `fr-CA`) or
/// ISO 639-2 (`fra`, and the bibliographic `fre` that packagers still write).
public enum LanguageTag {
    /// Whether `tag` is the language `wanted`: equal ignoring case, or the same language by the
    /// first subtag, two- and three-letter codes alike (`fr` matches `fr-CA`, `fra` and `fre`).
    /// Nil never matches.
    public static func matches(_ tag: String?, _ wanted: String) -> Bool {
        guard let tag, !wanted.isEmpty else { return false }
        if tag.lowercased() == wanted.lowercased() { return true }
        return language(tag) == language(wanted)
    }

    /// The first subtag as a two-letter code where ISO 639 has one (Foundation's table), else as
    /// written, lower-cased.
    static func language(_ tag: String) -> String {
        let primary = String(tag.lowercased().split(separator: "-").first ?? "")
        let terminology = bibliographic[primary] ?? primary
        return Locale.LanguageCode(terminology).identifier(.alpha2) ?? terminology
    }

    /// ISO 639-2/B codes and their /T equivalents (Foundation knows only the latter).
    static let bibliographic = [
        "alb": "sqi", "arm": "hye", "baq": "eus", "bur": "mya", "chi": "zho", "cze": "ces", "dut": "nld", "fre": "fra",
        "geo": "kat",
        "ger": "deu", "gre": "ell", "ice": "isl", "mac": "mkd", "mao": "mri", "may": "msa", "per": "fas", "rum": "ron",
        "slo": "slk",
        "tib": "bod", "wel": "cym",
    ]
}

/// A DASH descriptor element (`Role`, `AudioChannelConfiguration`, `Accessibility`, ...).
public struct Descriptor: Sendable, Equatable {
    public var schemeIdUri: String
    public var value: String?

    public init(schemeIdUri: String, value: String? = nil) {
        self.schemeIdUri = schemeIdUri
        self.value = value
    }
}

/// The kind of media a representation carries.
public enum MediaKind: String, Sendable, Equatable {
    case video, audio, text, image, unknown
}

public struct Representation: Sendable, Equatable {
    public var id: String
    public var bandwidth: Int
    public var codecs: String?
    public var mimeType: String?
    public var width: Int?
    public var height: Int?
    public var frameRate: Double?
    public var audioSamplingRate: Int?
    public var baseURLs: [String] = []
    /// The effective segment template: the Representation's, merged over its AdaptationSet's
    /// and Period's (DASH inheritance), or `nil` when none is given.
    public var segmentTemplate: SegmentTemplate?
    /// `SegmentBase` (a single indexed file) is recognised but not played yet.
    public var hasSegmentBase: Bool = false
    /// `contentType`/`mimeType` of the representation or, failing that, its AdaptationSet.
    public var kind: MediaKind = .unknown
    /// The segments also carry the audio (an HLS variant without an audio rendition: muxed
    /// MPEG-TS or fMP4); the player feeds the same bytes to its audio track.
    public var muxesAudio: Bool = false
    /// The segments are an MPEG-2 transport stream (mimeType `video/mp2t`/`audio/mp2t`).
    public var isTransportStream: Bool { mimeType?.hasSuffix("/mp2t") ?? false }
    /// The timeline places the segments by other means than their own timestamps (HLS: program
    /// date-time, or the order of the playlist): `tfdt` may be anything.
    public var placedByPlaylist = false
    /// The segments' starts are dates the packager wrote (live HLS `EXT-X-PROGRAM-DATE-TIME`),
    /// not estimated by the player: a media clock drifting from them is measured
    /// (``placedByPlaylist`` segments only).
    public var datedByPackager = false
    /// Whether the player maps the media's own timestamps (a transport stream's PTS, a fragment's
    /// `tfdt`) onto the timeline by measuring the first segment, rather than trusting them.
    public var measuresTimestamps: Bool { isTransportStream || placedByPlaylist }
    /// `AudioChannelConfiguration` descriptors given on the Representation itself.
    public var audioChannelConfigurations: [Descriptor] = []
    /// Every XML attribute of the element as written (`sar`, `scanType`, `startWithSAP`, ...).
    public var attributes: [String: String] = [:]

    public init(id: String, bandwidth: Int) {
        self.id = id
        self.bandwidth = bandwidth
    }
}

/// `SegmentTemplate`, with DASH defaults applied.
public struct SegmentTemplate: Sendable, Equatable {
    public var media: String?
    public var initialization: String?
    public var timescale: UInt64 = 1
    /// `@duration` in `timescale` ticks (number-based addressing).
    public var duration: UInt64?
    public var startNumber: UInt64 = 1
    public var endNumber: UInt64?
    public var presentationTimeOffset: UInt64 = 0
    /// `@availabilityTimeOffset` in seconds (low-latency DASH); `.infinity` allowed.
    public var availabilityTimeOffset: Double = 0
    public var availabilityTimeComplete: Bool = true
    public var timeline: [SegmentTimelineEntry]?
    /// HLS: the URL of each segment by its number (media sequence), where a template has none.
    public var segmentURLs: [UInt64: URL]?
    /// HLS: the byte range of its URL each segment is (`EXT-X-BYTERANGE`), by number; a segment
    /// without one is its URL whole.
    public var segmentRanges: [UInt64: ByteRange]?
    /// HLS: the byte range of ``initialization`` that is the init section (`EXT-X-MAP:BYTERANGE`).
    public var initializationRange: ByteRange?
    /// HLS: the keys of encrypted segments, by number.
    public var segmentKeys: [UInt64: SegmentKey]?
    /// HLS: the numbers of the segments after an `EXT-X-DISCONTINUITY` (an encoder restart, a
    /// splice: the media's timestamps start afresh there).
    public var discontinuities: Set<UInt64>?

    public init() {}
}

/// One `S` element of a `SegmentTimeline`.
public struct SegmentTimelineEntry: Sendable, Equatable {
    public var t: UInt64?
    public var n: UInt64?
    public var d: UInt64
    /// Repeat count; -1 means "until the next S or the period end".
    public var r: Int

    public init(t: UInt64? = nil, n: UInt64? = nil, d: UInt64, r: Int = 0) {
        self.t = t
        self.n = n
        self.d = d
        self.r = r
    }
}

/// `EventStream`: events announced in the manifest.
public struct EventStream: Sendable, Equatable {
    public var schemeIdUri: String
    public var value: String?
    public var timescale: UInt64 = 1
    public var presentationTimeOffset: UInt64 = 0
    public var events: [Event] = []

    public init(schemeIdUri: String) {
        self.schemeIdUri = schemeIdUri
    }

    public struct Event: Sendable, Equatable {
        public var presentationTime: UInt64 = 0
        public var duration: UInt64?
        public var id: String?
        public var messageData: String?

        public init() {}
    }
}
