/// A quick look at a whole media segment before it is used: whether its container is whole.
/// An fMP4 segment is a run of top-level boxes whose sizes add up to its length, each with a
/// type of four printable characters; an MPEG-TS segment is whole 188-byte packets, each
/// starting with the sync byte 0x47. A body a proxy or an edge cut short (a well-formed 200
/// of half the segment) or replaced by garbage fails it; bit errors inside the payload do not
/// (the decoder plays through those).
package enum SegmentShape {
    /// Why `bytes` is not a whole segment, nil when it is.
    package static func problem(_ bytes: some Collection<UInt8>, transportStream: Bool) -> String? {
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
            case .failure(.cutShort(let size, let left)):
                return "cut short: a box of \(size) bytes at byte \(at), \(left) left"
            case .success(let box):
                guard box.type.allSatisfy({ (0x20...0x7e).contains($0) }) else {
                    return "not an ISO BMFF segment (box type at byte \(at))"
                }
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

/// Follows a segment's download as it arrives and notices where a complete segment is
/// followed by bytes that cannot continue it: an endless body's filler, junk after the
/// segment. fMP4: whole top-level boxes, at least one `mdat`, then a box header no segment has
/// (a type that is not four printable characters, a size under 8); MPEG-TS: whole packets, then
/// a byte where a sync byte should be. Takes the body chunk by chunk (``next(_:)``), kept or
/// handed on as it comes: walks each byte once and holds at most one box header (16 bytes).
package struct SegmentEnd: Sendable {
    package let transportStream: Bool
    /// Where the next box or packet starts, from the body's first byte.
    private var at = 0
    /// Bytes of the body taken so far.
    private var seen = 0
    /// The box header at `at` so far (it may straddle chunks).
    private var header: [UInt8] = []
    private var sawMedia = false
    /// Nothing more can be learned (a box to the end of the body; a first box no segment has,
    /// which is the start check's to judge).
    private var done = false
    /// Where junk began after a whole segment, once found.
    package private(set) var junkAt: Int?

    package init(transportStream: Bool) {
        self.transportStream = transportStream
    }

    /// Bytes at the end of what was taken that are part of a box header still incomplete: a
    /// body handed on as it comes holds them back until the header is judged (so no byte of
    /// junk is handed on).
    package var undecided: Int { junkAt == nil && !done && at < seen ? seen - at : 0 }

    /// Takes the body's next bytes, in order: the length of the segment when what came so far
    /// holds a whole segment followed by junk; nil while it may still be going on.
    package mutating func next(_ bytes: UnsafeRawBufferPointer) -> Int? {
        if let junkAt { return junkAt }
        let base = seen
        seen += bytes.count
        if transportStream {
            while !done, at < seen {
                guard bytes[at - base] == 0x47 else { return found(at) }
                at += 188
            }
            return nil
        }
        while !done, at < seen {
            let want = header.count >= 8 && header[0..<4].elementsEqual([0, 0, 0, 1]) ? 16 : 8
            if header.count < want {
                let from = at + header.count
                let count = min(want - header.count, seen - from)
                header += bytes[(from - base)..<(from - base + count)]
                if header.count < want { return nil }
                continue
            }
            var size = header[0..<4].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
            guard header[4..<8].allSatisfy({ (0x20...0x7e).contains($0) }), size == 0 || size == 1 || size >= 8 else {
                return found(at)
            }
            if size == 1 {
                size = header[8..<16].reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
                guard size >= 16 else { return found(at) }
            }
            guard size != 0, size < 1 << 48 else {  // to the end of the body: nothing more to learn
                done = true
                return nil
            }
            if header[4..<8].elementsEqual("mdat".utf8) { sawMedia = true }
            at += Int(size)
            header = []
        }
        return nil
    }

    /// Junk at `offset`: the segment ends there when a whole one came before it (TS: a packet;
    /// fMP4: an `mdat`); else nothing more is learned.
    private mutating func found(_ offset: Int) -> Int? {
        guard transportStream ? offset > 0 : sawMedia else {
            done = true
            return nil
        }
        junkAt = offset
        return offset
    }

    /// The length of the segment when `body` (everything received so far, from its first byte;
    /// each call with the same body grown) holds a whole segment followed by junk; nil while
    /// it may still be going on.
    package mutating func wholeBeforeJunk(in body: UnsafeRawBufferPointer) -> Int? {
        guard body.count > seen else { return junkAt }
        return next(UnsafeRawBufferPointer(rebasing: body[seen...]))
    }
}
