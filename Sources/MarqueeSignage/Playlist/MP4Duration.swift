import Marquee
import MarqueeStreaming

/// The length of an MP4 (ISO BMFF) file from its movie header (`moov`/`mvhd`): a playlist's
/// file item whose end is known ahead (the next item is made ready before it).
enum MP4Duration {
    /// Seconds, nil when `bytes` has no readable movie header (not an MP4, or fragmented with
    /// no duration in it).
    static func seconds(of bytes: [UInt8]) -> Double? {
        guard let mvhd = ISOBox.path(["moov", "mvhd"], in: bytes, bytes.indices), mvhd.count >= 4 else { return nil }
        let at = mvhd.lowerBound
        let version = bytes[at]
        let (scaleAt, durationAt, durationBytes) = version == 1 ? (at + 20, at + 24, 8) : (at + 12, at + 16, 4)
        guard durationAt + durationBytes <= mvhd.upperBound else { return nil }
        let scale = ISOBox.number(bytes, scaleAt, 4)
        let duration = ISOBox.number(bytes, durationAt, durationBytes)
        guard scale > 0, duration > 0, duration != (durationBytes == 4 ? 0xFFFF_FFFF : UInt64.max) else { return nil }
        return Double(duration) / Double(scale)
    }
}
