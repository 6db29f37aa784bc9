public import Foundation
public import Marquee

/// A player on this box plays through the proxy: `Player(options:router:)` with the proxy as its
/// ``Marquee/SourceRouter``. Each source's host is served from its first load (``addUpstream(_:)``);
/// a source the proxy does not serve is fetched straight.
extension VenueProxy: SourceRouter {
    public func startRouting() async throws { _ = try await start() }

    public func route(_ source: URL) -> URL {
        guard port != nil else { return source }
        addUpstream(source)
        return (try? localURL(for: source)) ?? source
    }

    public func source(routedAs routed: URL) -> URL? { upstreamURL(for: routed) }

    public func stopRouting() async { await stop() }
}

extension Player {
    /// The figures of the venue proxy the player plays through (bytes from the CDN and from
    /// peers, peers, fallbacks, bans); nil when its ``Marquee/Player/router`` is not one.
    public var venueStatistics: VenueStatistics? { (router as? VenueProxy)?.statistics }
}
