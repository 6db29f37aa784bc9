/// A parsed SCTE-35 `splice_info_section` (ANSI/SCTE 35): the cue that starts or ends an ad
/// break. Only what placing a break on the timeline needs is kept; the PTS inside the cue is in
/// the MPEG-2 TS clock and not used (in DASH the carrying event's presentation time is the splice
/// point, DASH-IF IOP §10).
package struct SpliceInfo: Sendable, Hashable {
    package enum Command: Sendable, Hashable {
        /// `splice_insert` (type 5).
        case spliceInsert(SpliceInsert)
        /// `time_signal` (type 6): its meaning is in the segmentation descriptors.
        case timeSignal
        /// `splice_null` (0) or another command type.
        case other(type: UInt8)
    }

    package struct SpliceInsert: Sendable, Hashable {
        package var eventID: UInt32
        /// `splice_event_cancel_indicator`: an earlier insert with this id is withdrawn.
        package var cancelled: Bool
        /// `out_of_network_indicator`: true leaves the network (a break starts), false returns.
        package var outOfNetwork: Bool
        /// `break_duration` in seconds, when given.
        package var breakDuration: Double?
    }

    package struct Segmentation: Sendable, Hashable {
        package var eventID: UInt32
        package var cancelled: Bool
        /// `segmentation_type_id` (0x30 provider ad start, 0x31 its end, 0x34 placement
        /// opportunity start, 0x35 its end, 0x22 break start, 0x23 break end, ...).
        package var typeID: UInt8
        /// `segmentation_duration` in seconds, when given.
        package var duration: Double?

        /// A break starts (ad, placement opportunity or break start).
        package var startsBreak: Bool {
            [0x22, 0x30, 0x32, 0x34, 0x36, 0x38, 0x3A, 0x3C, 0x3E, 0x44, 0x46].contains(typeID)
        }
        /// A break ends.
        package var endsBreak: Bool {
            [0x23, 0x31, 0x33, 0x35, 0x37, 0x39, 0x3B, 0x3D, 0x3F, 0x45, 0x47].contains(typeID)
        }
    }

    package var command: Command
    package var segmentations: [Segmentation]

    /// Parses a binary `splice_info_section` (table_id 0xFC). Encrypted sections are rejected.
    package init(bytes: [UInt8]) throws(ManifestError) {
        var r = BitReader(bytes)
        func fail(_ why: String) -> ManifestError { ManifestError(.invalidValue, "SCTE-35: \(why)") }
        guard bytes.count >= 14, r.bits(8) == 0xFC else { throw fail("not a splice_info_section (table_id 0xFC)") }
        r.skip(4)  // section_syntax_indicator, private_indicator, sap_type
        let sectionLength = Int(r.bits(12))
        guard sectionLength + 3 <= bytes.count else {
            throw fail("section_length \(sectionLength) beyond the \(bytes.count) bytes")
        }
        r.skip(8)  // protocol_version
        guard r.bits(1) == 0 else { throw fail("encrypted sections are not supported") }
        r.skip(6 + 33 + 8 + 12)  // encryption_algorithm, pts_adjustment, cw_index, tier
        let commandLength = Int(r.bits(12))
        let commandType = UInt8(r.bits(8))
        let commandStart = r.position
        switch commandType {
        case 5: command = .spliceInsert(Self.spliceInsert(&r))
        case 6:
            Self.skipSpliceTime(&r)
            command = .timeSignal
        default: command = .other(type: commandType)
        }
        if commandLength != 0xFFF { r.seek(toByte: commandStart / 8 + commandLength) }
        segmentations = []
        let loopLength = Int(r.bits(16))
        let loopEnd = r.position / 8 + loopLength
        while r.position / 8 + 2 <= loopEnd, !r.overrun {
            let tag = r.bits(8)
            let length = Int(r.bits(8))
            let next = r.position / 8 + length
            if tag == 0x02, length >= 9, r.bits(32) == 0x4355_4549 {  // "CUEI"
                if let s = Self.segmentation(&r) { segmentations.append(s) }
            }
            r.seek(toByte: next)
        }
        guard !r.overrun else { throw fail("truncated section") }
    }

    private static func spliceInsert(_ r: inout BitReader) -> SpliceInsert {
        var s = SpliceInsert(eventID: UInt32(r.bits(32)), cancelled: r.bits(1) == 1, outOfNetwork: false)
        r.skip(7)
        guard !s.cancelled else { return s }
        s.outOfNetwork = r.bits(1) == 1
        let programSplice = r.bits(1) == 1
        let hasDuration = r.bits(1) == 1
        let immediate = r.bits(1) == 1
        r.skip(4)
        if programSplice && !immediate { skipSpliceTime(&r) }
        if !programSplice {
            let components = Int(r.bits(8))
            for _ in 0..<components {
                r.skip(8)
                if !immediate { skipSpliceTime(&r) }
            }
        }
        if hasDuration {
            r.skip(7)  // auto_return, reserved
            s.breakDuration = Double(r.bits(33)) / 90_000
        }
        return s
    }

    private static func skipSpliceTime(_ r: inout BitReader) {
        if r.bits(1) == 1 { r.skip(6 + 33) } else { r.skip(7) }
    }

    private static func segmentation(_ r: inout BitReader) -> Segmentation? {
        var s = Segmentation(eventID: UInt32(r.bits(32)), cancelled: r.bits(1) == 1, typeID: 0)
        r.skip(7)
        guard !s.cancelled else { return s }
        let program = r.bits(1) == 1
        let hasDuration = r.bits(1) == 1
        r.skip(1)  // delivery_not_restricted_flag
        r.skip(5)  // web_delivery_allowed, no_regional_blackout, archive_allowed, device_restrictions (or reserved)
        if !program {
            let count = Int(r.bits(8))
            r.skip(count * (8 + 7 + 33))
        }
        if hasDuration { s.duration = Double(r.bits(40)) / 90_000 }
        r.skip(8)  // segmentation_upid_type
        r.skip(Int(r.bits(8)) * 8)  // upid
        s.typeID = UInt8(r.bits(8))
        return r.overrun ? nil : s
    }
}

