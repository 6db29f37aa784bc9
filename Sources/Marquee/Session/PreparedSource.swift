import Foundation
import Logging
import MarqueeStreaming

/// A source made ready ahead of its turn (a playlist's next item, while the current one
/// plays): its manifest loaded, the server clock measured (live), and the first segments its
/// session will fetch kept in a ``SegmentPrefetch``. A ``PlaybackSession`` that starts on it
/// fetches nothing before its first picture.
struct PreparedSource: Sendable {
    let url: URL
    let manifest: ManifestSource
    let mpd: MPD
    let clock: ServerClock
    /// When it was prepared (monotonic seconds).
    let at: Double

    /// A preparation older than this (seconds) is not used: the session loads afresh.
    static let maxAge = 20.0

    /// Whether a session for `source` may start on it now.
    func fits(_ source: URL) -> Bool { source == url && Monotonic.now() - at < Self.maxAge }

    /// Loads `url`'s manifest (`policy`) and measures the server clock (live); then (with a
    /// `prefetch`) fetches into it each track's init segment and the media segment its session will start
    /// with when it starts at monotonic time `startAt` with `options` (a live segment once the
    /// server has it, if that is before `startAt`). Throws what the manifest's load throws; a
    /// segment that cannot be fetched ahead is left to the session.
    static func prepare(
        _ url: URL, options: PlayerOptions, fetcher: HTTPFetcher, logger: Logger, policy: FetchPolicy, prefetch: SegmentPrefetch?, startAt: Double
    ) async throws(PlayerError) -> PreparedSource {
        let manifest = ManifestSource(url: url, fetcher: fetcher, policy: policy, audioLanguage: options.audioLanguage)
        let mpd = try await manifest.load()
        let clock =
            mpd.isLive
            ? await ClockSync(fetcher: fetcher, logger: logger).synchronize(timings: mpd.utcTimings, fallback: await manifest.lastResult)
            : ServerClock.local()
        let prepared = PreparedSource(url: url, manifest: manifest, mpd: mpd, clock: clock, at: Monotonic.now())
        if let prefetch { await prepared.fetchFirstSegments(options: options, fetcher: fetcher, prefetch: prefetch, startAt: startAt) }
        return prepared
    }

    /// The init and first media segments of each track (``PlaybackSession/choose(mpd:period:manifestURL:now:audioLanguage:)``,
    /// the rendition a fresh ABR starts with), fetched at once into `prefetch`.
    private func fetchFirstSegments(options: PlayerOptions, fetcher: HTTPFetcher, prefetch: SegmentPrefetch, startAt: Double) async {
        let (target, _) = PlaybackSession.syncSettings(options: options, mpd: mpd)
        let ahead = max(0, startAt - Monotonic.now())
        let serverNow = clock.now()
        let edge = mpd.availabilityStartTime.map { serverNow.timeIntervalSince($0) + ahead }
        let position = mpd.isLive ? (edge ?? 0) - target : 0
        let period = PlaybackSession.period(of: mpd, containing: position)
        guard let choices = try? PlaybackSession.choose(mpd: mpd, period: period, manifestURL: url, now: edge, audioLanguage: options.audioLanguage)
        else { return }
        var wanted: [(init: URL?, media: URL?, available: Date?)] = []
        for choice in choices {
            guard let first = choice.timeline.segment(containing: position) else { continue }
            var rep = choice.representation
            if choice.renditions.count > 1 {
                var abr = ABRController(
                    renditions: choice.renditions.map { ABRController.Rendition(id: $0.id, bandwidth: $0.bandwidth, height: $0.height, frameRate: $0.frameRate) },
                    options: options.abr.controller)
                abr.pinned = options.selectedQuality
                let id = abr.choose(buffer: 0, segmentDuration: mpd.isLive ? first.end - first.start : nil).id
                rep = choice.renditions.first { $0.id == id } ?? rep
            }
            var timeline = choice.timeline
            var segment = first
            if rep.id != choice.representation.id {
                guard
                    let other = try? RepresentationTimeline(
                        mpd: mpd, period: period, adaptationSet: choice.adaptationSet, representation: rep, manifestURL: url, liveEdge: edge),
                    let same = other.segment(containing: first.start + 1e-3)
                else { continue }
                (timeline, segment) = (other, same)
            }
            guard segment.key == nil else { continue }  // (encrypted: fetched with its key by the session)
            wanted.append((rep.isTransportStream ? nil : timeline.initializationURL, segment.url, mpd.isLive ? timeline.availabilityStart(of: segment) : nil))
        }
        let serverClock = clock
        await withTaskGroup(of: Void.self) { group in
            for (initURL, mediaURL, available) in wanted {
                group.addTask {
                    var policy = FetchPolicy.initSegment
                    policy.attempts = 2
                    if let initURL { await prefetch.fetch(initURL, fetcher: fetcher, policy: policy, maxBytes: 4 << 20) }
                    guard let mediaURL else { return }
                    if let available {
                        // A live segment the server publishes before the start: fetched then.
                        let wait = available.timeIntervalSince(serverClock.now())
                        guard wait < startAt - Monotonic.now() - 0.05 else { return }
                        if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 5)) }
                    }
                    await prefetch.fetch(mediaURL, fetcher: fetcher, policy: policy, maxBytes: 64 << 20)
                }
            }
        }
    }
}
