import Foundation
import MarqueeBridge
import MarqueeStreaming

/// The chosen representation of one track and the core track it feeds.
struct TrackPlan: Sendable {
    var kind: CoreTrackKind
    /// The period's index in the manifest it was planned from (a reload may drop earlier ones:
    /// ``period(in:)`` finds it again).
    var periodIndex: Int
    var periodID: String?
    var periodStart: Double
    var adaptationSet: AdaptationSet
    var representation: Representation
    var timeline: RepresentationTimeline
    var coreTrack: Int32
    /// The core's audio track fed the same bytes when the representation muxes audio in.
    var muxedAudioTrack: Int32? = nil
    /// Video: the renditions ABR chooses among (the adaptation set's, aligned segments), empty
    /// when there is no choice.
    var renditions: [Representation] = []

    /// Every core track the segments feed.
    var coreTracks: [Int32] { [coreTrack] + (muxedAudioTrack.map { [$0] } ?? []) }

    /// The index of the plan's period in `mpd`: by `Period@id`, else by its start.
    func period(in mpd: MPD) -> Int? {
        if let periodID, let i = mpd.periods.firstIndex(where: { $0.id == periodID }) { return i }
        return mpd.periods.indices.first {
            abs(RepresentationTimeline.periodStart(mpd: mpd, index: $0) - periodStart) < 1e-3
                && (periodID == nil || mpd.periods[$0].id == nil)
        }
    }
    /// The core tracks by kind (a reload reuses them).
    var coreTracksByKind: [(CoreTrackKind, Int32)] {
        [(kind, coreTrack)] + (muxedAudioTrack.map { [(.audio, $0)] } ?? [])
    }
}
