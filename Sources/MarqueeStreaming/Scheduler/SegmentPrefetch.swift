import Foundation
import NIOCore

/// Segments fetched ahead of the session that will play them (a playlist's next item, prepared
/// while the current one plays): a ``SegmentLoader`` given this store takes an init or media
/// segment from it instead of the network, once. Bounded in count and age: what is not taken
/// within ``lifetime`` (the item was skipped, the live edge moved on) is dropped.
public final class SegmentPrefetch: Sendable {
    private struct Entry {
        var body: ByteBuffer
        /// The download's time (for the bandwidth estimate), seconds.
        var seconds: Double
        var at: Double
    }

    private let entries = Locked<[URL: Entry]>([:])

    /// Seconds an unused segment is kept.
    public static let lifetime = 30.0
    /// Segments kept at most (the oldest goes first).
    public static let limit = 16

    public init() {}

    /// Keeps `body` (fetched from `url` in `seconds`) for a session to take.
    public func put(_ url: URL, body: ByteBuffer, seconds: Double) {
        let now = Monotonic.now()
        entries.withLock { entries in
            entries = entries.filter { now - $0.value.at < Self.lifetime }
            if entries.count >= Self.limit, let oldest = entries.min(by: { $0.value.at < $1.value.at })?.key { entries[oldest] = nil }
            entries[url] = Entry(body: body, seconds: seconds, at: now)
        }
    }

    /// The segment fetched from `url` and how long it took, removed; nil when none is kept (or
    /// it is too old).
    public func take(_ url: URL) -> (body: ByteBuffer, seconds: Double)? {
        let now = Monotonic.now()
        return entries.withLock { entries in
            guard let entry = entries.removeValue(forKey: url), now - entry.at < Self.lifetime else { return nil }
            return (entry.body, entry.seconds)
        }
    }

    /// How many segments are kept now.
    public var count: Int { entries.withLock { $0.count } }

    /// Drops every segment kept.
    public func removeAll() { entries.withLock { $0.removeAll() } }

    /// Fetches `url` whole (`policy`, at most `maxBytes`) and keeps it; false when it failed.
    @discardableResult
    public func fetch(_ url: URL, fetcher: HTTPFetcher, policy: FetchPolicy, maxBytes: Int = 64 << 20) async -> Bool {
        let began = Monotonic.now()
        guard let result = try? await fetcher.get(url, policy: policy, maxBytes: maxBytes) else { return false }
        put(url, body: result.body, seconds: Monotonic.now() - began)
        return true
    }
}