/// Big-endian bit reader; reading past the end yields zeros and sets `overrun`.
struct BitReader {
    private let bytes: [UInt8]
    private(set) var position = 0  // in bits
    private(set) var overrun = false

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func bits(_ n: Int) -> UInt64 {
        var v: UInt64 = 0
        for _ in 0..<n {
            let byte = position / 8
            let bit: UInt64
            if byte < bytes.count {
                bit = UInt64((bytes[byte] >> (7 - UInt8(position % 8))) & 1)
            } else {
                bit = 0
                overrun = true
            }
            v = v << 1 | bit
            position += 1
        }
        return v
    }

    mutating func skip(_ n: Int) {
        position += n
        if position > bytes.count * 8 { overrun = true }
    }

    mutating func seek(toByte byte: Int) {
        position = byte * 8
        if byte > bytes.count { overrun = true }
    }
}

extension SpliceInfo {
    /// A binary `splice_info_section` holding one program `splice_insert` (splice immediate,
    /// so the carrying event's time is the splice point), with `duration` as its
    /// `break_duration` (auto-return) when given. The CRC_32 is computed (MPEG-2, as the
    /// standard asks); parsers here do not check it.
    package static func spliceInsertSection(
        eventID: UInt32, outOfNetwork: Bool, duration: Double? = nil, cancel: Bool = false
    ) -> [UInt8] {
        var command = BitWriter()
        command.put(UInt64(eventID), 32)
        command.put(cancel ? 1 : 0, 1)
        command.put(0x7F, 7)
        if !cancel {
            command.put(outOfNetwork ? 1 : 0, 1)
            command.put(1, 1)  // program_splice_flag
            command.put(duration == nil ? 0 : 1, 1)
            command.put(1, 1)  // splice_immediate_flag
            command.put(0xF, 4)
            if let duration {
                command.put(1, 1)  // auto_return
                command.put(0x3F, 6)
                command.put(UInt64((duration * 90_000).rounded()), 33)
            }
            command.put(0, 16)  // unique_program_id
            command.put(0, 8)  // avail_num
            command.put(0, 8)  // avails_expected
        }
        return section(commandType: 5, command: command.bytes)
    }

    private static func section(commandType: UInt8, command: [UInt8]) -> [UInt8] {
        var body = BitWriter()
        body.put(0, 8)  // protocol_version
        body.put(0, 1)  // encrypted_packet
        body.put(0, 6)  // encryption_algorithm
        body.put(0, 33)  // pts_adjustment
        body.put(0, 8)  // cw_index
        body.put(0xFFF, 12)  // tier
        body.put(UInt64(command.count), 12)
        body.put(UInt64(commandType), 8)
        var bytes = body.bytes + command
        bytes += [0, 0]  // descriptor_loop_length
        var head = BitWriter()
        head.put(0xFC, 8)
        head.put(0, 1)  // section_syntax_indicator
        head.put(0, 1)  // private_indicator
        head.put(3, 2)  // sap_type: not specified
        head.put(UInt64(bytes.count + 4), 12)  // section_length: the rest including the CRC
        bytes = head.bytes + bytes
        let crc = crc32MPEG2(bytes)
        return bytes + [UInt8(crc >> 24), UInt8(crc >> 16 & 0xFF), UInt8(crc >> 8 & 0xFF), UInt8(crc & 0xFF)]
    }

    /// CRC-32/MPEG-2 (poly 0x04C11DB7, init 0xFFFFFFFF, no reflection, no final xor).
    static func crc32MPEG2(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            crc ^= UInt32(b) << 24
            for _ in 0..<8 { crc = crc & 0x8000_0000 != 0 ? (crc << 1) ^ 0x04C1_1DB7 : crc << 1 }
        }
        return crc
    }
}

/// Big-endian bit writer.
struct BitWriter {
    private(set) var bytes: [UInt8] = []
    private var used = 0  // bits used in the last byte (0 = none / full)

    mutating func put(_ value: UInt64, _ n: Int) {
        for i in stride(from: n - 1, through: 0, by: -1) {
            if used == 0 { bytes.append(0) }
            bytes[bytes.count - 1] |= UInt8((value >> UInt64(i)) & 1) << (7 - UInt8(used))
            used = (used + 1) % 8
        }
    }
}
