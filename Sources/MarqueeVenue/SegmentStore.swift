import Foundation
import MarqueeStreaming
import NIOCore

/// One stored response: a complete 200 with the headers worth repeating.
struct StoredObject: Sendable {
    var headers: [(String, String)]
    var body: ByteBuffer
    /// Monotonic seconds after which it is stale (nil: kept until evicted).
    var expires: Double?
}

/// Complete segments by upstream URL, least recently used evicted first, bounded by `capacity`
/// counting each entry whole (``cost(key:_:)``: body, headers, key and the entry itself), so
/// many small answers cannot outgrow it. One lock, held for dictionary work only (never across
/// I/O).
final class SegmentStore: Sendable {
    let capacity: Int
    private let state: Locked<State>

    private struct State {
        var objects: [String: (object: StoredObject, used: UInt64)] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    init(capacity: Int) {
        self.capacity = capacity
        state = Locked(State())
    }

    /// The largest body stored: an eighth of the store (a huge file would flush every segment).
    var largestObject: Int { capacity / 8 }

    func get(_ key: String, now: Double = Monotonic.now()) -> StoredObject? {
        state.withLock { s in
            guard let entry = s.objects[key] else { return nil }
            if let expires = entry.object.expires, expires <= now {
                s.objects[key] = nil
                s.bytes -= Self.cost(key: key, entry.object)
                return nil
            }
            s.clock += 1
            s.objects[key]?.used = s.clock
            return entry.object
        }
    }

    /// Stores `object` under `key` (replacing any), evicting the least recently used to fit.
    func put(_ key: String, _ object: StoredObject) {
        let size = Self.cost(key: key, object)
        guard size <= largestObject else { return }
        state.withLock { s in
            if let old = s.objects.removeValue(forKey: key) { s.bytes -= Self.cost(key: key, old.object) }
            while s.bytes + size > capacity, let victim = s.objects.min(by: { $0.value.used < $1.value.used }) {
                s.objects[victim.key] = nil
                s.bytes -= Self.cost(key: victim.key, victim.value.object)
            }
            s.clock += 1
            s.objects[key] = (object, s.clock)
            s.bytes += size
        }
    }

    var bytes: Int { state.withLock { $0.bytes } }

    /// What an entry costs the store: its body, its headers, its key and 256 bytes for the entry.
    static func cost(key: String, _ object: StoredObject) -> Int {
        object.body.readableBytes + key.utf8.count
            + object.headers.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 4 } + 256
    }
}
