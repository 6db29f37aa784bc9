/// Where an fMP4 segment sits on its own media timeline: the first track fragment's
/// `tfdt` base media decode time, in the timescale of the init segment's first track (`mdhd`).
/// HLS places segments by program date-time, which a packager need not tie to `tfdt`
/// (ffmpeg's fMP4 HLS starts `tfdt` at 0): the player maps one onto the other by measuring.
package enum FragmentTime {
    /// Seconds of the first `tfdt` in `segment` on the timeline of `initSegment`'s first track;
    /// nil when either box is missing.
    package static func firstDecodeTime(segment: some Collection<UInt8>, initSegment: some Collection<UInt8>) -> Double?
    {
        let s = Array(segment)
        let i = Array(initSegment)
        guard let mdhd = path(["moov", "trak", "mdia", "mdhd"], in: i, i.indices),
            let tfdt = path(["moof", "traf", "tfdt"], in: s, s.indices)
        else { return nil }
        let mdhdV1 = i[mdhd.lowerBound] == 1
        let scaleAt = mdhd.lowerBound + 4 + (mdhdV1 ? 16 : 8)
        guard scaleAt + 4 <= mdhd.upperBound else { return nil }
        let timescale = read(i, scaleAt, 4)
        let tfdtV1 = s[tfdt.lowerBound] == 1
        guard timescale > 0, tfdt.lowerBound + 4 + (tfdtV1 ? 8 : 4) <= tfdt.upperBound else { return nil }
        return Double(read(s, tfdt.lowerBound + 4, tfdtV1 ? 8 : 4)) / Double(timescale)
    }

    private static func path(_ types: [String], in b: [UInt8], _ range: Range<Int>) -> Range<Int>? {
        ISOBox.path(types, in: b, range)
    }

    private static func read(_ b: [UInt8], _ at: Int, _ count: Int) -> UInt64 { ISOBox.number(b, at, count) }
}
