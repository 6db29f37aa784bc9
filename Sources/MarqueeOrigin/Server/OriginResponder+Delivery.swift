import Foundation
import Hummingbird
import HummingbirdCore
import MarqueeStreaming

/// How a reply's body goes out: one byte range of it, paced (low-latency chunks, a bandwidth
/// limit), ended early or never (the delivery faults).
extension OriginResponder {
    /// `reply` (a whole media body) cut to one `bytes=` range (RFC 9110 §14: `a-b`, `a-`, `-n`):
    /// 206 with its `Content-Range`; 416 when the range starts past the end; the whole body (200)
    /// for anything else (several ranges, another unit, a malformed value), as a server may.
    static func partial(_ reply: Reply, range: String) -> Reply {
        let total = reply.body.count
        let value = range.trimmingCharacters(in: .whitespaces)
        guard value.lowercased().hasPrefix("bytes="), !value.contains(",") else { return reply }
        let spec = value.dropFirst("bytes=".count).split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard spec.count == 2 else { return reply }
        let first = Int(spec[0].trimmingCharacters(in: .whitespaces))
        let last = Int(spec[1].trimmingCharacters(in: .whitespaces))
        var lower: Int
        var upper: Int
        switch (first, last) {
        case (let a?, let b?) where a <= b: (lower, upper) = (a, min(b, total - 1))
        case (let a?, nil) where spec[1].isEmpty: (lower, upper) = (a, total - 1)
        case (nil, let n?) where spec[0].isEmpty && n > 0: (lower, upper) = (max(0, total - n), total - 1)
        default: return reply
        }
        var cut = reply
        guard lower < total else {
            cut.status = .rangeNotSatisfiable
            cut.body = []
            cut.media = false
            cut.contentRange = "bytes */\(total)"
            return cut
        }
        cut.status = .partialContent
        cut.whole = reply.body
        cut.body = Array(reply.body[lower...upper])
        cut.contentRange = "bytes \(lower)-\(upper)/\(total)"
        // Low-latency chunks keep their times: the range's bytes go out as they are produced.
        cut.schedule = reply.schedule?.compactMap { piece in
            let bytes = piece.bytes.clamped(to: lower..<upper + 1)
            return bytes.isEmpty ? nil : ((bytes.lowerBound - lower)..<(bytes.upperBound - lower), piece.at)
        }
        return cut
    }

    /// A body written piece by piece as the clock reaches each piece's time (chunked), then ended
    /// as `ending` says: finished; cut short (with the whole body's `Content-Length`) by a thrown
    /// ``ConnectionFault``; or followed by endless filler.
    static func paced(
        _ body: [UInt8], _ schedule: [(bytes: Range<Int>, at: Double)], ending: Reply.Ending, clock: OriginClock,
        served: ServedBytes
    ) -> ResponseBody {
        var sent = 0..<body.count
        var length: Int?
        if case .cut(let at, _) = ending { (sent, length) = (0..<at, body.count) }
        if case .stall(let at) = ending { (sent, length) = (0..<at, body.count) }
        return ResponseBody(contentLength: length) { [sent] writer in
            for piece in schedule where piece.bytes.overlaps(sent) {
                let wait = piece.at - clock.now()
                if wait > 0 { try await Task.sleep(for: .milliseconds(Int((wait * 1000).rounded(.up)))) }
                let part = body[piece.bytes.clamped(to: sent)]
                served.add(part.count, request: false)
                try await writer.write(ByteBuffer(bytes: part))
            }
            switch ending {
            case .complete: try await writer.finish(nil)
            case .cut(_, let reset): throw ConnectionFault(reset: reset)
            case .endless: try await endlessFiller(&writer)
            case .garbage: try await garbageFiller(&writer)
            case .stall:
                try await Task.sleep(for: .seconds(stallSeconds))
                throw ConnectionFault(reset: false)
            }
        }
    }

    /// `garbage_`: random bytes, 16 KiB every 50 ms (320 kB/s), until the client goes away.
    private static func garbageFiller(_ writer: inout any ResponseBodyWriter) async throws -> Never {
        var generator = SplitMix64(state: UInt64.random(in: 0...UInt64.max))
        var piece = ByteBuffer()
        while true {
            piece.clear()
            for _ in 0..<2048 { piece.writeInteger(generator.next()) }
            try await writer.write(piece)
            // The fault's pace (a real-time producer: 16 KiB every 50 ms, 320 KiB/s of garbage).
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// How long a `stall_` response holds its connection silent.
    static let stallSeconds = 120

    /// `endless_`: zeros, 1 KiB every 100 ms, until the client goes away (the write throws) or the
    /// server stops (the sleep throws). One buffer, written again and again: no memory grows.
    private static func endlessFiller(_ writer: inout any ResponseBodyWriter) async throws -> Never {
        let filler = ByteBuffer(repeating: 0, count: 1024)
        while true {
            try await Task.sleep(for: .milliseconds(100))
            try await writer.write(filler)
        }
    }

    /// A schedule that sends `count` bytes at no more than `kbps` from `now` (16 kB pieces, or
    /// `pieceSeconds` of the rate each, 256 bytes to 16 kB), never before the pieces of
    /// `schedule` (low-latency chunks) are produced.
    static func limited(
        _ count: Int, kbps: Double, schedule: [(bytes: Range<Int>, at: Double)]?, now: Double,
        pieceSeconds: Double? = nil
    ) -> [(bytes: Range<Int>, at: Double)] {
        let bytesPerSecond = kbps * 1000 / 8
        let piece = pieceSeconds.map { min(16_384, max(256, Int(bytesPerSecond * $0))) } ?? 16_384
        var out: [(bytes: Range<Int>, at: Double)] = []
        var offset = 0
        while offset < count {
            let end = min(count, offset + piece)
            let produced = schedule?.first { $0.bytes.upperBound >= end }?.at ?? now
            out.append((offset..<end, max(produced, now + Double(end) / bytesPerSecond)))
            offset = end
        }
        return out
    }
}
