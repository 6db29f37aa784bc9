import Foundation

/// Media sequence numbers for a live playlist of byte ranges, kept true across reloads by the
/// ranges themselves.
///
/// A live playlist of byte ranges into one growing file (ffmpeg's HLS muxer with
/// `-hls_flags single_file`) may keep `EXT-X-MEDIA-SEQUENCE` at 0 while its window slides
/// (measured with ffmpeg 5.1: every reload numbers its five segments 0…4, each time other ones),
/// against RFC 8216 §6.2.1. The player maps segments by number across reloads (an
/// ``HLSLiveAnchor`` keeps the start it gave a number): read as written, such a playlist would
/// never move on. A range of a resource names one segment for good, so each is numbered by it:
/// a segment listed before keeps the number it was given, the ones after it follow on; a
/// listing with none of the last one's segments (reloads missed for longer than the window)
/// goes on after the highest number given (or from its own first number, when higher). The
/// first listing keeps its own numbers, and so does every listing of a playlist numbered
/// right (the numbering then agrees with its own).
///
/// A pure value, one per media playlist URL.
package struct HLSRangeNumbering: Sendable, Equatable {
    private struct Key: Hashable, Sendable {
        var uri: URL
        var offset: Int
        var length: Int
    }

    /// The number given to each segment of the last listing, by its range.
    private var numbers: [Key: UInt64] = [:]
    private var highest: UInt64?

    package init() {}

    /// Whether `playlist` is numbered by its ranges: live, with segments, every one a byte range.
    package static func applies(to playlist: HLSMediaPlaylist) -> Bool {
        playlist.isLive && !playlist.segments.isEmpty && playlist.segments.allSatisfy { $0.byteRange != nil }
    }

    /// `playlist` with its segments numbered by their ranges (unchanged when it is not
    /// ``applies(to:)``, or lists segments older than the last listing's, a stale answer).
    package mutating func renumber(_ playlist: HLSMediaPlaylist) -> HLSMediaPlaylist {
        guard Self.applies(to: playlist) else { return playlist }
        let keys = playlist.segments.map { s in
            Key(uri: s.uri, offset: s.byteRange!.offset, length: s.byteRange!.length)
        }
        let first: UInt64
        if let known = keys.lastIndex(where: { numbers[$0] != nil }) {
            let number = numbers[keys[known]]!
            guard number >= UInt64(known) else { return playlist }
            first = number - UInt64(known)
        } else if let highest {
            first = max(playlist.segments[0].sequence, highest &+ 1)
        } else {
            first = playlist.segments[0].sequence
        }
        // The parser refuses a last segment numbered 2^64 − 1: so may this.
        guard first <= UInt64.max - 1 - UInt64(keys.count) else { return playlist }
        var out = playlist
        for i in out.segments.indices { out.segments[i].sequence = first + UInt64(i) }
        out.mediaSequence = first
        numbers = Dictionary(zip(keys, out.segments.map(\.sequence)), uniquingKeysWith: { a, _ in a })
        highest = max(highest ?? 0, out.segments.last!.sequence)
        return out
    }
}
