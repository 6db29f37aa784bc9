public import Foundation
import MarqueeStreaming
import NIOCore

/// A schedule kept fresh from a URL, like ``ContentFeed`` for playlists: refetched every
/// ``interval`` seconds with conditional requests (`ETag` / `Last-Modified`; a `304` costs no
/// parse), a changed schedule published on ``changes`` (give it to
/// ``SchedulePlayer/replace(with:)``), a refresh that fails (network, status, a document that
/// cannot be used) published on ``failures`` while the last good schedule stays. Relative item
/// URLs are resolved against the feed's URL.
public final class ScheduleFeed: Sendable {
    public let url: URL
    /// Seconds between refreshes (1…86400).
    public let interval: Double
    /// Every new schedule, in order; the first is the initial one.
    public var changes: AsyncStream<Schedule> { refresher.changes }
    /// Every refresh that failed (the last good schedule stays).
    public var failures: AsyncStream<PlayerError> { refresher.failures }
    private let refresher: DocumentRefresher<Schedule, PlayerError>

    /// Fetches the schedule at `url` now (a failure throws: ``PlayerError/Code-swift.struct/network``,
    /// or ``PlayerError/Code-swift.struct/schedule`` for a document that cannot be used) and
    /// refreshes it every `interval` seconds (1…86400, 60 by default) until ``stop()``.
    public init(url: URL, interval: Double = 60, httpHeaders: [String: String] = [:]) async throws(PlayerError) {
        guard interval.isFinite, interval >= 1, interval <= 86_400 else {
            throw PlayerError(.invalidArgument, "schedule refresh interval \(interval) s is outside 1…86400")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw PlayerError(.invalidArgument, "schedule \(url.absoluteString): only http and https are fetched")
        }
        self.url = url
        self.interval = interval
        let fetcher = RemoteConfig.fetcher(httpHeaders)
        guard let (schedule, validators) = try await Self.fetch(url, fetcher: fetcher, validators: nil) else {
            throw PlayerError(.network, "\(url.absoluteString) answered 304 to an unconditional request")
        }
        refresher = DocumentRefresher(first: schedule, validators: validators, interval: interval) { (validators) throws(PlayerError) in
            try await Self.fetch(url, fetcher: fetcher, validators: validators)
        }
    }

    /// The last good schedule.
    public var current: Schedule { refresher.current }

    /// Refetches now (conditionally); returns whether the schedule changed.
    @discardableResult
    public func refresh() async -> Bool { await refresher.refresh() }

    /// Stops refreshing.
    public func stop() { refresher.stop() }

    private static func fetch(_ url: URL, fetcher: HTTPFetcher, validators: DocumentValidators?) async throws(PlayerError) -> (Schedule, DocumentValidators)? {
        let result: FetchResult
        do {
            guard let answered = try await DocumentValidators.get(url, fetcher: fetcher, validators: validators, maxBytes: Schedule.maxDocumentBytes) else {
                return nil
            }
            result = answered
        } catch {
            throw PlayerError(.network, "schedule \(error.description)")
        }
        do {
            return (try Schedule(json: Data(result.body.readableBytesView), relativeTo: url), DocumentValidators(result))
        } catch {
            throw PlayerError(.schedule, "\(url.absoluteString): \(error.message)")
        }
    }
}
