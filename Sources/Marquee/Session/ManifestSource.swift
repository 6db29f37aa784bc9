import Foundation
import MarqueeStreaming

/// One source's manifest: the first load and coalesced reloads (live manifests change).
actor ManifestSource {
    let url: URL
    private let fetcher: HTTPFetcher
    private let parser: MPDParser
    private(set) var mpd: MPD?
    private(set) var lastResult: FetchResult?
    private var fetchedAt = -Double.infinity

    init(url: URL, fetcher: HTTPFetcher, parser: MPDParser = MPDParser()) {
        self.url = url
        self.fetcher = fetcher
        self.parser = parser
    }

    /// Fetches and parses the manifest now.
    func load() async throws(PlayerError) -> MPD {
        let result: FetchResult
        do {
            result = try await fetcher.get(url, timeout: .seconds(10), maxBytes: parser.maxBytes)
        } catch {
            throw PlayerError(error)
        }
        let data = Data(result.body.readableBytesView)
        let mpd: MPD
        do {
            mpd = try parser.parse(data)
        } catch {
            throw PlayerError(error)
        }
        self.mpd = mpd
        self.lastResult = result
        self.fetchedAt = Monotonic.now()
        return mpd
    }

    /// The manifest, reloaded if the copy held is older than `maxAge` seconds. A failed reload
    /// keeps the last good manifest (and reports the error).
    func refreshed(maxAge: Double) async -> (MPD?, PlayerError?) {
        if Monotonic.now() - fetchedAt < maxAge, let mpd { return (mpd, nil) }
        do {
            return (try await load(), nil)
        } catch {
            return (mpd, error)
        }
    }
}
