import Foundation
import MarqueeStreaming
import NIOCore

/// One source's manifest: the first load and coalesced reloads (live manifests change).
actor ManifestSource {
    let url: URL
    private let fetcher: HTTPFetcher
    private let parser: MPDParser
    private(set) var mpd: MPD?
    private(set) var lastResult: FetchResult?
    /// Where a DASH manifest is reloaded from: its last `Location` (resolved against where it
    /// came from), nil: ``url``. A reload that fails there goes back to ``url`` next time.
    private var location: URL?
    /// When the request for the manifest held was sent (monotonic seconds).
    private var fetchedAt = -Double.infinity
    /// HLS: the media playlists chosen from the multivariant playlist, the video variants of the
    /// ABR ladder and the audio rendition (reloads fetch only them).
    private var hls: (variants: [HLSVariant], audio: URL?)?
    /// HLS without program date-times: each media playlist's anchor (its mapping survives the
    /// reloads; renditions segmented alike share it), and the clock their answer times are read
    /// on (the first answer's, measured the way the session measures its own from it).
    private var anchors: [URL: HLSLiveAnchor] = [:]
    /// HLS live playlists of byte ranges: each one's numbering by its ranges (a packager that
    /// does not advance its media sequence, ffmpeg's `single_file`).
    private var numberings: [URL: HLSRangeNumbering] = [:]
    private var answerClock: ServerClock?

    /// How the manifest is fetched: `policy` until it has loaded once (a source with a backup
    /// behind it is tried once, the backup waits), ``FetchPolicy/manifest`` from then on.
    private var policy: FetchPolicy
    /// HLS: the audio rendition's language wanted (``PlayerOptions/audioLanguage``).
    let audioLanguage: String?

    init(
        url: URL, fetcher: HTTPFetcher, parser: MPDParser = MPDParser(), policy: FetchPolicy = .manifest,
        audioLanguage: String? = nil
    ) {
        self.url = url
        self.audioLanguage = audioLanguage
        self.fetcher = fetcher
        self.parser = parser
        self.policy = policy
    }

    /// The load in progress: callers arriving meanwhile share it.
    private var inFlight: Task<MPD, any Error>?

    /// Fetches and parses the manifest now (or joins the load already under way).
    func load() async throws(PlayerError) -> MPD {
        let task: Task<MPD, any Error>
        if let running = inFlight {
            task = running
        } else {
            task = Task { try await self.fetchAndParse() }
            inFlight = task
        }
        defer { if inFlight == task { inFlight = nil } }
        do {
            return try await task.value
        } catch let error as PlayerError {
            throw error
        } catch {
            throw PlayerError(.manifest, "\(error)")
        }
    }

    private func fetchAndParse() async throws(PlayerError) -> MPD {
        let requested = Monotonic.now()
        do {
            let mpd: MPD
            if let chosen = hls {
                // HLS reloads: only the chosen media playlists, both at once.
                mpd = try await mediaPresentation(chosen)
            } else {
                let from = location ?? url
                let result: FetchResult
                do {
                    result = try await fetcher.get(from, policy: policy, maxBytes: parser.maxBytes)
                } catch {
                    location = nil  // the Location failed: the URL given, next time
                    throw error
                }
                // Relative URLs resolve against where the document came from (redirects).
                let document = result.url ?? from
                let data = Data(result.body.readableBytesView)
                if data.starts(with: Array("#EXTM3U".utf8))
                    || data.starts(with: [0xEF, 0xBB, 0xBF] + Array("#EXTM3U".utf8))
                {
                    mpd = try await hlsPresentation(
                        String(decoding: data, as: UTF8.self), result: result, document: document)
                } else {
                    var parsed = try parser.parse(data)
                    parsed.documentURL = document == url ? nil : document
                    // MPD Location: reloads go there (an absolute http(s) URL, or relative to the document).
                    if let text = parsed.locations.first,
                        let moved = URL(string: text, relativeTo: document)?.absoluteURL,
                        ["http", "https"].contains(moved.scheme?.lowercased() ?? "")
                    {
                        location = moved
                    }
                    mpd = parsed
                    lastResult = result
                }
            }
            self.mpd = mpd
            self.fetchedAt = requested
            self.policy = .manifest
            return mpd
        } catch let error as ManifestError {
            throw PlayerError(error)
        } catch let error as PlayerError {
            throw error
        } catch let error as FetchError {
            throw PlayerError(error)
        } catch {
            throw PlayerError(.manifest, "\(error)")
        }
    }

    /// HLS: the presentation of the variant (highest bandwidth) and its default audio rendition.
    private func hlsPresentation(_ text: String, result: FetchResult, document: URL) async throws -> MPD {
        switch try HLSPlaylist.parse(text, url: document) {
        case .media(let p):
            lastResult = result
            return try HLSPresentation.mpd(video: try placed(p, url: url, result: result), audio: nil, variant: nil)
        case .multivariant(let master):
            guard let ladder = HLSPresentation.ladder(master, language: audioLanguage) else {
                throw ManifestError(.noPlayableContent, "multivariant playlist without a variant")
            }
            let mpd = try await mediaPresentation(ladder)
            hls = ladder
            return mpd
        }
    }

    /// Every variant's media playlist and the audio rendition's, all at once.
    private func mediaPresentation(_ chosen: (variants: [HLSVariant], audio: URL?)) async throws -> MPD {
        async let audio = optionalPlaylist(chosen.audio)
        let videos = try await withThrowingTaskGroup(of: (Int, HLSMediaPlaylist, FetchResult).self) { group in
            for (i, variant) in chosen.variants.enumerated() {
                group.addTask {
                    let (playlist, result) = try await self.mediaPlaylist(variant.uri)
                    return (i, playlist, result)
                }
            }
            var out: [(Int, HLSMediaPlaylist, FetchResult)] = []
            for try await loaded in group { out.append(loaded) }
            return out.sorted { $0.0 < $1.0 }
        }
        let a = try await audio
        lastResult = videos.first?.2 ?? a?.1 ?? lastResult
        return try HLSPresentation.mpd(videos: videos.map { ($0.1, chosen.variants[$0.0]) }, audio: a?.0)
    }

    private func optionalPlaylist(_ u: URL?) async throws -> (HLSMediaPlaylist, FetchResult)? {
        guard let u else { return nil }
        return try await mediaPlaylist(u)
    }

    private func mediaPlaylist(_ u: URL) async throws -> (HLSMediaPlaylist, FetchResult) {
        let result = try await fetcher.get(u, policy: policy, maxBytes: HLSPlaylist.maxBytes)
        guard
            case .media(let p) = try HLSPlaylist.parse(
                String(decoding: result.body.readableBytesView, as: UTF8.self), url: result.url ?? u)
        else {
            throw ManifestError(
                .invalidValue, "\(Redact.url(u)) is a multivariant playlist where a media playlist was expected")
        }
        return (try placed(p, url: u, result: result), result)
    }

    /// Live `playlist` without program date-times as answered in `result`: placed on the clock
    /// by its anchor. Any other: as it is. A live playlist of byte ranges is numbered by its
    /// ranges first (``HLSRangeNumbering``).
    private func placed(_ listed: HLSMediaPlaylist, url: URL, result: FetchResult) throws(ManifestError)
        -> HLSMediaPlaylist
    {
        var playlist = listed
        if HLSRangeNumbering.applies(to: playlist) {
            playlist = numberings[url, default: HLSRangeNumbering()].renumber(playlist)
        }
        guard try HLSLiveAnchor.isNeeded(for: playlist) else { return playlist }
        let clock = answerClock ?? ClockSync.clock(answering: result) ?? .local()
        answerClock = clock
        let sibling = anchors.first { $0.key != url }?.value
        // (Behind a venue proxy: when the proxy learned the newest was published.)
        let published = result.header(HLSPublicationAge.header).flatMap(HLSPublicationAge.init(header:))
        return anchors[url, default: HLSLiveAnchor()].place(
            playlist, answeredAt: result.answered + clock.offset, askedAt: result.sent + clock.offset,
            receivedAt: result.headReceived + clock.offset, sibling: sibling, published: published)
    }

    /// HLS without program date-times: the anchor of the playlist the pictures come from (the
    /// ladder's first variant's, or the media playlist given) and the clock its answer times are
    /// read on (server seconds minus monotonic seconds); nil for any other stream.
    func anchorView() -> (anchor: HLSLiveAnchor, clockOffset: Double)? {
        guard let clock = answerClock else { return nil }
        guard let anchor = anchors[hls?.variants.first?.uri ?? url] ?? anchors.values.first else { return nil }
        return (anchor, clock.offset)
    }

    /// The manifest fetched now (or by the load under way) and when its server answered
    /// (monotonic seconds); nil when it failed.
    func answered() async -> (mpd: MPD, at: Double)? {
        guard let mpd = try? await load(), let result = lastResult else { return nil }
        return (mpd, result.answered)
    }

    /// The manifest, reloaded if the copy held is older than `maxAge` seconds. A failed reload
    /// keeps the last good manifest (and reports the error).
    func refreshed(maxAge: Double) async -> (MPD?, PlayerError?) {
        await refreshed(requestedSince: Monotonic.now() - maxAge)
    }

    /// The copy held if it was requested at or after monotonic time `since` (nil: none such);
    /// never a request.
    func held(requestedSince since: Double) -> MPD? {
        fetchedAt >= since ? mpd : nil
    }

    /// The manifest, reloaded unless the copy held was requested at or after monotonic time
    /// `since` (a reload another feeder made meanwhile serves).
    func refreshed(requestedSince since: Double) async -> (MPD?, PlayerError?) {
        if fetchedAt >= since, let mpd { return (mpd, nil) }
        do {
            return (try await load(), nil)
        } catch {
            return (mpd, error)
        }
    }
}
