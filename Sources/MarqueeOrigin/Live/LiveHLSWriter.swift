import Foundation
import MarqueeStreaming

/// Writes a looped asset as live HLS (fMP4, RFC 8216): `master.m3u8` (a variant per video
/// representation, the audio as an `EXT-X-MEDIA` rendition group) and a media playlist per
/// representation, `<id>.m3u8`, listing the segments of the time-shift window with
/// `EXT-X-MAP`, `EXT-X-PROGRAM-DATE-TIME` (availabilityStartTime + media time: the same live
/// timeline as the DASH manifest) and the origin's own segment URLs. No `EXT-X-ENDLIST`.
struct LiveHLSWriter {
    var asset: LoopAsset
    var options: LiveOptions

    static let masterName = "master.m3u8"
    /// The muxed MPEG-TS rendition (assets with `ts/` segments): a multivariant playlist with
    /// one variant and no audio group, and its media playlist of `ts/<number>.ts` segments.
    static let transportStreamMasterName = "master-ts.m3u8"
    static let transportStreamMediaName = "ts.m3u8"

    func master() -> String {
        var out = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"]
        let audio = asset.adaptationSets.filter { $0.kind == .audio }.flatMap(\.representations)
        for (i, rep) in audio.enumerated() {
            out.append(
                """
                #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="audio",NAME="\(rep.id)",DEFAULT=\(i == 0 ? "YES" : "NO"),\
                AUTOSELECT=YES,URI="\(rep.id).m3u8"
                """
            )
        }
        let video = asset.adaptationSets.filter { $0.kind == .video }.flatMap(\.representations)
        for rep in video.isEmpty ? audio : video {
            let r = rep.representation
            var attributes = [
                "BANDWIDTH=\(r.bandwidth + (video.isEmpty ? 0 : audio.first?.representation.bandwidth ?? 0))"
            ]
            let codecs = ([r.codecs] + (video.isEmpty ? [] : [audio.first?.representation.codecs])).compactMap { $0 }
            if !codecs.isEmpty { attributes.append("CODECS=\"\(codecs.joined(separator: ","))\"") }
            if let w = r.width, let h = r.height { attributes.append("RESOLUTION=\(w)x\(h)") }
            if !video.isEmpty && !audio.isEmpty { attributes.append("AUDIO=\"audio\"") }
            out.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            out.append("\(rep.id).m3u8")
        }
        return out.joined(separator: "\n") + "\n"
    }

    func transportStreamMaster(_ ts: LoopTransportStream) -> String {
        let audio = asset.adaptationSets.first { $0.kind == .audio }?.representations.first?.representation
        let r = ts.video.representation
        var attributes = ["BANDWIDTH=\(r.bandwidth + (audio?.bandwidth ?? 0))"]
        let codecs = [r.codecs, audio?.codecs].compactMap { $0 }
        if !codecs.isEmpty { attributes.append("CODECS=\"\(codecs.joined(separator: ","))\"") }
        if let w = r.width, let h = r.height { attributes.append("RESOLUTION=\(w)x\(h)") }
        return [
            "#EXTM3U", "#EXT-X-VERSION:3", "#EXT-X-STREAM-INF:" + attributes.joined(separator: ","),
            Self.transportStreamMediaName,
        ]
        .joined(separator: "\n") + "\n"
    }

    /// The TS media playlist: the video representation's window, `ts/<number>.ts`, no map.
    func transportStreamMedia(_ ts: LoopTransportStream, now: Double) -> String {
        media(ts.video, now: now, map: nil, version: 3) { "ts/\($0).ts" }
    }

    func media(_ rep: LoopRepresentation, now: Double) -> String {
        media(rep, now: now, map: "\(rep.id)/init.mp4", version: 7) { "\(rep.id)/\($0).m4s" }
    }

    private func media(_ rep: LoopRepresentation, now: Double, map: String?, version: Int, uri: (UInt64) -> String)
        -> String
    {
        let timeline = LiveTimeline(representation: rep, options: options)
        let segments = timeline.listedSegments(now: now).filter { segment in
            // Complete segments only (HLS has no availabilityTimeOffset).
            options.availabilityStartTime + Double(segment.mediaTime + segment.duration) / Double(rep.timescale)
                / options.mediaRate <= now
        }
        let timescale = Double(rep.timescale)
        let target = Int((Double(rep.maxSegmentDuration) / timescale).rounded())  // RFC 8216: EXTINF rounded ≤ it
        var out = [
            "#EXTM3U", "#EXT-X-VERSION:\(version)", "#EXT-X-TARGETDURATION:\(target)",
            "#EXT-X-MEDIA-SEQUENCE:\(options.startNumber + (segments.first?.index ?? 0))",
        ]
        if let map { out.append("#EXT-X-MAP:URI=\"\(map)\"") }
        for (i, segment) in segments.enumerated() {
            if i == 0 || options.driftPPM != 0
                || segment.mediaTime != segments[i - 1].mediaTime + segments[i - 1].duration
            {
                // A drifting media clock (`drift_`): the date is when the segment began on the wall clock.
                let date = Date(
                    timeIntervalSince1970: options.availabilityStartTime + Double(segment.mediaTime) / timescale
                        / options.mediaRate)
                out.append("#EXT-X-PROGRAM-DATE-TIME:" + XSDateTime.string(date))
            }
            out.append(String(format: "#EXTINF:%.5f,", Double(segment.duration) / timescale))
            out.append(uri(options.startNumber + segment.index))
        }
        return out.joined(separator: "\n") + "\n"
    }
}
