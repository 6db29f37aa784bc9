import Foundation

/// An HLS playlist (RFC 8216 and its draft successor for LL-HLS): a multivariant ("master")
/// playlist listing variants and renditions, or a media playlist listing segments.
package enum HLSPlaylist: Sendable, Equatable {
    case multivariant(HLSMultivariantPlaylist)
    case media(HLSMediaPlaylist)

    /// Parses playlist text; `url` resolves relative URIs. Throws ``ManifestError`` with the line
    /// number of what cannot be used.
    /// Playlists bigger than this are refused.
    package static let maxBytes = HLSParser.maxBytes

    /// Parses a playlist fetched from `url` (relative URIs resolve against it). Refused with
    /// `.tooLarge`: over ``maxBytes``, 500,000 lines, a line over 64 KiB, a tag of over 256
    /// attributes; other defects are `.invalidValue`/`.notAManifest` naming the line.
    package static func parse(_ text: String, url: URL) throws(ManifestError) -> HLSPlaylist {
        try HLSParser(text: text, url: url).parse()
    }
}

/// `EXT-X-STREAM-INF`: one variant stream.
package struct HLSVariant: Sendable, Equatable {
    package var uri: URL
    package var bandwidth: Int
    package var averageBandwidth: Int?
    package var codecs: String?
    package var width: Int?
    package var height: Int?
    package var frameRate: Double?
    /// `AUDIO`: the GROUP-ID of its audio renditions.
    package var audioGroup: String?
}

/// `EXT-X-MEDIA`: an alternative rendition.
package struct HLSRendition: Sendable, Equatable {
    package enum Kind: String, Sendable {
        case audio = "AUDIO"
        case video = "VIDEO"
        case subtitles = "SUBTITLES"
        case closedCaptions = "CLOSED-CAPTIONS"
    }
    package var kind: Kind
    package var groupID: String
    package var name: String
    package var language: String?
    package var isDefault: Bool
    package var autoselect: Bool
    /// nil: the rendition is carried in the variant's own segments.
    package var uri: URL?
}

package struct HLSMultivariantPlaylist: Sendable, Equatable {
    package var variants: [HLSVariant] = []
    package var renditions: [HLSRendition] = []
    package var independentSegments = false
}

/// A byte range of a resource (`EXT-X-BYTERANGE`, `EXT-X-MAP:BYTERANGE`).
package struct HLSByteRange: Sendable, Equatable {
    package var length: Int
    package var offset: Int
}

/// `EXT-X-KEY`.
package struct HLSKey: Sendable, Equatable {
    package enum Method: String, Sendable {
        case none = "NONE"
        case aes128 = "AES-128"
        case sampleAES = "SAMPLE-AES"
    }
    package var method: Method
    package var uri: URL?
    /// The 16-byte IV when given; else the segment's media sequence number is the IV.
    package var iv: [UInt8]?
}

/// `EXT-X-MAP`: the initialization section of the segments that follow.
package struct HLSMap: Sendable, Equatable {
    package var uri: URL
    package var byteRange: HLSByteRange?
}

/// `EXT-X-DATERANGE` (and the `EXT-X-CUE-OUT`/`CUE-IN` ad markers, read as date ranges of class
/// `cue`).
package struct HLSDateRange: Sendable, Equatable {
    package var id: String
    package var classKind: String?
    package var startDate: Date
    package var endDate: Date?
    package var duration: Double?
    package var plannedDuration: Double?
    /// `SCTE35-OUT` / `SCTE35-IN` / `SCTE35-CMD`: the splice_info_section bytes.
    package var scte35Out: [UInt8]?
    package var scte35In: [UInt8]?
    package var scte35Cmd: [UInt8]?
    /// `X-…` client attributes, as written.
    package var clientAttributes: [String: String] = [:]
}

/// One media segment.
package struct HLSSegment: Sendable, Equatable {
    package var uri: URL
    package var duration: Double
    package var title: String?
    /// Media sequence number.
    package var sequence: UInt64
    /// The discontinuity sequence it belongs to.
    package var discontinuitySequence: UInt64
    /// `EXT-X-DISCONTINUITY` before it.
    package var discontinuity: Bool
    package var byteRange: HLSByteRange?
    package var map: HLSMap?
    package var key: HLSKey?
    /// Its first sample's wall-clock time: `EXT-X-PROGRAM-DATE-TIME`, carried forward by the
    /// durations of the segments since the last one.
    package var programDateTime: Date?
    /// `EXT-X-CUE-OUT` before it (an ad break starts here), with its duration when given.
    package var cueOut = false
    package var cueOutDuration: Double?
    /// `EXT-X-CUE-IN` before it (the break ends here).
    package var cueIn = false
    /// LL-HLS: `EXT-X-PART`s of this segment (for the last, unfinished segment: the parts so far).
    package var parts: [HLSPart] = []
}

/// LL-HLS `EXT-X-PART`.
package struct HLSPart: Sendable, Equatable {
    package var uri: URL
    package var duration: Double
    package var independent: Bool
    package var byteRange: HLSByteRange?
}

package struct HLSMediaPlaylist: Sendable, Equatable {
    package enum PlaylistType: String, Sendable {
        case event = "EVENT"
        case vod = "VOD"
    }
    package var version: Int?
    package var targetDuration: Double = 0
    package var mediaSequence: UInt64 = 0
    package var discontinuitySequence: UInt64 = 0
    package var playlistType: PlaylistType?
    package var endList = false
    package var segments: [HLSSegment] = []
    package var dateRanges: [HLSDateRange] = []
    /// LL-HLS: `EXT-X-PART-INF:PART-TARGET`.
    package var partTarget: Double?
    /// LL-HLS: parts listed after the last complete segment (the segment being produced).
    package var pendingParts: [HLSPart] = []
    /// LL-HLS: `EXT-X-PRELOAD-HINT` of TYPE=PART.
    package var preloadHint: URL?
    /// `EXT-X-SERVER-CONTROL`: `CAN-BLOCK-RELOAD`, `HOLD-BACK`, `PART-HOLD-BACK`.
    package var canBlockReload = false
    package var holdBack: Double?
    package var partHoldBack: Double?
    /// `EXT-X-START:TIME-OFFSET`.
    package var startOffset: Double?
    /// The segments' program date-times were placed by the player from when the playlist was
    /// answered (``HLSLiveAnchor``): it has no `EXT-X-PROGRAM-DATE-TIME`.
    package var programDateTimeEstimated = false

    /// Live: segments may still be added (no `EXT-X-ENDLIST`).
    package var isLive: Bool { !endList }
    /// The sequence number the next segment will have.
    /// (The parser refuses a last segment numbered 2^64 − 1; a playlist that sets
    /// EXT-X-MEDIA-SEQUENCE after its segments is numbered by its segments.)
    package var nextSequence: UInt64 { segments.last.map { $0.sequence + 1 } ?? mediaSequence }
    /// Seconds of media listed.
    package var totalDuration: Double { segments.reduce(0) { $0 + $1.duration } }
}
