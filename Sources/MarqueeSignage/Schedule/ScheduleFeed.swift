public import Foundation
public import Marquee
import MarqueeStreaming

/// A schedule kept fresh from a URL, like ``ContentFeed`` for playlists: refetched every
/// `interval` seconds with conditional requests (`ETag` / `Last-Modified`; a `304` costs no
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

    /// Fetches the schedule at `url` now (a failure throws: `PlayerError.Code.network`,
    /// or `PlayerError.Code.schedule` for a document that cannot be used) and
    /// refreshes it every `interval` seconds (1…86400, 60 by default) until ``stop()``. Each
    /// fetch is checked under `security` (signed schedules, no local file outside its
    /// directories, https): a refused one is `PlayerError.Code.untrustedDocument`.
    public init(
        url: URL, interval: Double = 60, httpHeaders: [String: String] = [:],
        security: DocumentSecurity = DocumentSecurity()
    ) async throws(PlayerError) {
        self.url = url
        self.interval = interval
        refresher = try await DocumentRefresher.following(
            url, what: "schedule", kind: .schedule, interval: interval, httpHeaders: httpHeaders, security: security,
            maxBytes: Schedule.maxDocumentBytes
        ) { (body) throws(PlayerError) in
            do throws(PlayerError) {
                return try Schedule(json: body, relativeTo: url)
            } catch {
                throw PlayerError(.schedule, "\(Redact.url(url)): \(error.message)")
            }
        } check: { (schedule) throws(DocumentRefusal) in
            for name in schedule.playlists.keys.sorted() {
                try schedule.playlists[name]!.checkLocalPaths(security, document: url, field: "playlists.\(name).")
            }
        }
    }

    /// The last good schedule.
    public var current: Schedule { refresher.current }

    /// Refetches now (conditionally); returns whether the schedule changed.
    @discardableResult
    public func refresh() async -> Bool { await refresher.refresh() }

    /// Stops refreshing.
    public func stop() { refresher.stop() }
}
