import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// Where the segments are: when one is available, how far ahead an on-demand stream is fetched,
/// the manifest reloaded, the period after the plan's, a rendition's timeline.
extension TrackFeeder {
    /// Sleeps until the server makes `segment` available (live; on its clock).
    /// Returns whether it had to wait.
    @discardableResult
    func waitUntilAvailable(_ segment: SegmentReference, _ timeline: RepresentationTimeline) async -> Bool {
        guard let available = timeline.availabilityStart(of: segment) else { return false }
        let wait = available.timeIntervalSince(clock.now())
        if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 5)) }
        return wait > 0
    }

    func waitForReadAhead(_ segment: SegmentReference) async {
        while !Task.isCancelled, let pos = position(), segment.start - pos > Self.readAhead {
            try? await Task.sleep(for: .milliseconds(500))
        }
    }

    /// The timeline of a manifest requested at or after monotonic time `since` (default: in the
    /// last 0.1 s).
    func reloadedTimeline(since: Double? = nil) async -> RepresentationTimeline? {
        let (mpd, error) = await manifest.refreshed(requestedSince: since ?? Monotonic.now() - 0.1)
        if let error { events.send(.error(error, fatal: false)) }
        return timeline(of: mpd)
    }

    /// The timeline of the manifest held if it was requested at or after monotonic time `since`
    /// (another track's reload, the live anchor's probe), without a request; nil: none such.
    func heldTimeline(since: Double) async -> RepresentationTimeline? {
        guard let mpd = await manifest.held(requestedSince: since) else { return nil }
        return timeline(of: mpd)
    }

    private func timeline(of mpd: MPD?) -> RepresentationTimeline? {
        if let mpd {
            onEvents(nil, mpd)  // its EventStreams (repeats are ignored)
            latestMPD.withLock { $0 = mpd }
        }
        let plan = self.plan
        guard let mpd, let index = plan.period(in: mpd) else { return nil }
        for set in mpd.periods[index].adaptationSets {
            guard let rep = set.representations.first(where: { $0.id == plan.representation.id }) else { continue }
            let edge = mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
            return try? RepresentationTimeline(
                mpd: mpd, period: index, adaptationSet: set, representation: rep, manifestURL: manifest.url,
                liveEdge: edge)
        }
        return nil
    }

    /// The next period's timeline when the plan's period ends at or before `time` (or `waited`:
    /// what should follow `time` in it is overdue, and the new period's first segment is
    /// about to be due) and the newest manifest lists the period
    /// after it (a new Period: an encoder restart, a stitched ad): the
    /// plan moves there (the adaptation set of the same kind and language, the representation
    /// of the same id or nearest bandwidth) and a new stream begins in the core's tracks, placed
    /// by the new period's presentationTimeOffset. Nil while there is none.
    func nextPeriod(after time: Double, waited: Bool) -> RepresentationTimeline? {
        let mpd = latestMPD.withLock { $0 }
        let plan = self.plan
        guard let index = plan.period(in: mpd), index + 1 < mpd.periods.count else { return nil }
        let start = RepresentationTimeline.periodStart(mpd: mpd, index: index + 1)
        // A segment beginning before the period's end is the period's (an audio segment may
        // run past it): the period is over once it is in, or when what follows is overdue (an
        // encoder that stopped mid-segment never completes it).
        let complete = start <= time + 0.001
        guard complete || (waited && start <= time + 2 * SegmentChoice.segmentDuration(plan.timeline))
        else { return nil }
        let want = plan.kind == .video ? MediaKind.video : .audio
        let sets = mpd.periods[index + 1].adaptationSets.filter { set in
            set.representations.contains { $0.kind == want && $0.segmentTemplate?.media != nil }
        }
        guard let set = sets.first(where: { $0.lang == plan.adaptationSet.lang }) ?? sets.first else { return nil }
        let reps = set.representations.filter { $0.kind == want && $0.segmentTemplate?.media != nil }
        let playing = plan.renditions.first { $0.id == active.withLock { $0 } } ?? plan.representation
        guard
            let rep = reps.first(where: { $0.id == playing.id })
                ?? reps.min(by: { abs($0.bandwidth - playing.bandwidth) < abs($1.bandwidth - playing.bandwidth) })
        else { return nil }
        let edge = mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
        guard
            let timeline = try? RepresentationTimeline(
                mpd: mpd, period: index + 1, adaptationSet: set, representation: rep, manifestURL: manifest.url,
                liveEdge: edge)
        else {
            return nil
        }
        // Its tail missing, the period is left only when the new one's first segment is about
        // to be due: until then the tail may still come (a server that lists late but opens
        // each Period on time lists it after the new Period), and waiting loses nothing; an
        // audio segment that ran past the boundary leaves the new Period's audio starting up
        // to a segment after it, so giving up at the boundary would lose that much sound.
        if !complete, isLive {
            let from = max(start, time)
            let first =
                (timeline.segment(containing: from + 1e-3) ?? timeline.segment(following: from))?.start ?? start
            guard wantedPosition() >= first - SegmentChoice.periodSwitchLead else { return nil }
        }
        var next = plan
        next.periodIndex = index + 1
        next.periodID = mpd.periods[index + 1].id
        next.periodStart = start
        next.adaptationSet = set
        next.representation = rep
        next.timeline = timeline
        next.renditions = plan.renditions.isEmpty ? [] : reps
        logger.notice(
            "new period",
            metadata: ["track": "\(rep.id)", "period": "\(next.periodID ?? String(index + 1))", "start": "\(start)"])
        if let abr, Set(abr.withLock { $0.renditions.map(\.id) }) != Set(reps.map(\.id)), reps.count > 1 {
            abr.withLock { old in
                var fresh = ABRController(
                    renditions: reps.map {
                        ABRController.Rendition(
                            id: $0.id, bandwidth: $0.bandwidth, height: $0.height, frameRate: $0.frameRate)
                    }, options: old.options)
                fresh.pinned = old.pinned
                old = fresh
            }
        }
        inits.withLock { $0.removeAll() }  // the same ids may name other init segments there
        loader.resetLocations(count: timeline.baseURLs.count)
        planned.withLock { $0 = next }
        if rep.isTransportStream != plan.representation.isTransportStream {
            restartTracks()  // another container: the tracks start over
            for track in next.coreTracks { try? core.setTrackContainer(track, transportStream: rep.isTransportStream) }
            if !rep.measuresTimestamps {
                for track in next.coreTracks { try? core.setTrackOffset(track, ptsOffset: timeline.ptsOffset) }
            }
        } else {
            beginStream(ptsOffset: rep.measuresTimestamps ? nil : timeline.ptsOffset)
        }
        return timeline
    }

    /// `rep`'s timeline in the newest manifest.
    func timeline(for rep: Representation) -> RepresentationTimeline? {
        if rep.id == plan.representation.id, latestMPD.withLock({ $0.periods.isEmpty }) { return plan.timeline }
        let mpd = latestMPD.withLock { $0 }
        let plan = self.plan
        guard let index = plan.period(in: mpd) else { return rep.id == plan.representation.id ? plan.timeline : nil }
        for set in mpd.periods[index].adaptationSets {
            guard let r = set.representations.first(where: { $0.id == rep.id }) else { continue }
            let edge = mpd.availabilityStartTime.map { clock.now().timeIntervalSince($0) }
            return try? RepresentationTimeline(
                mpd: mpd, period: index, adaptationSet: set, representation: r, manifestURL: manifest.url,
                liveEdge: edge)
        }
        return nil
    }
}
