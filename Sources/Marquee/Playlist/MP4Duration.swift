/// The length of an MP4 (ISO BMFF) file from its movie header (`moov`/`mvhd`): a playlist's
/// file item whose end is known ahead (the next item is made ready before it).
enum MP4Duration {
    /// Seconds, nil when `bytes` has no readable movie header (not an MP4, or fragmented with
    /// no duration in it).
    static func seconds(of bytes: [UInt8]) -> Double? {
        guard let moov = box("moov", in: bytes, from: 0, to: bytes.count), let mvhd = box("mvhd", in: bytes, from: moov.body, to: moov.end)
        else { return nil }
        let at = mvhd.body
        guard at + 4 <= mvhd.end else { return nil }
        let version = bytes[at]
        let (scaleAt, durationAt, durationBytes) = version == 1 ? (at + 20, at + 24, 8) : (at + 12, at + 16, 4)
        guard durationAt + durationBytes <= mvhd.end else { return nil }
        let scale = read(bytes, scaleAt, 4), duration = read(bytes, durationAt, durationBytes)
        guard scale > 0, duration > 0, duration != (durationBytes == 4 ? 0xFFFF_FFFF : UInt64.max) else { return nil }
        return Double(duration) / Double(scale)
    }

    private static func read(_ b: [UInt8], _ at: Int, _ n: Int) -> UInt64 {
        b[at..<at + n].reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The first box of `type` between `from` and `to`: where its body starts and it ends.
    private static func box(_ type: String, in b: [UInt8], from: Int, to: Int) -> (body: Int, end: Int)? {
        let want = Array(type.utf8)
        var at = from
        while at + 8 <= to {
            var size = Int(read(b, at, 4)), header = 8
            if size == 1 {
                guard at + 16 <= to else { return nil }
                size = Int(clamping: read(b, at + 8, 8))
                header = 16
            } else if size == 0 {
                size = to - at
            }
            guard size >= header, size <= to - at else { return nil }
            if Array(b[at + 4..<at + 8]) == want { return (at + header, at + size) }
            at += size
        }
        return nil
    }
}
