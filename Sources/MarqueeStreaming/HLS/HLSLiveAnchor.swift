import Foundation

/// Places a live media playlist that has no `EXT-X-PROGRAM-DATE-TIME` on the clock, from the
/// playlist itself: a segment is listed once it is complete, so when the playlist was answered
/// its listing (parts included) had just ended, and segment i starts at the answer time minus
/// the durations from i to the end.
///
/// Reloads keep that mapping through the media sequence numbers: a segment keeps the start it
/// was first given, a new one starts where the one before it ends (EXTINF durations add,
/// across `EXT-X-DISCONTINUITY` too). A reload's answer time only checks the extrapolation
/// (its *residual*: answer time − extrapolated end of the listing). Without drift a residual
/// stays within a target duration either side of zero, wherever in the segment cycle the
/// answers fall (the first answer came at most a segment after the true edge, every later one
/// at most a segment after its own). When ``reloadsBeforeNudge`` reloads in a row all fall
/// outside that band (EXTINF rounded, an encoder whose clock runs off the server's), the new
/// segments are nudged toward it by at most ``maxNudge`` of a target duration per reload: no
/// drift builds up, no start already given moves, and starts never go back.
///
/// Renditions (variants, an audio rendition) answered together may have been updated by the
/// packager a moment apart, one listing a segment the other does not yet: each placed by its
/// own answer they would be a segment apart (audio a segment off the pictures). So a playlist
/// with nothing placed yet takes the starts of a sibling rendition's anchor when they are
/// segmented alike (the same media sequence numbers, the same durations between them).
///
/// A pure value: answer times are server Unix seconds, given by the caller.
package struct HLSLiveAnchor: Sendable, Equatable {
    /// The start given to each segment of the last playlist placed (server Unix seconds), by
    /// media sequence number.
    package private(set) var starts: [UInt64: Double] = [:]
    /// The residuals of the last reloads (newest last), as the extrapolation now stands.
    package private(set) var residuals: [Double] = []
    /// When the packager publishes against the starts given (``HLSPublicationPhase``), from
    /// every answer placed.
    package private(set) var phase = HLSPublicationPhase()
    /// The end the segment after the newest listed would have (server Unix seconds, as
    /// anchored): where the next publication is expected, less the phase. Nil before a placement.
    package private(set) var nextEnd: Double?
    /// How long that next segment is taken to be (the target duration, or the longest listed).
    package private(set) var nextDuration: Double?
    /// The newest media sequence number an answer listed.
    private var newestSequence: UInt64?
    /// Which placement the starts are (a random number at each placement from an answer, one
    /// more at each nudge): a phase measured against one is against the same ends as another
    /// of the same (``HLSPublicationAge/told``, by a venue proxy). Random: two placements, of
    /// this proxy and of one restarted, are told apart.
    package private(set) var placement: UInt32 = 0
    /// The random number of the placement the starts descend from (``placement`` less its
    /// nudges), and how far the nudges since it moved the new segments' starts (seconds): a
    /// phase measured against that placement's ends is `nudged` more against the newest.
    package private(set) var origin: UInt32 = 0
    package private(set) var nudged = 0.0

    /// Reloads in a row outside the band before the new segments are nudged.
    package static let reloadsBeforeNudge = 4
    /// Slack added to the band (answer jitter, the packager's publishing delay), seconds.
    package static let tolerance = 0.25
    /// The largest nudge per reload, as a fraction of the target duration.
    package static let maxNudge = 0.02

    package init() {}

    /// Whether `playlist` is to be placed by an anchor: live, with segments, none of them
    /// dated. Its media is then placed by its own first timestamp (MPEG-TS: the first PTS;
    /// fMP4: the first `tfdt`) at the start the anchor gives its segment.
    package static func isNeeded(for playlist: HLSMediaPlaylist) throws(ManifestError) -> Bool {
        playlist.isLive && !playlist.segments.isEmpty && playlist.segments.allSatisfy { $0.programDateTime == nil }
    }

    /// `playlist` with every segment's ``HLSSegment/programDateTime`` set from this anchor,
    /// answered at server time `answeredAt` (Unix seconds), and
    /// ``HLSMediaPlaylist/programDateTimeEstimated`` set. The anchor remembers the mapping.
    /// `sibling`: the anchor of another rendition of the presentation, whose starts are taken
    /// when this one has none for the listed segments and the two are segmented alike.
    /// `askedAt` … `receivedAt`: when the request was sent and its answer's head came, on the
    /// same clock (the round trip that brackets the listing, for ``phase``; default: the answer
    /// time). `published`: a venue proxy's age of the newest segment, said with the answer.
    package mutating func place(
        _ playlist: HLSMediaPlaylist, answeredAt: Double, askedAt: Double? = nil, receivedAt: Double? = nil,
        sibling: HLSLiveAnchor? = nil, published: HLSPublicationAge? = nil
    ) -> HLSMediaPlaylist {
        guard !playlist.segments.isEmpty else { return playlist }
        if knownSegment(of: playlist) == nil, let sibling, Self.segmentedAlike(playlist, sibling.starts) {
            starts = sibling.starts
            residuals = []
            phase = sibling.phase
            newestSequence = sibling.newestSequence
            placement = sibling.placement
            origin = sibling.origin
            nudged = sibling.nudged
        }
        let edge = answeredAt - playlist.pendingParts.reduce(0) { $0 + $1.duration }
        var placed: [Double]
        if let known = knownSegment(of: playlist) {
            placed = Self.extrapolated(playlist.segments, from: known, starts: starts)
            let firstNew = known + 1 < placed.count ? known + 1 : nil  // what follows the newest known
            let step = nudge(
                residual: edge - Self.end(of: playlist.segments, placed), band: Self.band(playlist),
                canApply: firstNew != nil)
            if let firstNew { for i in firstNew..<placed.count { placed[i] += step } }
            // (The phases measured against the ends before a nudge are as far off the new ones.)
            if firstNew != nil { phase.anchorMoved(by: step) }
            if firstNew != nil && step != 0 {
                placement &+= 1
                nudged += step
            }
        } else {
            placed = Self.backwards(playlist.segments, endingAt: edge)
            residuals = []
            phase = HLSPublicationPhase()
            newestSequence = nil
            placement = UInt32.random(in: 0...UInt32.max)
            origin = placement
            nudged = 0
        }
        starts = Dictionary(zip(playlist.segments.map(\.sequence), placed), uniquingKeysWith: { first, _ in first })
        let newestEnd = Self.end(of: playlist.segments, placed)
        // The next segment is taken to be no longer than the target duration or the longest
        // listed (were it longer, an answer late in its cycle would bound the phase too high).
        let next = max(playlist.targetDuration, playlist.segments.map(\.duration).max() ?? 0)
        // (With parts pending, what was published last is a part: the answer bounds no segment.
        // A stale answer, an older window from a cache, would say the next was not out yet.)
        let newest = playlist.segments[playlist.segments.count - 1].sequence
        if playlist.pendingParts.isEmpty, newest >= newestSequence ?? 0 {
            phase.record(
                sentAt: askedAt ?? answeredAt, receivedAt: receivedAt ?? answeredAt, newestEnd: newestEnd,
                nextDuration: next, published: published)
            newestSequence = newest
            nextEnd = newestEnd + next
            nextDuration = next
        }
        return Self.dated(playlist, placed)
    }

    /// When the newest segment listed in `playlist` was published (an interval on the answers'
    /// clock, as wide as the phase's, around its ``HLSPublicationPhase/best`` value), as the
    /// phase stands; nil when that segment was not placed by this anchor or no answer bounds the
    /// phase yet.
    package func publication(ofNewestIn playlist: HLSMediaPlaylist) -> (low: Double, high: Double)? {
        guard let newest = playlist.segments.last, let start = starts[newest.sequence],
            let interval = phase.interval, let best = phase.best
        else { return nil }
        let (end, half) = (start + newest.duration, (interval.high - interval.low) / 2)
        return (end + best - half, end + best + half)
    }

    // MARK: mapping

    /// The index of the newest listed segment already given a start; nil when none is (the
    /// first playlist, reloads missed for longer than the window, an encoder restarted on new
    /// sequence numbers). A stale answer (an older window) keeps the mapping.
    private func knownSegment(of playlist: HLSMediaPlaylist) -> Int? {
        playlist.segments.lastIndex { starts[$0.sequence] != nil }
    }

    /// Whether `playlist` lists at least two segments placed in `placed` and its durations
    /// between them are the placed ones (within ``tolerance``).
    private static func segmentedAlike(_ playlist: HLSMediaPlaylist, _ placed: [UInt64: Double]) -> Bool {
        let pairs = zip(playlist.segments, playlist.segments.dropFirst()).compactMap { a, b in
            placed[a.sequence].flatMap { start in placed[b.sequence].map { ($0 - start, a.duration) } }
        }
        return !pairs.isEmpty && pairs.allSatisfy { abs($0.0 - $0.1) <= tolerance }
    }

    /// Starts for `segments` whose last one ends at `edge`.
    private static func backwards(_ segments: [HLSSegment], endingAt edge: Double) -> [Double] {
        var out = [Double](repeating: 0, count: segments.count)
        var next = edge
        for i in segments.indices.reversed() {
            next -= segments[i].duration
            out[i] = next
        }
        return out
    }

    /// Starts for `segments` around the one at `known`: the starts given before, and the
    /// EXTINF durations before and after them.
    private static func extrapolated(_ segments: [HLSSegment], from known: Int, starts: [UInt64: Double]) -> [Double] {
        var out = [Double](repeating: 0, count: segments.count)
        out[known] = starts[segments[known].sequence]!
        for i in stride(from: known - 1, through: 0, by: -1) {
            out[i] = starts[segments[i].sequence] ?? out[i + 1] - segments[i].duration
        }
        for i in (known + 1)..<segments.count {
            out[i] = starts[segments[i].sequence] ?? out[i - 1] + segments[i - 1].duration
        }
        return out
    }

    private static func end(of segments: [HLSSegment], _ starts: [Double]) -> Double {
        starts[starts.count - 1] + segments[segments.count - 1].duration
    }

    private static func dated(_ playlist: HLSMediaPlaylist, _ starts: [Double]) -> HLSMediaPlaylist {
        var out = playlist
        for i in out.segments.indices { out.segments[i].programDateTime = Date(timeIntervalSince1970: starts[i]) }
        out.programDateTimeEstimated = true
        return out
    }

    // MARK: soft re-anchoring

    /// How far a residual may be from zero without drift: a target duration (the longest
    /// segment if longer) plus ``tolerance``.
    private static func band(_ playlist: HLSMediaPlaylist) -> Double {
        max(playlist.targetDuration, playlist.segments.map(\.duration).max() ?? 0) + tolerance
    }

    /// Records `residual` and returns the shift for the new segments: nonzero only when the
    /// last ``reloadsBeforeNudge`` residuals are all beyond `band` on the same side and there
    /// are new segments to move. The residuals kept are updated by the shift.
    private mutating func nudge(residual: Double, band: Double, canApply: Bool) -> Double {
        residuals = Array((residuals + [residual]).suffix(Self.reloadsBeforeNudge))
        guard canApply, residuals.count == Self.reloadsBeforeNudge, let low = residuals.min(),
            let high = residuals.max()
        else { return 0 }
        let limit = Self.maxNudge * (band - Self.tolerance)
        let step: Double
        if low > band {
            step = min(low - band, limit)  // the listing ends later than extrapolated: EXTINF short of real time
        } else if high < -band {
            step = -min(-band - high, limit)  // it ends earlier: EXTINF longer than real time
        } else {
            return 0
        }
        residuals = residuals.map { $0 - step }
        return step
    }
}
