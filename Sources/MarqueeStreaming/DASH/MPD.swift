import Foundation

/// A DASH Media Presentation Description, as far as Marquee uses it.
///
/// Times are in seconds (`Double`) unless a field says it is in a timescale's ticks.
/// Parse one with ``MPDParser``.
package struct MPD: Sendable, Equatable {
    /// `MPD@type`: a `static` presentation is on demand, a `dynamic` one is live.
    package enum PresentationType: String, Sendable {
        case `static`
        case dynamic
    }

    package var type: PresentationType = .static
    package var id: String?
    package var profiles: String?
    /// `MPD@availabilityStartTime`: the wall-clock anchor of a live presentation.
    package var availabilityStartTime: Date?
    package var publishTime: Date?
    package var mediaPresentationDuration: Double?
    package var minimumUpdatePeriod: Double?
    package var timeShiftBufferDepth: Double?
    package var suggestedPresentationDelay: Double?
    package var maxSegmentDuration: Double?
    package var minBufferTime: Double?
    package var baseURLs: [String] = []
    /// `Location` elements: where to reload the manifest from.
    package var locations: [String] = []
    /// Where the document was finally fetched from (after redirects, or from its `Location`):
    /// its relative URLs resolve against it. Nil: the URL the player was given.
    package var documentURL: URL?
    package var utcTimings: [UTCTiming] = []
    package var serviceDescription: ServiceDescription?
    package var periods: [Period] = []

    package init() {}

    /// `true` for a live (`dynamic`) presentation.
    package var isLive: Bool { type == .dynamic }
}

