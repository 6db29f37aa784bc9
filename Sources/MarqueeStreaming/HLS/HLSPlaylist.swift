import Foundation

/// An HLS playlist (RFC 8216 and its draft successor for LL-HLS): a multivariant ("master")
/// playlist listing variants and renditions, or a media playlist listing segments.
public enum HLSPlaylist: Sendable, Equatable {
    case multivariant(HLSMultivariantPlaylist)
    case media(HLSMediaPlaylist)

    /// Parses playlist text; `url` resolves relative URIs. Throws ``ManifestError`` with the line
    /// number of what cannot be used.
    /// Playlists bigger than this are refused.
    public static let maxBytes = HLSParser.maxBytes

    /// Parses a playlist fetched from `url` (relative URIs resolve against it). Refused with
    /// `.tooLarge`: over ``maxBytes``, 500,000 lines, a line over 64 KiB, a tag of over 256
    /// attributes; other defects are `.invalidValue`/`.notAManifest` naming the line.
    public static func parse(_ text: String, url: URL) throws(ManifestError) -> HLSPlaylist {
        try HLSParser(text: text, url: url).parse()
    }
}

/// `EXT-X-STREAM-INF`: one variant stream.
public struct HLSVariant: Sendable, Equatable {
    public var uri: URL
    public var bandwidth: Int
    public var averageBandwidth: Int?
    public var codecs: String?
    public var width: Int?
    public var height: Int?
    public var frameRate: Double?
    /// `AUDIO`: the GROUP-ID of its audio renditions.
    public var audioGroup: String?
}

/// `EXT-X-MEDIA`: an alternative rendition.
public struct HLSRendition: Sendable, Equatable {
    public enum Kind: String, Sendable {
        case audio = "AUDIO"
        case video = "VIDEO"
        case subtitles = "SUBTITLES"
        case closedCaptions = "CLOSED-CAPTIONS"
    }
    public var kind: Kind
    public var groupID: String
    public var name: String
    public var language: String?
    public var isDefault: Bool
    public var autoselect: Bool
    /// nil: the rendition is carried in the variant's own segments.
    public var uri: URL?
}

public struct HLSMultivariantPlaylist: Sendable, Equatable {
    public var variants: [HLSVariant] = []
    public var renditions: [HLSRendition] = []
    public var independentSegments = false
}

/// A byte range of a resource (`EXT-X-BYTERANGE`, `EXT-X-MAP:BYTERANGE`).
public struct HLSByteRange: Sendable, Equatable {
    public var length: Int
    public var offset: Int
}

/// `EXT-X-KEY`.
public struct HLSKey: Sendable, Equatable {
    public enum Method: String, Sendable {
        case none = "NONE"
        case aes128 = "AES-128"
        case sampleAES = "SAMPLE-AES"
    }
    public var method: Method
    public var uri: URL?
    /// The 16-byte IV when given; else the segment's media sequence number is the IV.
    public var iv: [UInt8]?
}

/// `EXT-X-MAP`: the initialization section of the segments that follow.
public struct HLSMap: Sendable, Equatable {
    public var uri: URL
    public var byteRange: HLSByteRange?
}

/// `EXT-X-DATERANGE` (and the `EXT-X-CUE-OUT`/`CUE-IN` ad markers, read as date ranges of class
/// `cue`).
public struct HLSDateRange: Sendable, Equatable {
    public var id: String
    public var classKind: String?
    public var startDate: Date
    public var endDate: Date?
    public var duration: Double?
    public var plannedDuration: Double?
    /// `SCTE35-OUT` / `SCTE35-IN` / `SCTE35-CMD`: the splice_info_section bytes.
    public var scte35Out: [UInt8]?
    public var scte35In: [UInt8]?
    public var scte35Cmd: [UInt8]?
    /// `X-…` client attributes, as written.
    public var clientAttributes: [String: String] = [:]
}

/// One media segment.
public struct HLSSegment: Sendable, Equatable {
    public var uri: URL
    public var duration: Double
    public var title: String?
    /// Media sequence number.
    public var sequence: UInt64
    /// The discontinuity sequence it belongs to.
    public var discontinuitySequence: UInt64
    /// `EXT-X-DISCONTINUITY` before it.
    public var discontinuity: Bool
    public var byteRange: HLSByteRange?
    public var map: HLSMap?
    public var key: HLSKey?
    /// Its first sample's wall-clock time: `EXT-X-PROGRAM-DATE-TIME`, carried forward by the
    /// durations of the segments since the last one.
    public var programDateTime: Date?
    /// `EXT-X-CUE-OUT` before it (an ad break starts here), with its duration when given.
    public var cueOut = false
    public var cueOutDuration: Double?
    /// `EXT-X-CUE-IN` before it (the break ends here).
    public var cueIn = false
    /// LL-HLS: `EXT-X-PART`s of this segment (for the last, unfinished segment: the parts so far).
    public var parts: [HLSPart] = []
}

/// LL-HLS `EXT-X-PART`.
public struct HLSPart: Sendable, Equatable {
    public var uri: URL
    public var duration: Double
    public var independent: Bool
    public var byteRange: HLSByteRange?
}

public struct HLSMediaPlaylist: Sendable, Equatable {
    public enum PlaylistType: String, Sendable {
        case event = "EVENT"
        case vod = "VOD"
    }
    public var version: Int?
    public var targetDuration: Double = 0
    public var mediaSequence: UInt64 = 0
    public var discontinuitySequence: UInt64 = 0
    public var playlistType: PlaylistType?
    public var endList = false
    public var segments: [HLSSegment] = []
    public var dateRanges: [HLSDateRange] = []
    /// LL-HLS: `EXT-X-PART-INF:PART-TARGET`.
    public var partTarget: Double?
    /// LL-HLS: parts listed after the last complete segment (the segment being produced).
    public var pendingParts: [HLSPart] = []
    /// LL-HLS: `EXT-X-PRELOAD-HINT` of TYPE=PART.
    public var preloadHint: URL?
    /// `EXT-X-SERVER-CONTROL`: `CAN-BLOCK-RELOAD`, `HOLD-BACK`, `PART-HOLD-BACK`.
    public var canBlockReload = false
    public var holdBack: Double?
    public var partHoldBack: Double?
    /// `EXT-X-START:TIME-OFFSET`.
    public var startOffset: Double?
    /// The segments' program date-times were placed by the player from when the playlist was
    /// answered (``HLSLiveAnchor``): it has no `EXT-X-PROGRAM-DATE-TIME`.
    public var programDateTimeEstimated = false

    /// Live: segments may still be added (no `EXT-X-ENDLIST`).
    public var isLive: Bool { !endList }
    /// The sequence number the next segment will have.
    /// (The parser refuses a last segment numbered 2^64 − 1; a playlist that sets
    /// EXT-X-MEDIA-SEQUENCE after its segments is numbered by its segments.)
    public var nextSequence: UInt64 { segments.last.map { $0.sequence + 1 } ?? mediaSequence }
    /// Seconds of media listed.
    public var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }
}
