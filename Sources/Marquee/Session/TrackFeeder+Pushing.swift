import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// What the core's tracks are given: bytes, segment ends, discontinuities and restarts, the
/// in-band events found, and the placement of the media by its first timestamp.
extension TrackFeeder {
    /// An error event when `scanner` skipped `emsg` boxes (too many or too big in one segment).
    func reportRefused(_ scanner: EventMessageScanner) {
        guard scanner.refused > 0 else { return }
        let why = """
            \(scanner.refused) emsg boxes skipped in one segment (over \(EventMessageScanner.maxEvents), \
            or over \(EventMessageScanner.maxEventBytes) bytes)
            """
        events.send(.error(PlayerError(ManifestError(.tooLarge, why)), fatal: false))
    }

    /// Places the events of `emsg` boxes found in `segment`; unreadable boxes are reported.
    func inbandEvents(_ bodies: [[UInt8]], segment: SegmentReference) {
        var timed: [TimedEvent] = []
        for body in bodies {
            do {
                if let e = try EventMessageBox(body: body).timedEvent(
                    segmentStart: segment.start, ptsOffset: plan.timeline.ptsOffset)
                {
                    timed.append(e)
                }
            } catch {
                events.send(.error(PlayerError(error), fatal: false))
            }
        }
        onEvents(timed, nil)
    }

    func push(_ buffer: ByteBuffer, init isInit: Bool = false) throws {
        guard buffer.readableBytes > 0 else { return }
        try buffer.withUnsafeReadableBytes { raw in
            if !isInit && plan.coreTracks.count > 1 {  // (a muxed stream: one copy for its tracks)
                return try core.push(tracks: plan.coreTracks, bytes: raw)
            }
            for track in plan.coreTracks {
                if isInit {
                    try core.pushInit(track: track, bytes: raw)
                } else {
                    try core.push(track: track, bytes: raw)
                }
            }
        }
    }

    /// Marks the end of a media segment on the core's tracks: a damaged one is skipped there.
    func endSegment() throws {
        for track in plan.coreTracks { try core.endSegment(track: track) }
    }

    /// A new stream begins in the core's tracks (a discontinuity): what they hold plays to its
    /// end, the next segment brings its init segment (fMP4) and is placed at `ptsOffset` (nil:
    /// measured from its first timestamp). When the core cannot take another, the tracks restart.
    func beginStream(ptsOffset: Double?) {
        do {
            for track in plan.coreTracks { try core.pushDiscontinuity(track, ptsOffset: ptsOffset) }
        } catch {
            logger.warning("discontinuity: the tracks restart", metadata: ["error": "\(error)"])
            restartTracks()
            if let ptsOffset { for track in plan.coreTracks { try? core.setTrackOffset(track, ptsOffset: ptsOffset) } }
            return
        }
        pushedInit.withLock { $0 = nil }
        offsetPending.withLock { $0 = ptsOffset == nil }
    }

    /// Flushes the core's tracks: the next segment pushed brings its init segment (fMP4), and a
    /// transport stream's offset is measured again.
    func restartTracks() {
        for track in plan.coreTracks { try? core.resetTrack(track) }
        pushedInit.withLock { $0 = nil }
        offsetPending.withLock { $0 = true }
    }

    /// How far into a transport stream segment its first PTS is looked for.
    static let offsetProbeBytes = 256 << 10

    /// Places the media on the presentation timeline from `bytes`, the start of `segment`: its
    /// first timestamp (MPEG-TS: the first PTS, a video one if any; fMP4: the first `tfdt`) is
    /// presented at the segment's start (its program date-time). Returns false while no
    /// timestamp is in `bytes`. `partial`: more of the segment is coming (a transport stream's
    /// pictures' first PTS is waited for: ``TransportStreamTimestamps/firstPTS(_:partial:)``).
    @discardableResult
    func measureOffset(_ bytes: ByteBuffer, segment: SegmentReference, rep: Representation, partial: Bool = false)
        -> Bool
    {
        guard let first = firstTimestamp(bytes, rep: rep, partial: partial) else { return false }
        let pts = first
        let offset = segment.start - first
        for track in plan.coreTracks { try? core.setTrackOffset(track, ptsOffset: offset) }
        offsetPending.withLock { $0 = false }
        measuredOffset.withLock { $0 = offset }
        if let drift, rep.datedByPackager { drift.withLock { $0.rebase(at: segment.start) } }
        logger.debug(
            "media placed by its first timestamp",
            metadata: ["track": "\(plan.representation.id)", "pts": "\(pts)", "offset": "\(offset)"])
        return true
    }

    /// A segment of media already placed: where its first timestamp lands against its date
    /// (``MediaClockDrift``). Returns false while no timestamp is in `bytes`.
    func sampleDrift(_ bytes: ByteBuffer, segment: SegmentReference, rep: Representation) -> Bool {
        guard let drift, let offset = measuredOffset.withLock({ $0 }) else { return true }
        let partial = bytes.readableBytes < Self.offsetProbeBytes
        guard var first = firstTimestamp(bytes, rep: rep, partial: partial) else { return false }
        if rep.isTransportStream {
            // The 33-bit PTS wraps every 26.5 h: the drift is what is left modulo the wrap.
            let wrap = Double(TransportStreamTimestamps.wrap) / Double(TransportStreamTimestamps.clockRate)
            first += ((segment.start - (first + offset)) / wrap).rounded() * wrap
        }
        drift.withLock { $0.record(position: first + offset, start: segment.start) }
        return true
    }

    /// The first timestamp in `bytes`, the start of a segment of `rep`, in seconds: MPEG-TS,
    /// its first PTS (a video one if any); fMP4, its first `tfdt` in the init segment's
    /// timescale. Nil while none is in `bytes`.
    private func firstTimestamp(_ bytes: ByteBuffer, rep: Representation, partial: Bool) -> Double? {
        if rep.isTransportStream {
            return TransportStreamTimestamps.firstPTS(bytes.readableBytesView, partial: partial).map {
                Double($0) / Double(TransportStreamTimestamps.clockRate)
            }
        }
        return inits.withLock { $0[rep.id] }.flatMap {
            FragmentTime.firstDecodeTime(segment: bytes.readableBytesView, initSegment: $0.readableBytesView)
        }
    }
}
