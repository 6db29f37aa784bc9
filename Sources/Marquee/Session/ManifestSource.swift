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
    /// HLS: the media playlists chosen from the multivariant playlist (reloads fetch only them).
    private var hls: (video: URL?, audio: URL?, variant: HLSVariant?)?

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
            if data.starts(with: Array("#EXTM3U".utf8)) || data.starts(with: [0xEF, 0xBB, 0xBF] + Array("#EXTM3U".utf8)) {
                mpd = try await hlsPresentation(String(decoding: data, as: UTF8.self))
            } else {
                mpd = try parser.parse(data)
            }
        } catch let error as ManifestError {
            throw PlayerError(error)
        } catch let error as PlayerError {
            throw error
        } catch let error as FetchError {
            throw PlayerError(error)
        } catch {
            throw PlayerError(.manifest, "\(error)")
        }
        self.mpd = mpd
        self.lastResult = result
        self.fetchedAt = Monotonic.now()
        return mpd
    }

    /// HLS: the presentation of the variant (highest bandwidth) and its default audio rendition.
    private func hlsPresentation(_ text: String) async throws -> MPD {
        var video: HLSMediaPlaylist?, audio: HLSMediaPlaylist?
        switch try HLSPlaylist.parse(text, url: url) {
        case .media(let p) where hls == nil:
            video = p
        case .media:
            break
        case .multivariant(let master):
            guard let (variant, audioURL) = HLSPresentation.choose(master) else {
                throw ManifestError(.noPlayableContent, "multivariant playlist without a variant")
            }
            hls = (variant.uri, audioURL, variant)
        }
        if let chosen = hls {
            if let u = chosen.video { video = try await mediaPlaylist(u) }
            if let u = chosen.audio { audio = try await mediaPlaylist(u) }
        }
        return try HLSPresentation.mpd(video: video, audio: audio, variant: hls?.variant)
    }

    private func mediaPlaylist(_ u: URL) async throws -> HLSMediaPlaylist {
        let result = try await fetcher.get(u, timeout: .seconds(10), maxBytes: HLSPlaylist.maxBytes)
        guard case .media(let p) = try HLSPlaylist.parse(String(decoding: result.body.readableBytesView, as: UTF8.self), url: u) else {
            throw ManifestError(.invalidValue, "\(u.absoluteString) is a multivariant playlist where a media playlist was expected")
        }
        return p
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
