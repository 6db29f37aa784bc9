/// Where an fMP4 segment sits on its own media timeline: the first track fragment's
/// `tfdt` base media decode time, in the timescale of the init segment's first track (`mdhd`).
/// HLS places segments by program date-time, which a packager need not tie to `tfdt`
/// (ffmpeg's fMP4 HLS starts `tfdt` at 0): the player maps one onto the other by measuring.
public enum FragmentTime {
    /// Seconds of the first `tfdt` in `segment` on the timeline of `initSegment`'s first track;
    /// nil when either box is missing.
    public static func firstDecodeTime(segment: some Collection<UInt8>, initSegment: some Collection<UInt8>) -> Double? {
        let s = Array(segment), i = Array(initSegment)
        guard let mdhd = path(["moov", "trak", "mdia", "mdhd"], in: i, i.indices), let tfdt = path(["moof", "traf", "tfdt"], in: s, s.indices)
        else { return nil }
        let mdhdV1 = i[mdhd.lowerBound] == 1
        let scaleAt = mdhd.lowerBound + 4 + (mdhdV1 ? 16 : 8)
        guard scaleAt + 4 <= mdhd.upperBound else { return nil }
        let timescale = read(i, scaleAt, 4)
        let tfdtV1 = s[tfdt.lowerBound] == 1
        guard timescale > 0, tfdt.lowerBound + 4 + (tfdtV1 ? 8 : 4) <= tfdt.upperBound else { return nil }
        return Double(read(s, tfdt.lowerBound + 4, tfdtV1 ? 8 : 4)) / Double(timescale)
    }

    /// The payload range of the box reached by `types` (each a child of the one before).
    private static func path(_ types: [String], in b: [UInt8], _ range: Range<Int>) -> Range<Int>? {
        guard let first = types.first else { return range }
        var at = range.lowerBound
        while at + 8 <= range.upperBound {
            // The size stays UInt64 until checked against the bytes there are: a largesize may
            // be anything up to 2^64 − 1.
            var boxSize = read(b, at, 4), header = 8
            if boxSize == 1, at + 16 <= range.upperBound {
                boxSize = read(b, at + 8, 8)
                header = 16
            } else if boxSize == 0 {
                boxSize = UInt64(range.upperBound - at)
            }
            guard boxSize >= header, boxSize <= range.upperBound - at else { return nil }
            let size = Int(boxSize)
            if String(decoding: b[at + 4..<at + 8], as: UTF8.self) == first {
                return path(Array(types.dropFirst()), in: b, at + header..<at + size)
            }
            at += size
        }
        return nil
    }

    private static func read(_ b: [UInt8], _ at: Int, _ count: Int) -> UInt64 {
        b[at..<at + count].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
