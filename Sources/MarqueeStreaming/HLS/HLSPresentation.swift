import Foundation

/// Plays HLS through the same session as DASH: a live media playlist pair (a variant and its
/// audio rendition) becomes the presentation model of a dynamic MPD whose SegmentTimeline is
/// the playlists' segments placed by their `EXT-X-PROGRAM-DATE-TIME` (milliseconds since 1970,
/// availabilityStartTime 1970), each with its own URL. Presentation time is then wall-clock
/// time of the encoder, so the latency target, the server clock and the controller work as for
/// DASH. A live MPEG-TS playlist without program date-times is given them by an
/// ``HLSLiveAnchor`` first (the end of its listing when it was answered). A VOD/EVENT-complete
/// playlist becomes a static presentation from 0.
///
/// A live presentation carries its RFC 8216 hold-back as a `ServiceDescription` latency target
/// (the session takes it when the app keeps the default target): `PART-HOLD-BACK` for a
/// playlist with parts, else `HOLD-BACK`, else, for a playlist placed by its answer time, three
/// target durations (§6.3.3). One placed by its program date-time, without a hold-back, keeps
/// the player's default.
///
/// Segments with an `EXT-X-MAP` are fMP4; without one they are MPEG-TS. A variant without an
/// audio rendition carries its audio muxed (``Representation/muxesAudio``) unless its CODECS
/// name none. The media time in the segments need not be the program date-time: the player
/// measures a transport stream's offset from its first PTS (fMP4 `tfdt` is taken as the
/// program date-time, as our origin and UTC-stamping encoders write it).
package enum HLSPresentation {
    /// The multivariant choice: the highest-bandwidth variant (ABR comes later) and the default
    /// audio rendition of its group, as media playlist URLs (audio nil: muxed in the variant).
    /// `language`: the audio rendition of that language is taken over the default one.
    package static func choose(_ master: HLSMultivariantPlaylist, language: String? = nil) -> (
        video: HLSVariant, audio: URL?
    )? {
        guard let variant = master.variants.max(by: { $0.bandwidth < $1.bandwidth }) else { return nil }
        let group = master.renditions.filter { $0.kind == .audio && $0.groupID == variant.audioGroup }
        let wanted = language.flatMap { l in group.first { LanguageTag.matches($0.language, l) } }
        let audio = (wanted ?? group.first { $0.isDefault } ?? group.first)?.uri
        return (variant, audio)
    }

    /// The ABR ladder of a multivariant playlist: the variants that share the highest one's
    /// audio group (every video rendition a player may switch among without changing the
    /// sound), highest first, and that group's default audio rendition.
    package static func ladder(_ master: HLSMultivariantPlaylist, language: String? = nil) -> (
        variants: [HLSVariant], audio: URL?
    )? {
        guard let (top, audio) = choose(master, language: language) else { return nil }
        let variants = master.variants.filter { $0.audioGroup == top.audioGroup }.sorted { $0.bandwidth > $1.bandwidth }
        return (variants, audio)
    }

    /// The presentation of media playlists (video first). `variant` gives bandwidth, codecs and
    /// size when known.
    package static func mpd(video: HLSMediaPlaylist?, audio: HLSMediaPlaylist?, variant: HLSVariant?)
        throws(ManifestError) -> MPD
    {
        try mpd(videos: video.map { [($0, variant)] } ?? [], audio: audio)
    }

    /// The presentation of several variants' media playlists (an ABR ladder: one video
    /// adaptation set, a representation per variant, segments aligned on the program date-time)
    /// and an audio rendition's. Representation ids: the variant's playlist name
    /// (`1080.m3u8` → `1080`), `hls-video` for a lone variant.
    package static func mpd(videos: [(HLSMediaPlaylist, HLSVariant?)], audio: HLSMediaPlaylist?) throws(ManifestError)
        -> MPD
    {
        let playlists = videos.map(\.0) + [audio].compactMap { $0 }
        guard let first = playlists.first else { throw ManifestError(.noPlayableContent, "no media playlist") }
        var mpd = MPD()
        let live = playlists.contains { $0.isLive }
        mpd.type = live ? .dynamic : .static
        let target = playlists.map(\.targetDuration).max() ?? first.targetDuration
        mpd.maxSegmentDuration = target
        mpd.minBufferTime = target
        if live {
            mpd.availabilityStartTime = Date(timeIntervalSince1970: 0)
            mpd.minimumUpdatePeriod = target
            mpd.timeShiftBufferDepth = playlists.map(\.totalDuration).min()
            mpd.serviceDescription = holdBack(playlists).map { target in
                var description = ServiceDescription()
                description.latencyTarget = target * 1000
                return description
            }
        } else {
            mpd.mediaPresentationDuration = playlists.map(\.totalDuration).max()
        }
        var period = Period()
        period.start = 0
        var ids = Set<String>()
        var main: AdaptationSet?
        for (index, (playlist, variant)) in videos.enumerated() {
            let videoCodec =
                variant?.codecs.map { c in ["avc", "hvc", "hev", "av01", "vp09"].contains { c.contains($0) } } ?? true
            let kind: MediaKind = variant?.height != nil || videoCodec ? .video : .audio
            let audioCodec =
                variant?.codecs.map { c in ["mp4a", "ac-3", "ec-3", "opus", "mp3", "fLaC"].contains { c.contains($0) } }
                ?? true
            var id =
                videos.count == 1
                ? "hls-video" : variant?.uri.deletingPathExtension().lastPathComponent ?? "hls-video-\(index)"
            if !ids.insert(id).inserted { id = "hls-video-\(index)" }
            var set = try adaptationSet(playlist, kind: kind, id: id, variant: variant, live: live)
            if kind == .video, audio == nil, audioCodec { set.representations[0].muxesAudio = true }
            if var m = main, kind == .video {  // another rung of the ladder
                m.representations += set.representations
                main = m
            } else if main == nil {
                set.id = "hls-video"
                main = set
            } else {
                period.adaptationSets.append(set)
            }
        }
        if let main { period.adaptationSets.insert(main, at: 0) }
        if let audio {
            period.adaptationSets.append(
                try adaptationSet(audio, kind: .audio, id: "hls-audio", variant: nil, live: live))
        }
        mpd.periods = [period]
        return mpd
    }

    /// The hold-back of live `playlists`, seconds: the longest `PART-HOLD-BACK` of those with
    /// parts, else the longest `HOLD-BACK`, else three target durations when a playlist was
    /// placed by its answer time; nil otherwise.
    static func holdBack(_ playlists: [HLSMediaPlaylist]) -> Double? {
        if let part = playlists.filter({ $0.partTarget != nil }).compactMap(\.partHoldBack).max() { return part }
        if let whole = playlists.compactMap(\.holdBack).max() { return whole }
        guard playlists.contains(where: \.programDateTimeEstimated) else { return nil }
        return 3 * (playlists.map(\.targetDuration).max() ?? 0)
    }

    /// Seconds since 1970 as whole microseconds of the presentation timeline (not milliseconds:
    /// two boxes that placed a playlist by their own answer times rounded each segment's start
    /// their own way, up to a millisecond apart); nil before 1970 or past 2^53 µs (where a Double
    /// stops counting them exactly, and sums of ticks could leave UInt64).
    private static func microseconds(_ seconds: Double) -> UInt64? {
        let us = (seconds * 1_000_000).rounded()
        return us >= 0 && us <= 0x1p53 ? UInt64(us) : nil
    }

    private static func adaptationSet(
        _ playlist: HLSMediaPlaylist, kind: MediaKind, id: String, variant: HLSVariant?, live: Bool
    ) throws(ManifestError) -> AdaptationSet {
        let map = playlist.segments.first?.map
        var template = SegmentTemplate()
        template.timescale = 1_000_000
        template.initialization = map?.uri.absoluteString  // none: MPEG-TS
        // no offset: from the start
        template.initializationRange = map?.byteRange.map { ByteRange(offset: max(0, $0.offset), length: $0.length) }
        template.media = "$Number$"  // unused: every segment has its URL
        template.startNumber = playlist.segments.first?.sequence ?? playlist.mediaSequence
        var entries: [SegmentTimelineEntry] = []
        var urls: [UInt64: URL] = [:]
        var ranges: [UInt64: ByteRange] = [:]
        var keys: [UInt64: SegmentKey] = [:]
        var discontinuities: Set<UInt64> = []
        var clock = 0.0
        for (i, segment) in playlist.segments.enumerated() {
            let start: Double
            if live {
                guard let date = segment.programDateTime else {
                    throw ManifestError(
                        .noPlayableContent,
                        """
                        live HLS segment \(segment.sequence) has no EXT-X-PROGRAM-DATE-TIME (a playlist without any is \
                        placed by an HLSLiveAnchor first)
                        """
                    )
                }
                start = date.timeIntervalSince1970
            } else {
                start = clock
            }
            let next =
                i + 1 < playlist.segments.count && live
                ? playlist.segments[i + 1].programDateTime?.timeIntervalSince1970 : nil
            guard let t = microseconds(start), let own = microseconds(start + segment.duration) else {
                throw ManifestError(
                    .invalidValue,
                    "HLS segment \(segment.sequence) (\(start) s + \(segment.duration) s) is outside the timeline")
            }
            // Up to the next segment's date-time; by its own duration when that is not after it.
            let end = next.flatMap(microseconds).flatMap { $0 > t ? $0 : nil } ?? own
            entries.append(SegmentTimelineEntry(t: t, n: segment.sequence, d: max(1, end - t)))
            urls[segment.sequence] = segment.uri
            // A range of a file (one growing file, `single_file`): fetched as that range alone.
            if let range = segment.byteRange {
                ranges[segment.sequence] = ByteRange(offset: range.offset, length: range.length)
            }
            if segment.discontinuity { discontinuities.insert(segment.sequence) }
            switch segment.key?.method {
            case .aes128:
                guard let uri = segment.key?.uri else {
                    throw ManifestError(.invalidValue, "EXT-X-KEY METHOD=AES-128 without a URI")
                }
                // No IV: the media sequence number, big-endian in 16 bytes (RFC 8216 §5.2).
                let iv =
                    segment.key?.iv
                    ?? (0..<16).map { i in
                        i < 8 ? 0 : UInt8(truncatingIfNeeded: segment.sequence >> (8 * (15 - UInt64(i))))
                    }
                keys[segment.sequence] = SegmentKey(url: uri, iv: iv)
            case .sampleAES:
                throw ManifestError(.noPlayableContent, "SAMPLE-AES encryption is not supported (AES-128 is)")
            case .none?, nil:
                break
            }
            clock += segment.duration
        }
        template.timeline = entries
        template.segmentURLs = urls
        template.segmentRanges = ranges.isEmpty ? nil : ranges
        template.segmentKeys = keys.isEmpty ? nil : keys
        template.discontinuities = discontinuities
        var rep = Representation(id: id, bandwidth: variant?.bandwidth ?? 128_000)
        rep.codecs = variant?.codecs
        rep.width = variant?.width
        rep.height = variant?.height
        rep.frameRate = variant?.frameRate
        rep.kind = kind
        rep.placedByPlaylist = true
        rep.datedByPackager = live && !playlist.programDateTimeEstimated
        rep.mimeType = (kind == .video ? "video/" : "audio/") + (map == nil ? "mp2t" : "mp4")
        rep.segmentTemplate = template
        var set = AdaptationSet()
        set.id = id
        set.contentType = kind.rawValue
        set.mimeType = rep.mimeType
        set.representations = [rep]
        return set
    }
}
