import NIOCore

/// An ISO BMFF `emsg` box (ISO/IEC 23009-1 §5.10.3.3): an event carried in the media.
package struct EventMessageBox: Sendable, Hashable {
    package var schemeIdUri: String
    package var value: String
    package var timescale: UInt32
    /// Version 0: `presentation_time_delta` from the segment's earliest presentation time.
    /// Version 1: `presentation_time` on the track's media timeline.
    package var version: UInt8
    package var time: UInt64
    package var duration: UInt32
    package var id: UInt32
    package var messageData: [UInt8]

    /// Parses the body of an `emsg` box (after its 8-byte size/type header).
    package init(body: [UInt8]) throws(ManifestError) {
        var r = ByteBuffer(bytes: body)
        func fail(_ why: String) -> ManifestError { ManifestError(.invalidValue, "emsg: \(why)") }
        guard let fullBox = r.readInteger(as: UInt32.self) else { throw fail("truncated") }
        version = UInt8(fullBox >> 24)
        switch version {
        case 0:
            guard let scheme = r.readNullTerminatedString(), let value = r.readNullTerminatedString(),
                let (timescale, delta, duration, id) = r.readMultipleIntegers(as: (UInt32, UInt32, UInt32, UInt32).self)
            else { throw fail("truncated version 0 box") }
            (schemeIdUri, self.value, self.timescale, time, self.duration, self.id) = (
                scheme, value, timescale, UInt64(delta), duration, id
            )
        case 1:
            guard
                let (timescale, time, duration, id) = r.readMultipleIntegers(as: (UInt32, UInt64, UInt32, UInt32).self),
                let scheme = r.readNullTerminatedString(), let value = r.readNullTerminatedString()
            else { throw fail("truncated version 1 box") }
            (schemeIdUri, self.value, self.timescale, self.time, self.duration, self.id) = (
                scheme, value, timescale, time, duration, id
            )
        default:
            throw fail("version \(version) is not 0 or 1")
        }
        guard timescale > 0 else { throw fail("timescale 0") }
        messageData = r.readBytes(length: r.readableBytes) ?? []
    }

    /// The timed event this box announces. `segmentStart`: presentation time of the segment
    /// that carried it (version 0); `ptsOffset`: presentation time minus media time of the track
    /// (version 1). `nil` for a cue that places nothing.
    package func timedEvent(segmentStart: Double, ptsOffset: Double) throws(ManifestError) -> TimedEvent? {
        let scale = Double(timescale)
        let t = version == 0 ? segmentStart + Double(time) / scale : Double(time) / scale + ptsOffset
        return try EventScheme.event(
            scheme: schemeIdUri, value: value, time: t,
            duration: duration == 0xFFFF_FFFF ? nil : Double(duration) / scale, id: String(id),
            message: messageData, origin: .inband)
    }
}

/// Finds the `emsg` boxes among a segment's top-level boxes as its bytes stream in, chunk by
/// chunk, without holding anything but the box headers and the `emsg` bodies (an `mdat` is
/// skipped as it passes).
package struct EventMessageScanner: Sendable {
    private var header: [UInt8] = []
    private var skipping: UInt64 = 0
    private var collecting: [UInt8]? = nil
    private var wanted = 0
    /// Refuse to buffer an implausible emsg.
    package static let maxEventBytes = 1 << 20
    /// `emsg` boxes kept from one segment; the ones after are skipped (and counted).
    package static let maxEvents = 256
    private var kept = 0
    /// `emsg` boxes skipped: over ``maxEvents`` or ``maxEventBytes``.
    package private(set) var refused = 0

    package init() {}

    /// Feeds the next bytes of the segment; returns the bodies of the `emsg` boxes completed.
    package mutating func feed(_ bytes: UnsafeRawBufferPointer) -> [[UInt8]] {
        var found: [[UInt8]] = []
        var i = 0
        while i < bytes.count {
            if skipping > 0 {
                let k = Int(min(skipping, UInt64(bytes.count - i)))
                skipping -= UInt64(k)
                i += k
            } else if collecting != nil {
                let k = min(wanted - collecting!.count, bytes.count - i)
                collecting!.append(contentsOf: bytes[i..<(i + k)])
                i += k
                if collecting!.count == wanted {
                    found.append(collecting!)
                    collecting = nil
                }
            } else {
                header.append(bytes[i])
                i += 1
                guard header.count >= 8 else { continue }
                let size32 =
                    UInt64(header[0]) << 24 | UInt64(header[1]) << 16 | UInt64(header[2]) << 8 | UInt64(header[3])
                var size = size32
                var headerLength = 8
                if size32 == 1 {  // 64-bit largesize follows
                    guard header.count >= 16 else { continue }
                    size = header[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
                    headerLength = 16
                }
                let isEmsg = header[4...7].elementsEqual("emsg".utf8)
                header.removeAll(keepingCapacity: true)
                if size32 == 0 {  // to the end of the segment
                    skipping = .max
                } else if size < UInt64(headerLength) {
                    skipping = .max  // corrupt: stop looking in this segment
                } else if isEmsg && size - UInt64(headerLength) <= UInt64(Self.maxEventBytes) && kept < Self.maxEvents {
                    wanted = Int(size) - headerLength
                    collecting = []
                    kept += 1
                    if wanted == 0 { collecting = nil }
                } else {
                    if isEmsg { refused += 1 }
                    skipping = size - UInt64(headerLength)
                }
            }
        }
        return found
    }
}

extension EventMessageBox {
    /// A whole version-1 `emsg` box (size, type, body) for `time` in `timescale` ticks on the
    /// track's media timeline.
    package static func version1(
        scheme: String, value: String = "", timescale: UInt32, time: UInt64, duration: UInt32, id: UInt32,
        message: [UInt8]
    ) -> [UInt8] {
        var box = ByteBuffer()
        box.writeInteger(UInt32(0))  // size, set below
        box.writeString("emsg")
        box.writeMultipleIntegers(UInt32(1) << 24, timescale, time, duration, id)  // version 1, flags 0
        box.writeNullTerminatedString(scheme)
        box.writeNullTerminatedString(value)
        box.writeBytes(message)
        box.setInteger(UInt32(box.readableBytes), at: 0)
        return Array(box.readableBytesView)
    }
}
