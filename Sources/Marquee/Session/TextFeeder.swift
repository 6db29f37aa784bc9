import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// HLS subtitle renditions (`EXT-X-MEDIA TYPE=SUBTITLES`, segmented WebVTT): the playlist of the
/// variant's group is reloaded as the stream's are, each new segment fetched (at most
/// ``CoreHandle/webVTTMaxBytes``) and decoded by FFmpeg in the core, its cues placed on the media
/// the video track plays (``WebVTTTiming``: the segment's `X-TIMESTAMP-MAP`, then the offset the
/// video feeder measured from its own timestamps) and handed to the core a few seconds before
/// they are due; the core shows each over the pictures its times cover, drawn as the caption
/// display says. A segment that fails (an error status, not WebVTT) is said once
/// (``PlayerEvent/error(_:fatal:)``) and skipped: the next one's cues are shown.
extension PlaybackSession {
    /// Cues are handed to the core this far (seconds) before they start (it holds 64).
    static let textLead = 10.0
    /// Subtitle segments are fetched until the cues held reach this far (seconds) ahead.
    static let textReadAhead = 30.0
    /// How often the feeder looks at what is due (seconds).
    static let textTick = 0.25

    func feedText() async {
        let url = await manifest.subtitles
        try? core.clearTextCues(active: url != nil)  // (what a session before left goes)
        guard let url, let video = feeders.first(where: { $0.plan.kind == .video }) else { return }
        logger.info("subtitles", metadata: ["playlist": "\(Redact.url(url))"])
        var playlist: HLSMediaPlaylist?
        var reloadAt = -Double.infinity
        var seen = Set<UInt64>()  // segments fetched (a live playlist's window)
        var pending: [TextCue] = []  // placed, not handed yet, by start
        var failures = 0  // the playlist's, in a row: its reloads back off (2 s, 4 s, … a minute)
        while !Task.isCancelled {
            let now = Monotonic.now()
            if playlist?.isLive ?? true, now >= reloadAt {
                do {
                    playlist = try await subtitlePlaylist(url)
                    failures = 0
                    reloadAt = now + min(max((playlist?.targetDuration ?? 2) / 2, 0.5), 3)
                } catch {
                    failures += 1
                    reloadAt = now + min(60, pow(2, Double(min(failures, 6))))
                    events.send(.error(error, fatal: false))
                }
            }
            if let list = playlist, let offset = video.measuredOffset.withLock({ $0 }),
                let position = core.status()?.position
            {
                // (Handed on as each segment comes: a slow or failing one holds back none before.)
                func hand(at position: Double) {
                    while let cue = pending.first, cue.start < position + Self.textLead {
                        pending.removeFirst()
                        if cue.end > position { try? core.pushTextCue(cue) }
                    }
                }
                for segment in list.segments where !seen.contains(segment.sequence) {
                    if let last = pending.last, last.start > position + Self.textReadAhead { break }
                    seen.insert(segment.sequence)
                    pending += await textCues(segment, offset: offset, position: position)
                    pending.sort { $0.start < $1.start }
                    hand(at: core.status()?.position ?? position)
                }
                if list.isLive, let first = list.segments.first { seen = seen.filter { $0 >= first.sequence } }
                hand(at: core.status()?.position ?? position)
            }
            try? await Task.sleep(for: .milliseconds(Int(Self.textTick * 1000)))
        }
    }

    /// The subtitle rendition's media playlist.
    private func subtitlePlaylist(_ url: URL) async throws(PlayerError) -> HLSMediaPlaylist {
        let result: FetchResult
        do {
            result = try await fetcher.get(url, policy: .manifest, maxBytes: HLSPlaylist.maxBytes)
        } catch {
            throw PlayerError(error)
        }
        let text = String(decoding: result.body.readableBytesView, as: UTF8.self)
        do {
            guard case .media(let list) = try HLSPlaylist.parse(text, url: result.url ?? url) else {
                throw PlayerError(.manifest, "subtitles: \(Redact.url(url)) is not a media playlist")
            }
            return list
        } catch let error as PlayerError {
            throw error
        } catch {
            throw PlayerError(.manifest, "subtitles: \(error)")
        }
    }

    /// `segment`'s cues placed on the core's timeline (the video's media `offset` from it, the
    /// wrap of the media clock nearest what plays at `position`); none when it failed (said).
    private func textCues(_ segment: HLSSegment, offset: Double, position: Double) async -> [TextCue] {
        let bytes: [UInt8]
        do {
            let result = try await fetcher.get(segment.uri, policy: .manifest, maxBytes: CoreHandle.webVTTMaxBytes)
            bytes = Array(result.body.readableBytesView)
        } catch {
            events.send(.error(PlayerError(error), fatal: false))
            return []
        }
        do {
            let (cues, map) = try CoreHandle.decodeWebVTT(bytes)
            return cues.map { cue in
                let start = WebVTTTiming.mediaTime(cue.start, mapOffset: map, near: position - offset) + offset
                return TextCue(start: start, end: start + (cue.end - cue.start), text: cue.text, ass: cue.ass)
            }
        } catch {
            events.send(
                .error(
                    PlayerError(
                        .media, "subtitles: \(Redact.url(segment.uri)) is not WebVTT (\(error))",
                        coreCode: error.code),
                    fatal: false))
            return []
        }
    }
}
