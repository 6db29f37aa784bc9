import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// What a loaded manifest says to play and how: the latency target and steering bounds, the
/// period to start in, the tracks and their renditions (and the core tracks they feed), the
/// manifest's own events.
extension PlaybackSession {
    /// The latency target and steering bounds for `mpd`: the options', with a manifest's
    /// `ServiceDescription` applied (its latency target replaces the default target and is
    /// clamped to its min/max; its playback-rate range narrows the options'). Target 0 (no
    /// sync): one segment plus 0.5 s behind live.
    static func syncSettings(options: PlayerOptions, mpd: MPD) -> (target: Double, sync: SyncOptions) {
        var sync = options.sync
        guard options.targetLatency > 0 else { return ((mpd.maxSegmentDuration ?? 2) + 0.5, sync) }
        var target = options.targetLatency
        if let sd = mpd.serviceDescription {
            if target == PlayerOptions.defaultTargetLatency, let wanted = sd.latencyTarget, wanted > 0 {
                target = wanted / 1000
                if let low = sd.latencyMin, low > 0 { target = max(target, low / 1000) }
                if let high = sd.latencyMax, high > 0 { target = min(target, high / 1000) }
            }
            if let low = sd.playbackRateMin, low > sync.minRate, low <= 1 { sync.minRate = low }
            if let high = sd.playbackRateMax, high < sync.maxRate, high >= 1 { sync.maxRate = high }
        }
        return (target, sync)
    }

    /// Places the manifest's `EventStream` events on the mix timeline; unreadable ones are
    /// reported as non-fatal errors.
    static func insertEvents(of mpd: MPD, into mixer: MixDirector, events: PlayerEvents.Sink) {
        for period in mpd.periods {
            let start = period.start ?? 0
            for stream in period.eventStreams {
                let (timed, errors) = EventScheme.events(of: stream, periodStart: start)
                mixer.insert(timed)
                for error in errors { events.send(.error(PlayerError(error), fatal: false)) }
            }
        }
    }

    static func period(of mpd: MPD, containing time: Double) -> Int {
        var index = 0
        for (i, p) in mpd.periods.enumerated() where (p.start ?? 0) <= time { index = i }
        return index
    }

    /// One audio and one video track: the first audio AdaptationSet's first representation, and
    /// the video AdaptationSet of the highest-bandwidth representation, among whose
    /// representations ABR chooses segment by segment (its timeline is the one the feeder
    /// follows; a muxed HLS variant feeds the audio track too).
    /// `reuse`: the core's tracks from an earlier session (a reload): reset and re-offset
    /// instead of added.
    /// What a track plays, before any core track: its kind, adaptation set, representation
    /// and timeline, and whether its segments carry the audio too.
    struct TrackChoice: Sendable {
        var kind: MediaKind
        var adaptationSet: AdaptationSet
        var representation: Representation
        var timeline: RepresentationTimeline
        var muxed: Bool
        /// The video renditions ABR chooses among (none for audio).
        var renditions: [Representation]
    }

    /// The tracks ``plan(mpd:period:manifestURL:core:now:reuse:audioLanguage:)`` creates, without
    /// the core (a source prepared ahead, ``PreparedSource``).
    static func choose(mpd: MPD, period: Int, manifestURL: URL, now: Double?, audioLanguage: String? = nil)
        throws(PlayerError) -> [TrackChoice]
    {
        var choices: [TrackChoice] = []
        for kind in [MediaKind.video, .audio] {
            let candidates = mpd.periods[period].adaptationSets.flatMap { set in
                set.representations.filter { $0.kind == kind && $0.segmentTemplate?.media != nil }.map { (set, $0) }
            }
            let chosen =
                kind == .video
                ? candidates.max { $0.1.bandwidth < $1.1.bandwidth }
                : Self.audioChoice(candidates, language: audioLanguage)
            guard let (set, rep) = chosen else { continue }
            let timeline: RepresentationTimeline
            do {
                timeline = try RepresentationTimeline(
                    mpd: mpd, period: period, adaptationSet: set, representation: rep, manifestURL: manifestURL,
                    liveEdge: now)
            } catch {
                throw PlayerError(error)
            }
            // The video segments carry the audio too: one more core track, fed the same bytes.
            let muxed =
                kind == .video && rep.muxesAudio && !choices.contains { $0.kind == .audio }
                && !mpd.periods[period].adaptationSets.contains { $0.representations.contains { $0.kind == .audio } }
            choices.append(
                TrackChoice(
                    kind: kind, adaptationSet: set, representation: rep, timeline: timeline, muxed: muxed,
                    renditions: kind == .video
                        ? set.representations.filter { $0.kind == .video && $0.segmentTemplate?.media != nil } : []))
        }
        guard !choices.isEmpty else {
            throw PlayerError(
                .noPlayableContent, "no audio or video representation with a SegmentTemplate in period \(period)")
        }
        return choices
    }

    /// `stage`: the core tracks are staged from that presentation time on (a next item decoded
    /// ahead: ``PlaybackSession/activate()``), new ones.
    static func plan(
        mpd: MPD, period: Int, manifestURL: URL, core: CoreHandle, now: Double?, reuse: [CoreTrackKind: Int32] = [:],
        audioLanguage: String? = nil, stage: Double? = nil
    ) throws(PlayerError) -> [TrackPlan] {
        var plans: [TrackPlan] = []
        for choice in try choose(
            mpd: mpd, period: period, manifestURL: manifestURL, now: now, audioLanguage: audioLanguage)
        {
            let (kind, set, rep, timeline, muxed) = (
                choice.kind, choice.adaptationSet, choice.representation, choice.timeline, choice.muxed
            )
            var tracks: [Int32] = []
            do {
                for coreKind in [kind == .video ? CoreTrackKind.video : .audio] + (muxed ? [.audio] : []) {
                    let track: Int32
                    if let stage {
                        track = try core.addStagedTrack(coreKind, ptsOffset: timeline.ptsOffset, start: stage)
                    } else if let existing = reuse[coreKind] {
                        try core.reuseTrack(existing, ptsOffset: timeline.ptsOffset)
                        track = existing
                    } else {
                        track = try core.addTrack(coreKind, ptsOffset: timeline.ptsOffset)
                    }
                    try core.setTrackContainer(track, transportStream: rep.isTransportStream)
                    tracks.append(track)
                }
            } catch {
                // (none left behind)
                if stage != nil { for track in tracks + plans.flatMap(\.coreTracks) { try? core.removeTrack(track) } }
                throw PlayerError(.output, error.message, coreCode: error.code)
            }
            plans.append(
                TrackPlan(
                    kind: kind == .video ? .video : .audio, periodIndex: period, periodID: mpd.periods[period].id,
                    periodStart: RepresentationTimeline.periodStart(mpd: mpd, index: period), adaptationSet: set,
                    representation: rep, timeline: timeline,
                    coreTrack: tracks[0], muxedAudioTrack: tracks.count > 1 ? tracks[1] : nil,
                    renditions: choice.renditions))
        }
        return plans
    }

    /// The audio representation to play: the first of the language wanted, else of an adaptation
    /// set whose `Role` is `main`, else the first.
    static func audioChoice(_ candidates: [(AdaptationSet, Representation)], language: String?) -> (
        AdaptationSet, Representation
    )? {
        if let language, let wanted = candidates.first(where: { LanguageTag.matches($0.0.lang, language) }) {
            return wanted
        }
        return candidates.first {
            $0.0.roles.contains { $0.schemeIdUri == "urn:mpeg:dash:role:2011" && $0.value == "main" }
        } ?? candidates.first
    }
}
