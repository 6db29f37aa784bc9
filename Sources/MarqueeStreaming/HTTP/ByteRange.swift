import Foundation
import NIOCore

/// `length` bytes of a resource from `offset` (HLS `EXT-X-BYTERANGE`, `EXT-X-MAP:BYTERANGE`:
/// segments that are ranges of one file). Asked for with `Range: bytes=a-b`
/// (``HTTPFetcher/stream(_:method:timeout:firstByte:idle:range:onChunk:onTick:)``), the answer
/// checked and cut to it by ``RangedBody``.
package struct ByteRange: Sendable, Hashable, CustomStringConvertible {
    package var offset: Int
    package var length: Int

    package init(offset: Int, length: Int) {
        (self.offset, self.length) = (offset, length)
    }

    /// The most bytes a range may ask for: a media segment's body is never more (the same
    /// ceiling a segment's body has), an init section far less.
    package static let maxLength = 256 << 20

    /// The offset of its last byte.
    package var last: Int { offset + length - 1 }

    /// The `Range` header's value: `bytes=a-b` (both ends included).
    package var header: String { "bytes=\(offset)-\(last)" }

    package var description: String { "\(offset)-\(last)" }

    /// Why it cannot be asked for (nil: it can): empty, before the resource's start, over
    /// ``maxLength``, or ending past what an offset can say.
    package var problem: String? {
        if offset < 0 || length <= 0 { return "byte range \(length)@\(offset) is empty or negative" }
        if length > Self.maxLength { return "byte range of \(length) bytes is over \(Self.maxLength)" }
        if offset.addingReportingOverflow(length).overflow {
            return "byte range \(length)@\(offset) ends past any resource"
        }
        return nil
    }
}

/// `Content-Range: bytes a-b/total` (`total` `*`: unknown), RFC 9110 §14.4, of a 206 answering
/// one range.
package struct ContentRange: Sendable, Equatable {
    package var first: Int
    package var last: Int
    /// The resource's length, nil when the server wrote `*`.
    package var total: Int?

    package init(first: Int, last: Int, total: Int?) {
        (self.first, self.last, self.total) = (first, last, total)
    }

    /// Parses a `Content-Range` value; nil for anything but `bytes a-b/n` or `bytes a-b/*` with
    /// a ≤ b (< n): `bytes */n` (a 416's), another unit, junk, numbers past Int.
    package static func parse(_ text: String) -> ContentRange? {
        let value = text.trimmingCharacters(in: .whitespaces)
        guard value.count <= 80, value.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst("bytes ".count).trimmingCharacters(in: .whitespaces)
        let halves = spec.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard halves.count == 2 else { return nil }
        let ends = halves[0].split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard ends.count == 2, let first = digits(ends[0]), let last = digits(ends[1]), first <= last else {
            return nil
        }
        let total: Int?
        if halves[1] == "*" {
            total = nil
        } else {
            guard let n = digits(halves[1]), last < n else { return nil }
            total = n
        }
        return ContentRange(first: first, last: last, total: total)
    }

    /// A non-negative decimal of ASCII digits only (`Int("+5")` and `Int(" 5")` are not).
    private static func digits(_ s: Substring) -> Int? {
        guard !s.isEmpty, s.count <= 18, s.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
        return Int(s)
    }
}

/// The body of an answer to a request for a ``ByteRange``, checked and cut to it.
///
/// The head is checked first: a 206 is the range only when its `Content-Range` parses and is
/// exactly the range asked for (a shorter one, a growing file not there yet, or another range
/// is a failed download); a 200 is the whole resource (a server, a proxy that ignores `Range`):
/// the range is cut from it when it holds it (a `Content-Length` short of the range's end fails
/// at once), the bytes before the range dropped as they pass, never kept. Any other 2xx is a
/// failed download. The body then gives the range's bytes and no more: ``isComplete`` once
/// they are all in (the rest of a 200 need not be read); a body that ends before is cut short
/// (``finish(url:)`` throws).
package struct RangedBody: Sendable {
    package let range: ByteRange
    /// Body bytes still to drop before the range begins (a 200's).
    private var skip: Int
    /// Bytes of the range still to come.
    package private(set) var remaining: Int

    /// Checks the answer's head (`status`, its `Content-Range` and `Content-Length` headers) for
    /// `range`; throws `.network` (tried again as a failed download) when it is not the range.
    package init(range: ByteRange, status: Int, contentRange: String?, contentLength: String?, url: String)
        throws(FetchError)
    {
        self.range = range
        remaining = range.length
        switch status {
        case 206:
            guard let header = contentRange, let answered = ContentRange.parse(header) else {
                throw FetchError(
                    .network, url: url,
                    message: "206 without a usable Content-Range for bytes \(range) (\(contentRange ?? "none"))")
            }
            guard answered.first == range.offset, answered.last == range.last else {
                throw FetchError(
                    .network, url: url,
                    message: "asked for bytes \(range), the 206 holds \(answered.first)-\(answered.last)")
            }
            if let length = contentLength.flatMap({ Int($0) }), length != range.length {
                throw FetchError(
                    .network, url: url, message: "the 206 for bytes \(range) says Content-Length \(length)")
            }
            skip = 0
        case 200:
            let (end, _) = range.offset.addingReportingOverflow(range.length)
            if let length = contentLength.flatMap({ Int($0) }), length < end {
                throw FetchError(
                    .network, url: url,
                    message: "the whole resource (\(length) bytes, a 200) does not hold bytes \(range)")
            }
            skip = range.offset
        default:
            throw FetchError(.network, url: url, message: "HTTP \(status) answering a request for bytes \(range)")
        }
    }

    /// All of the range is in.
    package var isComplete: Bool { remaining == 0 }

    /// The part of `chunk` (the body's next bytes) that is in the range: empty before it starts,
    /// and once it is whole (what follows is dropped).
    package mutating func take(_ chunk: ByteBuffer) -> ByteBuffer {
        var chunk = chunk
        if skip > 0 {
            let dropped = min(skip, chunk.readableBytes)
            chunk.moveReaderIndex(forwardBy: dropped)
            skip -= dropped
        }
        let kept = min(remaining, chunk.readableBytes)
        remaining -= kept
        return chunk.readSlice(length: kept) ?? ByteBuffer()
    }

    /// The body ended: throws `.network` when the range is not whole (cut short, or a 200
    /// whose resource ends before the range does).
    package func finish(url: String) throws(FetchError) {
        guard remaining > 0 else { return }
        throw FetchError(.network, url: url, message: "the body ended \(remaining) bytes short of bytes \(range)")
    }
}
