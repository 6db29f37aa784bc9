/// One ISO BMFF box header read from bytes: the walk every box reader here shares (a segment's
/// shape, a fragment's decode time, a file's length).
package struct ISOBox: Sendable, Hashable {
    /// The four type bytes.
    package let type: [UInt8]
    /// Where the box starts, its body starts and it ends (indices into the bytes read).
    package let start: Int, body: Int, end: Int

    /// Why no box could be read at a place.
    package enum Problem: Error, Sendable, Hashable {
        /// Fewer bytes than a box header (8, or 16 with a 64-bit size).
        case headerCut
        /// A size smaller than the header.
        case implausibleSize(UInt64)
        /// A size beyond the bytes there are (`left` of them).
        case cutShort(size: UInt64, left: Int)
    }

    /// The box at `at`, within bytes that end at `end` (a size of 0 reaches `end`).
    package static func read(_ b: [UInt8], at: Int, end: Int) -> Result<ISOBox, Problem> {
        guard end - at >= 8 else { return .failure(.headerCut) }
        // The size stays UInt64 until checked against the bytes there are: a largesize may be
        // anything up to 2^64 − 1.
        var size = number(b, at, 4)
        var header = 8
        if size == 1 {
            guard end - at >= 16 else { return .failure(.headerCut) }
            size = number(b, at + 8, 8)
            header = 16
        } else if size == 0 {
            size = UInt64(end - at)
        }
        guard size >= UInt64(header) else { return .failure(.implausibleSize(size)) }
        guard size <= UInt64(end - at) else { return .failure(.cutShort(size: size, left: end - at)) }
        return .success(ISOBox(type: Array(b[at + 4..<at + 8]), start: at, body: at + header, end: at + Int(size)))
    }

    /// The body of the box reached by `types` (each a child of the one before) within `range`;
    /// nil when one is missing or the walk meets bytes that are not a box.
    package static func path(_ types: [String], in b: [UInt8], _ range: Range<Int>) -> Range<Int>? {
        guard let first = types.first else { return range }
        let want = Array(first.utf8)
        var at = range.lowerBound
        while at < range.upperBound, case .success(let box) = read(b, at: at, end: range.upperBound) {
            if box.type == want { return path(Array(types.dropFirst()), in: b, box.body..<box.end) }
            at = box.end
        }
        return nil
    }

    /// The big-endian unsigned number of `count` bytes at `at`.
    package static func number(_ b: [UInt8], _ at: Int, _ count: Int) -> UInt64 {
        b[at..<at + count].reduce(0) { $0 << 8 | UInt64($1) }
    }
}
