import Foundation
import Logging
import MarqueeStreaming

/// A source made ready ahead of its turn (a playlist's next item, while the current one
/// plays): its manifest loaded and the server clock measured (live). A ``PlaybackSession``
/// that starts on it fetches only its segments before its first picture.
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

    /// Loads `url`'s manifest (`policy`) and measures the server clock (live). Throws what the
    /// manifest's load throws.
    static func prepare(
        _ url: URL, options: PlayerOptions, fetcher: HTTPFetcher, clocks: ServerClockBook, logger: Logger,
        policy: FetchPolicy
    ) async throws(PlayerError) -> PreparedSource {
        let manifest = ManifestSource(url: url, fetcher: fetcher, policy: policy, audioLanguage: options.audioLanguage)
        let mpd = try await manifest.load()
        let clock =
            mpd.isLive
            ? await ClockSync(fetcher: fetcher, logger: logger, book: clocks).synchronize(
                timings: mpd.utcTimings, fallback: await manifest.lastResult)
            : ServerClock.local()
        return PreparedSource(url: url, manifest: manifest, mpd: mpd, clock: clock, at: Monotonic.now())
    }
}
