import MarqueeStreaming

/// One ISO-BMFF box header found in a byte array: where it starts, how long its header is and
/// how long the whole box is. Content is `bytes[contentStart..<end]`.
struct MP4Box: Sendable, Equatable {
    var type: FourCC
    var start: Int
    var headerSize: Int
    var size: Int

    var contentStart: Int { start + headerSize }
    var end: Int { start + size }
}

/// A box type such as `moof`, kept as its four bytes.
struct FourCC: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    var value: UInt32

    init(_ value: UInt32) { self.value = value }

    init(stringLiteral text: String) {
        precondition(text.utf8.count == 4, "a box type has four characters")
        value = text.utf8.reduce(0) { $0 << 8 | UInt32($1) }
    }

    var description: String {
        let bytes = (0..<4).map { UInt8(truncatingIfNeeded: value >> (24 - 8 * $0)) }
        return String(decoding: bytes.map { $0 >= 0x20 && $0 < 0x7F ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }

    static let moov: FourCC = "moov", trak: FourCC = "trak", tkhd: FourCC = "tkhd", mdia: FourCC = "mdia"
    static let mdhd: FourCC = "mdhd", hdlr: FourCC = "hdlr", mvex: FourCC = "mvex", trex: FourCC = "trex"
    static let moof: FourCC = "moof", traf: FourCC = "traf", tfhd: FourCC = "tfhd", tfdt: FourCC = "tfdt"
    static let trun: FourCC = "trun", sidx: FourCC = "sidx", mdat: FourCC = "mdat"
}

/// A bounds-checked reader of ISO-BMFF boxes. Every read that would leave the array, and every
/// box whose size does not fit its parent, is an ``OriginError/Code/malformedMP4`` error.
struct MP4Reader {
    let bytes: [UInt8]
    /// What the bytes are (a file path), for error messages.
    let name: String

    func malformed(_ what: String) -> OriginError {
        OriginError(.malformedMP4, "\(name): \(what)")
    }

    /// The boxes laid end to end in `range` (a file, or a container box's content).
    func boxes(in range: Range<Int>) throws(OriginError) -> [MP4Box] {
        guard range.lowerBound >= 0, range.upperBound <= bytes.count else {
            throw malformed("box range \(range) is outside the data")
        }
        // The header walk is MarqueeStreaming's (``ISOBox``), the one every box reader shares;
        // what it cannot read is this file's malformed-MP4 error.
        var out: [MP4Box] = []
        var offset = range.lowerBound
        while offset < range.upperBound {
            switch ISOBox.read(bytes, at: offset, end: range.upperBound) {
            case .success(let box):
                let type = FourCC(UInt32(ISOBox.number(bytes, box.start + 4, 4)))
                out.append(
                    MP4Box(type: type, start: box.start, headerSize: box.body - box.start, size: box.end - box.start))
                offset = box.end
            case .failure(.headerCut):
                throw malformed("\(range.upperBound - offset) stray bytes at \(offset)")
            case .failure(.implausibleSize(let size)), .failure(.cutShort(let size, _)):
                let type = range.upperBound - offset >= 8 ? FourCC(UInt32(ISOBox.number(bytes, offset + 4, 4))) : "????"
                throw malformed(
                    """
                    box '\(type)' at \(offset) has size \(size), which does not fit in its parent \
                    (\(range.upperBound - offset) bytes left)
                    """
                )
            }
        }
        return out
    }

    func children(of box: MP4Box) throws(OriginError) -> [MP4Box] {
        try boxes(in: box.contentStart..<box.end)
    }

    func child(_ type: FourCC, of box: MP4Box) throws(OriginError) -> MP4Box? {
        try children(of: box).first { $0.type == type }
    }

    /// The first box found along `path` below the top level, e.g. `[moov, mvex, trex]`.
    func find(_ path: [FourCC]) throws(OriginError) -> [MP4Box] {
        var level = try boxes(in: 0..<bytes.count).filter { $0.type == path[0] }
        for type in path.dropFirst() {
            var next: [MP4Box] = []
            for box in level { next += try children(of: box).filter { $0.type == type } }
            level = next
        }
        return level
    }

    // MARK: integers (big-endian)

    func u8(_ at: Int) throws(OriginError) -> UInt8 {
        guard at >= 0, at < bytes.count else { throw malformed("read past the end at \(at)") }
        return bytes[at]
    }

    func u32(_ at: Int) throws(OriginError) -> UInt32 {
        guard at >= 0, at <= bytes.count - 4 else { throw malformed("read past the end at \(at)") }
        return (UInt32(bytes[at]) << 24) | (UInt32(bytes[at + 1]) << 16) | (UInt32(bytes[at + 2]) << 8)
            | UInt32(bytes[at + 3])
    }

    func u64(_ at: Int) throws(OriginError) -> UInt64 {
        UInt64(try u32(at)) << 32 | UInt64(try u32(at + 4))
    }

    /// Version (high byte) and flags (low 24 bits) of a full box.
    func fullBoxHeader(_ box: MP4Box) throws(OriginError) -> (version: UInt8, flags: UInt32) {
        guard box.size - box.headerSize >= 4 else {
            throw malformed("full box '\(box.type)' at \(box.start) is too short")
        }
        let word = try u32(box.contentStart)
        return (UInt8(word >> 24), word & 0xFF_FFFF)
    }
}

extension Array where Element == UInt8 {
    mutating func putU32(_ value: UInt32, at offset: Int) {
        self[offset] = UInt8(truncatingIfNeeded: value >> 24)
        self[offset + 1] = UInt8(truncatingIfNeeded: value >> 16)
        self[offset + 2] = UInt8(truncatingIfNeeded: value >> 8)
        self[offset + 3] = UInt8(truncatingIfNeeded: value)
    }

    mutating func putU64(_ value: UInt64, at offset: Int) {
        putU32(UInt32(truncatingIfNeeded: value >> 32), at: offset)
        putU32(UInt32(truncatingIfNeeded: value), at: offset + 4)
    }

    mutating func appendU32(_ value: UInt32) {
        append(contentsOf: [
            UInt8(truncatingIfNeeded: value >> 24), UInt8(truncatingIfNeeded: value >> 16),
            UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value),
        ])
    }

    mutating func appendU64(_ value: UInt64) {
        appendU32(UInt32(truncatingIfNeeded: value >> 32))
        appendU32(UInt32(truncatingIfNeeded: value))
    }
}
