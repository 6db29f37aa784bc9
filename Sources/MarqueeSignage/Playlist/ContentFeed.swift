public import Foundation
public import Marquee
import MarqueeStreaming

/// A content source: a feed URL that answers a playlist (the JSON document of
/// ``Playlist/init(json:relativeTo:defaultRepeat:)``), kept fresh like the remote config — refetched every
/// `interval` seconds with conditional requests (`ETag` / `Last-Modified`, a `304` costs no
/// parse), a changed playlist published on ``changes`` after ``filter``, and a refresh that
/// fails (network, status, a malformed document) published on ``failures`` while the last good
/// playlist stays. Relative item URLs are resolved against the feed's URL.
///
/// A refresh never interrupts anything by itself: a ``PlaylistQueue`` given the new playlist
/// (``PlaylistQueue/replace(with:)``) lets the playing item finish.
public final class ContentFeed: Sendable {
    /// The feed's URL.
    public let url: URL
    /// Seconds between refreshes (1…86400).
    public let interval: Double
    /// The filter applied to every playlist the feed answers (nil: every item).
    public let filter: TagFilter?
    /// Every new playlist (filtered), in order; the first is the initial one.
    public var changes: AsyncStream<Playlist> { refresher.changes }
    /// Every refresh that failed (the last good playlist stays).
    public var failures: AsyncStream<PlayerError> { refresher.failures }
    private let refresher: DocumentRefresher<Playlist, PlayerError>

    /// Fetches the feed at `url` now (a failure throws: `PlayerError.Code.network`, or
    /// `PlayerError.Code.playlist` for a document that cannot be used) and refreshes it every
    /// `interval` seconds (1…86400, 60 by default; out of range:
    /// `PlayerError.Code.invalidArgument`) until ``stop()``. Each fetch is checked under
    /// `security` (signed playlists, no local file outside its directories, https): a refused
    /// one is `PlayerError.Code.untrustedDocument`.
    public init(
        url: URL, filter: TagFilter? = nil, interval: Double = 60, httpHeaders: [String: String] = [:],
        security: DocumentSecurity = DocumentSecurity()
    ) async throws(PlayerError) {
        self.url = url
        self.interval = interval
        self.filter = filter
        refresher = try await DocumentRefresher.following(
            url, what: "feed", kind: .playlist, interval: interval, httpHeaders: httpHeaders, security: security,
            maxBytes: Playlist.maxDocumentBytes
        ) { (body) throws(PlayerError) in
            let playlist: Playlist
            do throws(PlayerError) {
                playlist = try Playlist(json: body, relativeTo: url)
            } catch {
                throw PlayerError(.playlist, "feed \(Redact.url(url)): \(error.message)")
            }
            // Checked before the filter, so the field named is the document's own index.
            do throws(DocumentRefusal) { try playlist.checkLocalPaths(security, document: url) } catch {
                throw PlayerError(error)
            }
            return filter.map { playlist.filtered(by: $0) } ?? playlist
        } check: { _ in
        }
    }

    /// The last good playlist (filtered).
    public var current: Playlist { refresher.current }

    /// Refetches now (conditionally); returns whether the playlist changed.
    @discardableResult
    public func refresh() async -> Bool { await refresher.refresh() }

    /// Stops refreshing.
    public func stop() { refresher.stop() }
}
