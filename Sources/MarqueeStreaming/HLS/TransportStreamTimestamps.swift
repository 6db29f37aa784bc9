/// The timestamps of an MPEG-2 transport stream (ISO/IEC 13818-1), read and shifted in place:
/// the 33-bit 90 kHz PTS/DTS of PES headers and the PCR of adaptation fields. Enough to place an
/// HLS `.ts` segment on the presentation timeline (its first PTS against its program date-time)
/// and for the origin to loop `.ts` segments on a live timeline. Demuxing is libavformat's.
package enum TransportStreamTimestamps {
    package static let packetSize = 188
    /// PTS/DTS/PCR-base ticks per second.
    package static let clockRate: UInt64 = 90_000
    /// Timestamps wrap at 2³³ ticks (about 26.5 hours).
    package static let wrap: UInt64 = 1 << 33

    /// The PTS of the first PES packet in `bytes` that starts a video stream's PES (stream ids
    /// 0xE0–0xEF), else of the first PES packet with a PTS; `nil` when none starts within them.
    /// `bytes` must begin at a packet boundary (as a segment does).
    ///
    /// `partial`: `bytes` are only the segment's first bytes (more are coming): without a video
    /// PES in them, the first PTS of another stream is the answer only once the program map
    /// (PMT) said the program has no video stream; else nil (a video PES may still come: the
    /// sound's first PTS is up to a frame of it away from the pictures', and a box that placed
    /// the media by it would be that far from one that placed it by the pictures').
    package static func firstPTS(_ bytes: some Collection<UInt8>, partial: Bool = false) -> UInt64? {
        let bytes = Array(bytes)
        var any: UInt64?
        var program: (pmt: Int?, video: Bool?) = (nil, nil)
        var offset = 0
        while offset + packetSize <= bytes.count, bytes[offset] == 0x47 {
            if let (streamID, pts, _) = pesTimestamps(bytes, packet: offset), let pts {
                if (0xE0...0xEF).contains(streamID) { return pts }
                if any == nil { any = pts }
            }
            if partial, program.video == nil { readProgram(bytes, packet: offset, &program) }
            offset += packetSize
        }
        return partial && program.video != false ? nil : any
    }

    /// Stream types of video elementary streams in a PMT (ISO/IEC 13818-1 table 2-34 and its
    /// amendments): MPEG-1/2, MPEG-4 part 2, H.264 (and SVC, MVC), HEVC, VVC, VC-1, Dirac.
    private static let videoStreamTypes: Set<UInt8> = [0x01, 0x02, 0x10, 0x1B, 0x1F, 0x20, 0x24, 0x33, 0xEA, 0xD1]

    /// Reads the program association (the first program's PMT PID) and then its program map
    /// (whether it lists a video stream) from the section starting in `packet`, when it is one.
    private static func readProgram(_ b: [UInt8], packet p: Int, _ program: inout (pmt: Int?, video: Bool?)) {
        guard b[p + 1] & 0x40 != 0, let start = payloadStart(b, packet: p) else { return }
        let pid = Int(b[p + 1] & 0x1F) << 8 | Int(b[p + 2])
        let section = start + 1 + Int(b[start])  // (after the pointer field)
        let end = p + packetSize
        guard section + 3 <= end else { return }
        let length = Int(b[section + 1] & 0x0F) << 8 | Int(b[section + 2])
        let last = min(end, section + 3 + length - 4)  // (the CRC excluded)
        if pid == 0, b[section] == 0x00 {
            var entry = section + 8
            while entry + 4 <= last {
                let number = Int(b[entry]) << 8 | Int(b[entry + 1])
                if number != 0 {
                    program.pmt = Int(b[entry + 2] & 0x1F) << 8 | Int(b[entry + 3])
                    return
                }
                entry += 4
            }
        } else if let pmt = program.pmt, pid == pmt, b[section] == 0x02, section + 12 <= last {
            let infoLength = Int(b[section + 10] & 0x0F) << 8 | Int(b[section + 11])
            var stream = section + 12 + infoLength
            var video = false
            while stream + 5 <= last {
                video = video || videoStreamTypes.contains(b[stream])
                stream += 5 + (Int(b[stream + 3] & 0x0F) << 8 | Int(b[stream + 4]))
            }
            // (A map cut short by the packet's end says nothing of the streams after it.)
            let truncated = section + 3 + length - 4 > end
            program.video = video ? true : truncated ? nil : false
        }
    }

    /// `bytes` with every PTS, DTS and PCR moved by `delta` ticks (modulo 2³³). Packets are left
    /// as they are when they are not well formed.
    package static func shifted(_ bytes: [UInt8], by delta: Int64) -> [UInt8] {
        var out = bytes
        let d = UInt64(bitPattern: delta % Int64(wrap) + Int64(wrap)) % wrap
        var offset = 0
        while offset + packetSize <= out.count, out[offset] == 0x47 {
            shiftPCR(&out, packet: offset, by: d)
            if let (_, _, positions) = pesTimestamps(out, packet: offset) {
                for at in positions { write(&out, at: at, (read(out, at: at) + d) % wrap) }
            }
            offset += packetSize
        }
        return out
    }

    // MARK: packets

    /// Where a packet's payload starts, or nil without one.
    private static func payloadStart(_ b: [UInt8], packet p: Int) -> Int? {
        let control = (b[p + 3] >> 4) & 0x3
        guard control & 0x1 != 0 else { return nil }
        var start = p + 4
        if control & 0x2 != 0 { start += 1 + Int(b[p + 4]) }
        return start < p + packetSize ? start : nil
    }

    /// A packet starting a PES packet: its stream id, its PTS and the offsets of its PTS/DTS.
    private static func pesTimestamps(_ b: [UInt8], packet p: Int) -> (UInt8, UInt64?, [Int])? {
        guard b[p + 1] & 0x40 != 0, let s = payloadStart(b, packet: p), s + 9 <= p + packetSize,
            b[s] == 0, b[s + 1] == 0, b[s + 2] == 1
        else { return nil }
        let streamID = b[s + 3]
        // Streams without the optional PES header (program stream map, padding, private 2, …).
        guard ![0xBC, 0xBE, 0xBF, 0xF0, 0xF1, 0xF2, 0xF8, 0xFF].contains(streamID) else { return (streamID, nil, []) }
        let flags = b[s + 7] >> 6
        var positions: [Int] = []
        if flags & 0x2 != 0, s + 14 <= p + packetSize { positions.append(s + 9) }
        if flags == 0x3, s + 19 <= p + packetSize { positions.append(s + 14) }
        return (streamID, positions.first.map { read(b, at: $0) }, positions)
    }

    /// A 33-bit timestamp in the 5-byte PES layout.
    private static func read(_ b: [UInt8], at i: Int) -> UInt64 {
        (UInt64(b[i] >> 1) & 0x7) << 30 | UInt64(b[i + 1]) << 22 | UInt64(b[i + 2] >> 1) << 15 | UInt64(b[i + 3]) << 7
            | UInt64(b[i + 4] >> 1)
    }

    private static func write(_ b: inout [UInt8], at i: Int, _ v: UInt64) {
        b[i] = (b[i] & 0xF1) | UInt8((v >> 29) & 0x0E)
        b[i + 1] = UInt8((v >> 22) & 0xFF)
        b[i + 2] = UInt8((v >> 14) & 0xFE) | 1
        b[i + 3] = UInt8((v >> 7) & 0xFF)
        b[i + 4] = UInt8((v << 1) & 0xFE) | 1
    }

    /// Moves the PCR of the packet's adaptation field, if it has one.
    private static func shiftPCR(_ b: inout [UInt8], packet p: Int, by d: UInt64) {
        guard (b[p + 3] >> 4) & 0x2 != 0, b[p + 4] >= 7, b[p + 5] & 0x10 != 0 else { return }
        let i = p + 6
        var base =
            UInt64(b[i]) << 25 | UInt64(b[i + 1]) << 17 | UInt64(b[i + 2]) << 9 | UInt64(b[i + 3]) << 1
            | UInt64(b[i + 4] >> 7)
        base = (base + d) % wrap
        b[i] = UInt8(base >> 25 & 0xFF)
        b[i + 1] = UInt8(base >> 17 & 0xFF)
        b[i + 2] = UInt8(base >> 9 & 0xFF)
        b[i + 3] = UInt8(base >> 1 & 0xFF)
        b[i + 4] = (b[i + 4] & 0x7F) | UInt8((base & 1) << 7)
    }
}
