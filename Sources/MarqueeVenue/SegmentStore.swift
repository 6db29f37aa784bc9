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

/// Complete segments by upstream URL, least recently used evicted first, the bodies' bytes
/// bounded by `capacity`. One lock, held for dictionary work only (never across I/O).
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
                s.bytes -= entry.object.body.readableBytes
                return nil
            }
            s.clock += 1
            s.objects[key]?.used = s.clock
            return entry.object
        }
    }

    /// Stores `object` under `key` (replacing any), evicting the least recently used to fit.
    func put(_ key: String, _ object: StoredObject) {
        let size = object.body.readableBytes
        guard size <= largestObject else { return }
        state.withLock { s in
            if let old = s.objects.removeValue(forKey: key) { s.bytes -= old.object.body.readableBytes }
            while s.bytes + size > capacity, let victim = s.objects.min(by: { $0.value.used < $1.value.used }) {
                s.objects[victim.key] = nil
                s.bytes -= victim.value.object.body.readableBytes
            }
            s.clock += 1
            s.objects[key] = (object, s.clock)
            s.bytes += size
        }
    }


    var bytes: Int { state.withLock { $0.bytes } }
}