/// `UTCTiming`: how a client learns the server's clock.
package struct UTCTiming: Sendable, Equatable {
    package var schemeIdUri: String
    package var value: String

    package init(schemeIdUri: String, value: String) {
        self.schemeIdUri = schemeIdUri
        self.value = value
    }

    /// The schemes defined by ISO/IEC 23009-1 (both the 2012 and the 2014 URNs are accepted).
    package enum Scheme: Sendable, Equatable {
        case httpXSDate, httpISO, httpHead, httpNTP, direct, ntp, sntp, unknown
    }

    package var scheme: Scheme {
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
package struct ServiceDescription: Sendable, Equatable {
    /// `Latency@target/min/max`, in milliseconds.
    package var latencyTarget: Double?
    package var latencyMin: Double?
    package var latencyMax: Double?
    /// `PlaybackRate@min/max`.
    package var playbackRateMin: Double?
    package var playbackRateMax: Double?

    package init() {}
}

package struct Period: Sendable, Equatable {
    package var id: String?
    /// `Period@start`; for the first period of a presentation `nil` means 0.
    package var start: Double?
    package var duration: Double?
    package var baseURLs: [String] = []
    package var adaptationSets: [AdaptationSet] = []
    package var eventStreams: [EventStream] = []

    package init() {}
}

package struct AdaptationSet: Sendable, Equatable {
    package var id: String?
    package var contentType: String?
    package var mimeType: String?
    package var codecs: String?
    package var lang: String?
    package var baseURLs: [String] = []
    package var representations: [Representation] = []
    package var eventStreams: [EventStream] = []
    /// `Role` descriptors (e.g. `urn:mpeg:dash:role:2011` / `main`).
    package var roles: [Descriptor] = []
    /// `AudioChannelConfiguration` descriptors given on the AdaptationSet.
    package var audioChannelConfigurations: [Descriptor] = []
    /// Every XML attribute of the element as written (`par`, `sar`, `startWithSAP`, `maxWidth`, ...).
    package var attributes: [String: String] = [:]

    package init() {}
}

/// Language tags as manifests write them (`lang`, HLS `LANGUAGE`): BCP 47 (`fr`, `fr-CA`) or
/// ISO 639-2 (`fra`, and the bibliographic `fre` that packagers still write).
package enum LanguageTag {
    /// Whether `tag` is the language `wanted`: equal ignoring case, or the same language by the
    /// first subtag, two- and three-letter codes alike (`fr` matches `fr-CA`, `fra` and `fre`).
    /// Nil never matches.
    package static func matches(_ tag: String?, _ wanted: String) -> Bool {
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
package struct Descriptor: Sendable, Equatable {
    package var schemeIdUri: String
    package var value: String?

    package init(schemeIdUri: String, value: String? = nil) {
        self.schemeIdUri = schemeIdUri
        self.value = value
    }
}

/// The kind of media a representation carries.
package enum MediaKind: String, Sendable, Equatable {
    case video, audio, text, image, unknown
}

package struct Representation: Sendable, Equatable {
    package var id: String
    package var bandwidth: Int
    package var codecs: String?
    package var mimeType: String?
    package var width: Int?
    package var height: Int?
    package var frameRate: Double?
    package var audioSamplingRate: Int?
    package var baseURLs: [String] = []
    /// The effective segment template: the Representation's, merged over its AdaptationSet's
    /// and Period's (DASH inheritance), or `nil` when none is given.
    package var segmentTemplate: SegmentTemplate?
    /// `SegmentBase` (a single indexed file) is recognised but not played yet.
    package var hasSegmentBase: Bool = false
    /// `contentType`/`mimeType` of the representation or, failing that, its AdaptationSet.
    package var kind: MediaKind = .unknown
    /// The segments also carry the audio (an HLS variant without an audio rendition: muxed
    /// MPEG-TS or fMP4); the player feeds the same bytes to its audio track.
    package var muxesAudio: Bool = false
    /// The segments are an MPEG-2 transport stream (mimeType `video/mp2t`/`audio/mp2t`).
    package var isTransportStream: Bool { mimeType?.hasSuffix("/mp2t") ?? false }
    /// The timeline places the segments by other means than their own timestamps (HLS: program
    /// date-time, or the order of the playlist): `tfdt` may be anything.
    package var placedByPlaylist = false
    /// The segments' starts are dates the packager wrote (live HLS `EXT-X-PROGRAM-DATE-TIME`),
    /// not estimated by the player: a media clock drifting from them is measured
    /// (``placedByPlaylist`` segments only).
    package var datedByPackager = false
    /// Whether the player maps the media's own timestamps (a transport stream's PTS, a fragment's
    /// `tfdt`) onto the timeline by measuring the first segment, rather than trusting them.
    package var measuresTimestamps: Bool { isTransportStream || placedByPlaylist }
    /// `AudioChannelConfiguration` descriptors given on the Representation itself.
    package var audioChannelConfigurations: [Descriptor] = []
    /// Every XML attribute of the element as written (`sar`, `scanType`, `startWithSAP`, ...).
    package var attributes: [String: String] = [:]

    package init(id: String, bandwidth: Int) {
        self.id = id
        self.bandwidth = bandwidth
    }
}

/// `SegmentTemplate`, with DASH defaults applied.
package struct SegmentTemplate: Sendable, Equatable {
    package var media: String?
    package var initialization: String?
    package var timescale: UInt64 = 1
    /// `@duration` in `timescale` ticks (number-based addressing).
    package var duration: UInt64?
    package var startNumber: UInt64 = 1
    package var endNumber: UInt64?
    package var presentationTimeOffset: UInt64 = 0
    /// `@availabilityTimeOffset` in seconds (low-latency DASH); `.infinity` allowed.
    package var availabilityTimeOffset: Double = 0
    package var availabilityTimeComplete: Bool = true
    package var timeline: [SegmentTimelineEntry]?
    /// HLS: the URL of each segment by its number (media sequence), where a template has none.
    package var segmentURLs: [UInt64: URL]?
    /// HLS: the byte range of its URL each segment is (`EXT-X-BYTERANGE`), by number; a segment
    /// without one is its URL whole.
    package var segmentRanges: [UInt64: ByteRange]?
    /// HLS: the byte range of ``initialization`` that is the init section (`EXT-X-MAP:BYTERANGE`).
    package var initializationRange: ByteRange?
    /// HLS: the keys of encrypted segments, by number.
    package var segmentKeys: [UInt64: SegmentKey]?
    /// HLS: the numbers of the segments after an `EXT-X-DISCONTINUITY` (an encoder restart, a
    /// splice: the media's timestamps start afresh there).
    package var discontinuities: Set<UInt64>?

    package init() {}
}

/// One `S` element of a `SegmentTimeline`.
package struct SegmentTimelineEntry: Sendable, Equatable {
    package var t: UInt64?
    package var n: UInt64?
    package var d: UInt64
    /// Repeat count; -1 means "until the next S or the period end".
    package var r: Int

    package init(t: UInt64? = nil, n: UInt64? = nil, d: UInt64, r: Int = 0) {
        self.t = t
        self.n = n
        self.d = d
        self.r = r
    }
}

/// `EventStream`: events announced in the manifest.
package struct EventStream: Sendable, Equatable {
    package var schemeIdUri: String
    package var value: String?
    package var timescale: UInt64 = 1
    package var presentationTimeOffset: UInt64 = 0
    package var events: [Event] = []

    package init(schemeIdUri: String) {
        self.schemeIdUri = schemeIdUri
    }

    package struct Event: Sendable, Equatable {
        package var presentationTime: UInt64 = 0
        package var duration: UInt64?
        package var id: String?
        package var messageData: String?

        package init() {}
    }
}
