public import Foundation

/// What a player fetches its sources through, injected when it is made
/// (``Player/init(options:router:logger:)``): a venue proxy in the same process (MarqueeVenue's
/// `VenueProxy`), a signing gateway, a local cache. The player links none of them.
///
/// The player calls ``startRouting()`` before it first loads a source (again after ``Player/stop()``),
/// fetches ``route(_:)`` of each source instead of the source, reports its buffer each second
/// (``reportBuffer(seconds:)``) and calls ``stopRouting()`` from ``Player/stop()``. ``Player/source``
/// shows the source, not the routed URL (``source(routedAs:)``); ``Player/localManifestUrl`` shows
/// the routed one.
public protocol SourceRouter: Sendable {
    /// Makes the router ready (a proxy binds its port). Called before each load while it is
    /// not stopped: it returns at once once started.
    func startRouting() async throws
    /// The URL the player fetches for `source` (`source` itself when the router does not serve it).
    func route(_ source: URL) -> URL
    /// The source a routed URL stands for (nil: not one of the router's).
    func source(routedAs routed: URL) -> URL?
    /// How many seconds of media the player holds, each second while a source plays (a proxy
    /// fetches ahead while it is low).
    func reportBuffer(seconds: Double)
    /// Stops routing (``Player/stop()``).
    func stopRouting() async
}
