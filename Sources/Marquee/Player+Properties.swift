public import Foundation
import MarqueeBridge
import MarqueeStreaming

/// What plays: the source (and the router it plays through), its type, length and renditions.
extension Player {
    /// The source playing: the first of ``PlayerOptions/sources`` that played, or a backup;
    /// nil before one loaded.
    public var source: URL? {
        inner.withLock { $0.session?.source }.map { local in router?.source(routedAs: local) ?? local }
    }

    /// What the player plays when it plays through a ``router`` (a venue proxy): the routed URL
    /// of the playing source, which any other player on this box may play too. Nil without a
    /// router or before a source plays.
    public var localManifestUrl: URL? {
        guard router != nil else { return nil }
        return inner.withLock { $0.session?.source }
    }

    /// `url` as the player fetches it: through the ``router`` when there is one.
    func routed(_ url: URL) -> URL { router?.route(url) ?? url }

    /// Starts the ``router`` if there is one.
    func startRouter() async throws(PlayerError) {
        guard let router else { return }
        do { try await router.startRouting() } catch {
            throw PlayerError(.network, "source router: \(error)")
        }
    }
    /// Live or on demand, by the manifest (unknown before one loaded).
    public var streamType: StreamType {
        guard let mpd = inner.withLock({ $0.session?.mpd }) else { return .unknown }
        return mpd.isLive ? .live : .onDemand
    }
    /// On demand: the presentation's length, seconds; nil for live or before a manifest loaded.
    public var duration: Double? {
        inner.withLock { $0.session?.mpd }.flatMap { $0.isLive ? nil : $0.mediaPresentationDuration }
    }
    /// The renditions playing now (one per track: video and audio).
    public var activeQualities: [Quality] {
        guard let session = inner.withLock({ $0.session }) else { return [] }
        return session.feeders.map { feeder in
            let id = feeder.active.withLock { $0 }
            return Quality(feeder.plan.renditions.first { $0.id == id } ?? feeder.plan.representation)
        }
    }

    /// The video rendition to play (a representation id of ``qualities``), or nil to let ABR
    /// choose by throughput (the default). Takes effect from the next segment; an id that is not
    /// a video rendition of the stream (or one above the board's caps) is refused with
    /// ``PlayerError/Code/invalidOptions`` and changes nothing.
    public var selectedQuality: String? {
        inner.withLock { $0.options.selectedQuality }
    }

    /// Pins the video rendition (`id`) or returns to automatic choice (nil); see ``selectedQuality``.
    public func selectQuality(_ id: String?) throws(PlayerError) {
        let session = inner.withLock { $0.session }
        if let id {
            let known =
                session?.feeders.contains { feeder in
                    feeder.abr?.withLock { $0.renditions.contains { $0.id == id } }
                        ?? (feeder.plan.kind == .video && feeder.plan.representation.id == id)
                } ?? false
            guard known else {
                throw PlayerError(.invalidOptions, "\"\(id)\" is not a video rendition of the stream playing")
            }
        }
        inner.withLock { $0.options.selectedQuality = id }
        for feeder in session?.feeders ?? [] { feeder.abr?.withLock { $0.pinned = id } }
    }
    /// Every rendition of the playing period's tracks.
    public var qualities: [Quality] {
        guard let session = inner.withLock({ $0.session }) else { return [] }
        let period = session.mpd.periods[session.plans.first?.periodIndex ?? 0]
        return period.adaptationSets.flatMap { $0.representations.map(Quality.init) }
    }
}
