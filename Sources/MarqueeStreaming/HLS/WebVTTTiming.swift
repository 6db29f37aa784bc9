/// Where an HLS subtitle rendition's WebVTT cue falls on the media it goes with (RFC 8216
/// §3.5): its time plus its segment's `X-TIMESTAMP-MAP` (MPEGTS / 90000 − LOCAL) is a time of
/// the 90 kHz MPEG-2 clock the media's own timestamps run on (a transport stream's PTS, an fMP4
/// segment's decode time). A segment without the map has its cue times on that clock already
/// (MPEGTS 0 at LOCAL 0, as ExoPlayer reads them; ffmpeg's HLS muxer writes them so, its
/// transport stream then started with `-muxdelay 0` to keep them together). The clock wraps
/// every 2³³ ticks (26.5 hours) and cue times do not: the wrap taken is the one nearest the
/// media being played.
package enum WebVTTTiming {
    /// Seconds between wraps of the 33-bit 90 kHz clock.
    package static let wrap = Double(TransportStreamTimestamps.wrap) / Double(TransportStreamTimestamps.clockRate)

    /// The media time of `cueTime` (the file's seconds) in a segment whose map adds
    /// `mapOffset` (nil: none), nearest `near` (a media time of the moment: what plays now).
    package static func mediaTime(_ cueTime: Double, mapOffset: Double?, near: Double) -> Double {
        let t = cueTime + (mapOffset ?? 0)
        guard t.isFinite, near.isFinite else { return t }
        return t + ((near - t) / wrap).rounded() * wrap
    }
}
