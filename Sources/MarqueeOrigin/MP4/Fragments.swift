/// What the origin needs from an init segment: its (first) track's id, timescale and trex default
/// sample duration.
struct InitSegmentInfo: Sendable, Equatable {
    var trackID: UInt32
    var timescale: UInt64
    /// `trex.default_sample_duration`, the last fallback for sample durations.
    var defaultSampleDuration: UInt32?

    static func parse(_ reader: MP4Reader) throws(OriginError) -> InitSegmentInfo {
        guard let trak = try reader.find([.moov, .trak]).first else { throw reader.malformed("no moov/trak box") }
        guard let tkhd = try reader.child(.tkhd, of: trak) else { throw reader.malformed("no tkhd box") }
        let (tkhdVersion, _) = try reader.fullBoxHeader(tkhd)
        let trackID = try reader.u32(tkhd.contentStart + (tkhdVersion == 1 ? 20 : 12))
        guard let mdia = try reader.child(.mdia, of: trak), let mdhd = try reader.child(.mdhd, of: mdia) else {
            throw reader.malformed("no mdia/mdhd box")
        }
        let (mdhdVersion, _) = try reader.fullBoxHeader(mdhd)
        let timescale = UInt64(try reader.u32(mdhd.contentStart + (mdhdVersion == 1 ? 20 : 12)))
        guard timescale > 0 else { throw reader.malformed("mdhd timescale is 0") }
        var defaultDuration: UInt32?
        for trex in try reader.find([.moov, .mvex, .trex]) where try reader.u32(trex.contentStart + 4) == trackID {
            defaultDuration = try reader.u32(trex.contentStart + 12)
        }
        return InitSegmentInfo(trackID: trackID, timescale: timescale, defaultSampleDuration: defaultDuration)
    }
}

/// The timing of a media segment (one or more moof+mdat): the first `tfdt` and the summed sample
/// durations of every `trun`, for one track.
struct MediaSegmentTiming: Sendable, Equatable {
    var baseMediaDecodeTime: UInt64
    var duration: UInt64
    var moofCount: Int

    static func parse(_ reader: MP4Reader, track: InitSegmentInfo) throws(OriginError) -> MediaSegmentTiming {
        var first: UInt64?
        var total: UInt64 = 0
        var moofs = 0
        for moof in try reader.boxes(in: 0..<reader.bytes.count) where moof.type == .moof {
            moofs += 1
            for traf in try reader.children(of: moof) where traf.type == .traf {
                let children = try reader.children(of: traf)
                guard let tfhdBox = children.first(where: { $0.type == .tfhd }) else {
                    throw reader.malformed("traf without tfhd")
                }
                let tfhd = try TrackFragmentHeader.parse(reader, tfhdBox)
                guard tfhd.trackID == track.trackID else { continue }
                if first == nil, let tfdt = children.first(where: { $0.type == .tfdt }) {
                    first = try decodeTime(reader, tfdt)
                }
                let fallback = tfhd.defaultSampleDuration ?? track.defaultSampleDuration
                for trun in children where trun.type == .trun {
                    total += try runDuration(reader, trun, defaultDuration: fallback)
                }
            }
        }
        guard moofs > 0 else { throw reader.malformed("no moof box") }
        guard let first else { throw reader.malformed("no tfdt box for track \(track.trackID)") }
        return MediaSegmentTiming(baseMediaDecodeTime: first, duration: total, moofCount: moofs)
    }

    /// The CMAF chunks of a segment: for each `moof` (with the `styp` or anything before the
    /// first one, and its `mdat`), the byte range and the track duration up to its end.
    static func chunks(_ reader: MP4Reader, track: InitSegmentInfo) throws(OriginError) -> [(
        bytes: Range<Int>, end: UInt64
    )] {
        var out: [(bytes: Range<Int>, end: UInt64)] = []
        var start = 0
        var total: UInt64 = 0
        var current: UInt64? = nil
        for box in try reader.boxes(in: 0..<reader.bytes.count) where box.type == .moof {
            if let duration = current {
                total += duration
                out.append((start..<box.start, total))
                start = box.start
            }
            var duration: UInt64 = 0
            for traf in try reader.children(of: box) where traf.type == .traf {
                let children = try reader.children(of: traf)
                guard let tfhdBox = children.first(where: { $0.type == .tfhd }) else {
                    throw reader.malformed("traf without tfhd")
                }
                let tfhd = try TrackFragmentHeader.parse(reader, tfhdBox)
                guard tfhd.trackID == track.trackID else { continue }
                for trun in children where trun.type == .trun {
                    duration += try runDuration(
                        reader, trun, defaultDuration: tfhd.defaultSampleDuration ?? track.defaultSampleDuration)
                }
            }
            current = duration
        }
        guard let last = current else { throw reader.malformed("no moof box") }
        out.append((start..<reader.bytes.count, total + last))
        return out
    }

