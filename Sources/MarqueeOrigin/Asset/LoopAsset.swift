import Foundation
import MarqueeStreaming

/// One VOD segment of a looped representation, indexed from its own boxes.
struct LoopSegment: Sendable, Equatable {
    /// Absolute path of the file.
    var file: String
    /// The file's first `tfdt`.
    var baseMediaDecodeTime: UInt64
    /// `tfdt − tfdt₀` of the representation's first segment: where it sits in the loop.
    var offset: UInt64
    /// Summed sample durations (track timescale).
    var duration: UInt64
}

/// A representation of a VOD asset, indexed for looping: all times in the track's timescale.
struct LoopRepresentation: Sendable {
    var representation: Representation
    var initFile: String
    var track: InitSegmentInfo
    /// Segments whose loop offset is below the loop duration, in loop order.
    var segments: [LoopSegment]
    /// The loop duration D in track ticks.
    var loopTicks: UInt64
    /// The `@duration` announced with `$Number$` addressing: D / count (= the VOD `@duration` for
    /// regular assets).
    var nominalDuration: UInt64

    var id: String { representation.id }
    var timescale: UInt64 { track.timescale }
    var maxSegmentDuration: UInt64 { segments.map(\.duration).max() ?? 0 }

    /// The segment whose loop offset is `offset`, if any.
    func segmentIndex(atOffset offset: UInt64) -> Int? {
        var low = 0
        var high = segments.count - 1
        while low <= high {
            let mid = (low + high) / 2
            if segments[mid].offset == offset { return mid }
            if segments[mid].offset < offset { low = mid + 1 } else { high = mid - 1 }
        }
        return nil
    }
}

/// MPEG-TS segments of an asset: the video and audio muxed, cut where the first video
/// representation's segments are (segment `i` of the loop is `files[i]`).
struct LoopTransportStream: Sendable {
    var files: [String]
    /// The first video PTS of the loop's first segment (90 kHz): the loop's time 0.
    var firstPTS: UInt64
    /// The video representation whose timeline the segments follow.
    var video: LoopRepresentation
}

struct LoopAdaptationSet: Sendable {
    var adaptationSet: AdaptationSet
    var kind: MediaKind
    var representations: [LoopRepresentation]
}

/// A VOD DASH asset loaded and indexed for looping into a live stream.
struct LoopAsset: Sendable {
    var name: String
    var directory: String
    /// The file name of the VOD manifest; the live manifest has the same name.
    var manifestName: String
    var mpd: MPD
    /// The loop duration D in seconds.
    var loopDuration: Double
    /// The main video AdaptationSet, then the main audio one (whichever exist).
    var adaptationSets: [LoopAdaptationSet]
    /// The same media as muxed MPEG-TS segments (`ts/seg-<n>.ts` beside the manifest), one per
    /// segment of the first video representation, when the asset has them.
    var transportStream: LoopTransportStream?

    func representation(id: String) -> LoopRepresentation? {
        for set in adaptationSets { if let rep = set.representations.first(where: { $0.id == id }) { return rep } }
        return nil
    }

    var maxSegmentDuration: Double {
        adaptationSets.flatMap(\.representations).map { Double($0.maxSegmentDuration) / Double($0.timescale) }.max()
            ?? 0
    }
}
