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

    func master() -> String {
        var out = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-INDEPENDENT-SEGMENTS"]
        let audio = asset.adaptationSets.filter { $0.kind == .audio }.flatMap(\.representations)
        for (i, rep) in audio.enumerated() {
            out.append(
                "#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"audio\",NAME=\"\(rep.id)\",DEFAULT=\(i == 0 ? "YES" : "NO"),AUTOSELECT=YES,URI=\"\(rep.id).m3u8\"")
        }
        let video = asset.adaptationSets.filter { $0.kind == .video }.flatMap(\.representations)
        for rep in video.isEmpty ? audio : video {
            let r = rep.representation
            var attributes = ["BANDWIDTH=\(r.bandwidth + (video.isEmpty ? 0 : audio.first?.representation.bandwidth ?? 0))"]
            let codecs = ([r.codecs] + (video.isEmpty ? [] : [audio.first?.representation.codecs])).compactMap { $0 }
            if !codecs.isEmpty { attributes.append("CODECS=\"\(codecs.joined(separator: ","))\"") }
            if let w = r.width, let h = r.height { attributes.append("RESOLUTION=\(w)x\(h)") }
            if !video.isEmpty && !audio.isEmpty { attributes.append("AUDIO=\"audio\"") }
            out.append("#EXT-X-STREAM-INF:" + attributes.joined(separator: ","))
            out.append("\(rep.id).m3u8")
        }
        return out.joined(separator: "\n") + "\n"
    }

    func media(_ rep: LoopRepresentation, now: Double) -> String {
        let timeline = LiveTimeline(representation: rep, options: options)
        let segments = timeline.listedSegments(now: now).filter { segment in
            // Complete segments only (HLS has no availabilityTimeOffset).
            options.availabilityStartTime + Double(segment.mediaTime + segment.duration) / Double(rep.timescale) <= now
        }
        let timescale = Double(rep.timescale)
        let target = Int((Double(rep.maxSegmentDuration) / timescale).rounded())  // RFC 8216: EXTINF rounded ≤ it
        var out = ["#EXTM3U", "#EXT-X-VERSION:7", "#EXT-X-TARGETDURATION:\(target)",
                   "#EXT-X-MEDIA-SEQUENCE:\(options.startNumber + (segments.first?.index ?? 0))",
                   "#EXT-X-MAP:URI=\"\(rep.id)/init.mp4\""]
        for (i, segment) in segments.enumerated() {
            if i == 0 || segment.mediaTime != segments[i - 1].mediaTime + segments[i - 1].duration {
                let date = Date(timeIntervalSince1970: options.availabilityStartTime + Double(segment.mediaTime) / timescale)
                out.append("#EXT-X-PROGRAM-DATE-TIME:" + XSDateTime.string(date))
            }
            out.append(String(format: "#EXTINF:%.5f,", Double(segment.duration) / timescale))
            out.append("\(rep.id)/\(options.startNumber + segment.index).m4s")
        }
        return out.joined(separator: "\n") + "\n"
    }
}