    static func decodeTime(_ reader: MP4Reader, _ tfdt: MP4Box) throws(OriginError) -> UInt64 {
        let (version, _) = try reader.fullBoxHeader(tfdt)
        guard tfdt.size - tfdt.headerSize >= (version == 1 ? 12 : 8) else {
            throw reader.malformed("tfdt at \(tfdt.start) is too short")
        }
        return version == 1 ? try reader.u64(tfdt.contentStart + 4) : UInt64(try reader.u32(tfdt.contentStart + 4))
    }

    /// Sum of a trun's sample durations (per-sample, else the tfhd/trex default).
    static func runDuration(_ reader: MP4Reader, _ trun: MP4Box, defaultDuration: UInt32?) throws(OriginError) -> UInt64
    {
        let run = try TrackRun.parse(reader, trun)
        guard run.flags & TrackRun.sampleDurationPresent != 0 else {
            guard let defaultDuration else {
                throw reader.malformed(
                    "trun at \(trun.start) has no sample durations and there is no default (tfhd, trex)")
            }
            return UInt64(run.sampleCount) * UInt64(defaultDuration)
        }
        var total: UInt64 = 0
        var offset = run.firstSampleOffset
        for _ in 0..<run.sampleCount {
            total += UInt64(try reader.u32(offset))
            offset += run.bytesPerSample
        }
        return total
    }
}

/// The fields of a `tfhd` box the origin reads or rewrites.
struct TrackFragmentHeader {
    static let baseDataOffsetPresent: UInt32 = 0x01
    static let defaultBaseIsMoof: UInt32 = 0x02_0000

    var flags: UInt32
    var trackID: UInt32
    /// Byte offset of `base_data_offset` in the file, when present.
    var baseDataOffsetPosition: Int?
    var defaultSampleDuration: UInt32?

    static func parse(_ reader: MP4Reader, _ box: MP4Box) throws(OriginError) -> TrackFragmentHeader {
        let (_, flags) = try reader.fullBoxHeader(box)
        var offset = box.contentStart + 4
        let trackID = try reader.u32(offset)
        offset += 4
        var header = TrackFragmentHeader(flags: flags, trackID: trackID)
        if flags & 0x01 != 0 {
            header.baseDataOffsetPosition = offset
            offset += 8
        }
        if flags & 0x02 != 0 { offset += 4 }
        if flags & 0x08 != 0 {
            header.defaultSampleDuration = try reader.u32(offset)
            offset += 4
        }
        if flags & 0x10 != 0 { offset += 4 }
        if flags & 0x20 != 0 { offset += 4 }
        guard offset <= box.end else { throw reader.malformed("tfhd at \(box.start) is shorter than its flags say") }
        return header
    }
}

/// The layout of a `trun` box.
struct TrackRun {
    static let dataOffsetPresent: UInt32 = 0x001
    static let sampleDurationPresent: UInt32 = 0x100

    var flags: UInt32
    var sampleCount: Int
    /// Byte offset of `data_offset` in the file, when present.
    var dataOffsetPosition: Int?
    var firstSampleOffset: Int
    var bytesPerSample: Int

    static func parse(_ reader: MP4Reader, _ box: MP4Box) throws(OriginError) -> TrackRun {
        let (_, flags) = try reader.fullBoxHeader(box)
        let count = try reader.u32(box.contentStart + 4)
        var offset = box.contentStart + 8
        var dataOffsetPosition: Int?
        if flags & 0x001 != 0 {
            dataOffsetPosition = offset
            offset += 4
        }
        if flags & 0x004 != 0 { offset += 4 }
        let perSample = [0x100, 0x200, 0x400, 0x800].reduce(0) { flags & UInt32($1) != 0 ? $0 + 4 : $0 }
        guard UInt64(offset) + UInt64(count) * UInt64(perSample) <= UInt64(box.end) else {
            throw reader.malformed("trun at \(box.start) declares \(count) samples, more than the box holds")
        }
        return TrackRun(
            flags: flags, sampleCount: Int(count), dataOffsetPosition: dataOffsetPosition,
            firstSampleOffset: offset, bytesPerSample: perSample)
    }
}
