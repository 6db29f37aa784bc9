/// Moves a media segment to another place on the media timeline: adds `delta` (track timescale
/// ticks) to every `tfdt` of the track (and to `sidx.earliest_presentation_time`), leaving the
/// samples alone.
///
/// A version-0 `tfdt` whose new value does not fit 32 bits becomes version 1; its `traf` and
/// `moof` grow by 4 bytes, so the enclosing box sizes, `trun.data_offset` (when relative to the
/// moof), an explicit `tfhd.base_data_offset` and the `sidx` reference sizes are fixed up. Any
/// number of moofs and trafs is handled; trafs of other tracks are copied unchanged.
struct DecodeTimeRewriter {
    var trackID: UInt32
    var trackTimescale: UInt64

    func rewrite(_ bytes: [UInt8], delta: Int64, name: String) throws(OriginError) -> [UInt8] {
        let reader = MP4Reader(bytes: bytes, name: name)
        let top = try reader.boxes(in: 0..<bytes.count)
        var growth: [Int: Int] = [:]  // moof start -> bytes it grows by
        for moof in top where moof.type == .moof { growth[moof.start] = try moofGrowth(reader, moof, delta: delta) }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 4 * growth.count + 8)
        var shift = 0
        for box in top {
            let before = out.count
            switch box.type {
            case .moof: try appendMoof(reader, box, delta: delta, grow: growth[box.start] ?? 0, shift: shift, to: &out)
            case .sidx: try appendSidx(reader, box, delta: delta, growth: growth, to: &out)
            default: out += bytes[box.start..<box.end]
            }
            shift += (out.count - before) - box.size
        }
        return out
    }

    // MARK: moof

    private func trackFragments(_ reader: MP4Reader, _ moof: MP4Box) throws(OriginError) -> [(
        traf: MP4Box, tfhd: TrackFragmentHeader
    )] {
        var out: [(MP4Box, TrackFragmentHeader)] = []
        for traf in try reader.children(of: moof) where traf.type == .traf {
            guard let box = try reader.child(.tfhd, of: traf) else {
                throw reader.malformed("traf at \(traf.start) has no tfhd")
            }
            out.append((traf, try TrackFragmentHeader.parse(reader, box)))
        }
        return out
    }

    private func newDecodeTime(_ reader: MP4Reader, _ tfdt: MP4Box, delta: Int64) throws(OriginError) -> (
        value: UInt64, version: UInt8
    ) {
        let (version, _) = try reader.fullBoxHeader(tfdt)
        let old = try MediaSegmentTiming.decodeTime(reader, tfdt)
        let (sum, overflow) = Int64(clamping: old).addingReportingOverflow(delta)
        guard !overflow, sum >= 0 else { throw reader.malformed("tfdt \(old) + \(delta) is outside the 64-bit range") }
        let value = UInt64(sum)
        return (value, version == 0 && value > UInt64(UInt32.max) ? 1 : version)
    }

    private func moofGrowth(_ reader: MP4Reader, _ moof: MP4Box, delta: Int64) throws(OriginError) -> Int {
        var grow = 0
        for (traf, tfhd) in try trackFragments(reader, moof) where tfhd.trackID == trackID {
            for tfdt in try reader.children(of: traf) where tfdt.type == .tfdt {
                let (version, _) = try reader.fullBoxHeader(tfdt)
                if try newDecodeTime(reader, tfdt, delta: delta).version != version { grow += 4 }
            }
        }
        return grow
    }

    private func appendHeader(_ box: MP4Box, newSize: Int, to out: inout [UInt8]) {
        if box.headerSize == 16 {
            out.appendU32(1)
            out.appendU32(box.type.value)
            out.appendU64(UInt64(newSize))
        } else {
            out.appendU32(UInt32(newSize))
            out.appendU32(box.type.value)
        }
    }

    private func appendMoof(
        _ reader: MP4Reader, _ moof: MP4Box, delta: Int64, grow: Int, shift: Int, to out: inout [UInt8]
    ) throws(OriginError) {
        appendHeader(moof, newSize: moof.size + grow, to: &out)
        var firstTraf = true
        for child in try reader.children(of: moof) {
            guard child.type == .traf else {
                out += reader.bytes[child.start..<child.end]
                continue
            }
            let tfhdBox = try reader.child(.tfhd, of: child)
            let tfhd = try tfhdBox.map { (b) throws(OriginError) in try TrackFragmentHeader.parse(reader, b) }
            guard let tfhd, tfhd.trackID == trackID else {
                out += reader.bytes[child.start..<child.end]
                firstTraf = false
                continue
            }
            let relativeToMoof =
                tfhd.flags & TrackFragmentHeader.defaultBaseIsMoof != 0
                || (tfhd.baseDataOffsetPosition == nil && firstTraf)
            try appendTraf(
                reader, child, tfhd: tfhd, delta: delta, moofGrow: grow, shift: shift,
                dataOffsetFix: relativeToMoof ? grow : 0, to: &out)
            firstTraf = false
        }
    }

    private func appendTraf(
        _ reader: MP4Reader, _ traf: MP4Box, tfhd: TrackFragmentHeader, delta: Int64, moofGrow: Int, shift: Int,
        dataOffsetFix: Int, to out: inout [UInt8]
    ) throws(OriginError) {
        let headerAt = out.count
        appendHeader(traf, newSize: traf.size, to: &out)
        for child in try reader.children(of: traf) {
            let at = out.count
            out += reader.bytes[child.start..<child.end]
            switch child.type {
            case .tfhd:
                if let position = tfhd.baseDataOffsetPosition {
                    let old = try reader.u64(position)
                    out.putU64(
                        UInt64(Int64(clamping: old) + Int64(shift + moofGrow)), at: at + (position - child.start))
                }
            case .trun where dataOffsetFix != 0:
                if let position = try TrackRun.parse(reader, child).dataOffsetPosition {
                    let old = Int32(bitPattern: try reader.u32(position))
                    out.putU32(UInt32(bitPattern: old &+ Int32(dataOffsetFix)), at: at + (position - child.start))
                }
            case .tfdt:
                out.removeLast(child.size)
                let (value, version) = try newDecodeTime(reader, child, delta: delta)
                let (_, flags) = try reader.fullBoxHeader(child)
                out.appendU32(UInt32(version == 1 ? 20 : 16))
                out.appendU32(FourCC.tfdt.value)
                out.appendU32(UInt32(version) << 24 | flags)
                if version == 1 { out.appendU64(value) } else { out.appendU32(UInt32(value)) }
            default:
                break
            }
        }
        let newSize = out.count - headerAt
        if traf.headerSize == 16 {
            out.putU64(UInt64(newSize), at: headerAt + 8)
        } else {
            out.putU32(UInt32(newSize), at: headerAt)
        }
    }

    // MARK: sidx

    private func appendSidx(
        _ reader: MP4Reader, _ sidx: MP4Box, delta: Int64, growth: [Int: Int], to out: inout [UInt8]
    ) throws(OriginError) {
        let (version, flags) = try reader.fullBoxHeader(sidx)
        var p = sidx.contentStart + 4
        let referenceID = try reader.u32(p)
        let timescale = UInt64(try reader.u32(p + 4))
        p += 8
        let ept = version == 1 ? try reader.u64(p) : UInt64(try reader.u32(p))
        let firstOffset = version == 1 ? try reader.u64(p + 8) : UInt64(try reader.u32(p + 4))
        p += version == 1 ? 16 : 8
        let referenceCount = Int(try reader.u32(p) & 0xFFFF)
        p += 4
        guard p + 12 * referenceCount <= sidx.end else {
            throw reader.malformed("sidx at \(sidx.start) is shorter than its references")
        }
        let scaled =
            timescale == trackTimescale || trackTimescale == 0
            ? delta : Int64((Double(delta) * Double(timescale) / Double(trackTimescale)).rounded())
        let (sum, overflow) = Int64(clamping: ept).addingReportingOverflow(scaled)
        guard !overflow, sum >= 0 else {
            throw reader.malformed("sidx earliest_presentation_time \(ept) + \(scaled) is out of range")
        }
        let newEPT = UInt64(sum)
        let newVersion: UInt8 =
            version == 0 && (newEPT > UInt64(UInt32.max) || firstOffset > UInt64(UInt32.max)) ? 1 : version
        let headerAt = out.count
        appendHeader(sidx, newSize: 0, to: &out)
        out.appendU32(UInt32(newVersion) << 24 | flags)
        out.appendU32(referenceID)
        out.appendU32(UInt32(timescale))
        if newVersion == 1 {
            out.appendU64(newEPT)
            out.appendU64(firstOffset)
        } else {
            out.appendU32(UInt32(newEPT))
            out.appendU32(UInt32(firstOffset))
        }
        out.appendU32(try reader.u32(p - 4))
        var position = sidx.end + Int(firstOffset)
        for index in 0..<referenceCount {
            let word = try reader.u32(p + 12 * index)
            let size = Int(word & 0x7FFF_FFFF)
            let added = growth.reduce(0) { $1.key >= position && $1.key < position + size ? $0 + $1.value : $0 }
            out.appendU32((word & 0x8000_0000) | UInt32(size + added))
            out.append(contentsOf: reader.bytes[(p + 12 * index + 4)..<(p + 12 * index + 12)])
            position += size
        }
        out += reader.bytes[(p + 12 * referenceCount)..<sidx.end]
        let newSize = out.count - headerAt
        if sidx.headerSize == 16 {
            out.putU64(UInt64(newSize), at: headerAt + 8)
        } else {
            out.putU32(UInt32(newSize), at: headerAt)
        }
    }
}
