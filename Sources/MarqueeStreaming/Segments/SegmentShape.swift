/// A quick look at a whole media segment before it is used: whether its container is whole.
/// An fMP4 segment is a run of top-level boxes whose sizes add up to its length, each with a
/// type of four printable characters; an MPEG-TS segment is whole 188-byte packets, each
/// starting with the sync byte 0x47. A body a proxy or an edge cut short (a well-formed 200
/// of half the segment) or replaced by garbage fails it; bit errors inside the payload do not
/// (the decoder plays through those).
public enum SegmentShape {
    /// Why `bytes` is not a whole segment, nil when it is.
    public static func problem(_ bytes: some Collection<UInt8>, transportStream: Bool) -> String? {
        let b = Array(bytes)
        guard !b.isEmpty else { return "empty segment" }
        return transportStream ? transportStreamProblem(b) : boxProblem(b)
    }

    private static func boxProblem(_ b: [UInt8]) -> String? {
        var at = 0
        while at < b.count {
            switch ISOBox.read(b, at: at, end: b.count) {
            case .failure(.headerCut): return "cut short inside a box header at byte \(at)"
            case .failure(.implausibleSize(let size)): return "implausible box size \(size) at byte \(at)"
            case .failure(.cutShort(let size, let left)): return "cut short: a box of \(size) bytes at byte \(at), \(left) left"
            case .success(let box):
                guard box.type.allSatisfy({ (0x20...0x7e).contains($0) }) else { return "not an ISO BMFF segment (box type at byte \(at))" }
                at = box.end
            }
        }
        return nil
    }

    private static func transportStreamProblem(_ b: [UInt8]) -> String? {
        guard b.count % 188 == 0 else { return "cut short: \(b.count) bytes is not whole 188-byte packets" }
        for at in stride(from: 0, to: b.count, by: 188) where b[at] != 0x47 {
            return "not an MPEG-TS segment (no sync byte at \(at))"
        }
        return nil
    }
}

/// Follows a whole-segment download as it arrives and notices where a complete segment is
/// followed by bytes that cannot continue it: an endless body's filler, junk after the
/// segment. fMP4: whole top-level boxes, at least one `mdat`, then a box header no segment has
/// (a type that is not four printable characters, a size under 8); MPEG-TS: whole packets, then
/// a byte where a sync byte should be. Walks each byte once, however the body is chunked.
public struct SegmentEnd: Sendable {
    public let transportStream: Bool
    private var at = 0
    private var sawMedia = false

    public init(transportStream: Bool) {
        self.transportStream = transportStream
    }

    /// The length of the segment when `body` (everything received so far, from its first byte)
    /// holds a whole segment followed by junk; nil while it may still be going on.
    public mutating func wholeBeforeJunk(in body: UnsafeRawBufferPointer) -> Int? {
        transportStream ? packets(body) : boxes(body)
    }

    private mutating func boxes(_ b: UnsafeRawBufferPointer) -> Int? {
        while b.count - at >= 8 {
            var size = (0..<4).reduce(0) { $0 << 8 | Int(b[at + $1]) }
            let type = (4..<8).map { b[at + $0] }
            guard type.allSatisfy({ (0x20...0x7e).contains($0) }), size == 0 || size == 1 || size >= 8 else {
                return sawMedia ? at : nil
            }
            if size == 0 { return nil }  // to the end of the body: nothing more to learn
            if size == 1 {
                guard b.count - at >= 16 else { return nil }
                size = (8..<16).reduce(0) { $0 << 8 | Int(b[at + $1]) }
                guard size >= 16 else { return sawMedia ? at : nil }
            }
            guard size <= b.count - at else { return nil }  // the box is still coming
            if type == Array("mdat".utf8) { sawMedia = true }
            at += size
        }
        return nil
    }

    private mutating func packets(_ b: UnsafeRawBufferPointer) -> Int? {
        while at < b.count {
            guard b[at] == 0x47 else { return at > 0 ? at : nil }
            guard b.count - at >= 188 else { return nil }
            at += 188
        }
        return nil
    }
}
