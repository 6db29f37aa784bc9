import MarqueeStreaming
import NIOCore

/// The compressed segments of a live session, kept so a user delay (time-shift) and a pause can
/// go back up to ``maxDuration`` seconds without the network: every segment fetched is kept,
/// the oldest leave first, bounded by duration and by bytes. Keyed by the core track and the
/// segment's media time (`$Time$`, also computed for `$Number$` templates: unlike a number in a
/// moving SegmentTimeline window, it names one segment for good).
final class DelayStore: Sendable {
    struct Entry: Sendable {
        var start: Double
        var end: Double
        var bytes: ByteBuffer
        /// The representation the bytes are of (ABR: the init segment to give the core first).
        var representation: String
    }

    private struct Key: Hashable {
        var track: Int32
        var time: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        /// Per track: media times in order (oldest first).
        var order: [Int32: [UInt64]] = [:]
        var bytes = 0
    }

    let maxDuration: Double
    let maxBytes: Int
    private let state = Locked(State())

    init(maxDuration: Double, maxBytes: Int) {
        self.maxDuration = maxDuration
        self.maxBytes = maxBytes
    }

    /// Keeps a complete segment, in a buffer of its own size (one grown chunk by chunk holds up
    /// to twice its bytes: the store's bound is on memory, not only on what it counts).
    func put(track: Int32, time: UInt64, start: Double, end: Double, bytes: ByteBuffer, representation: String) {
        let bytes =
            bytes.capacity > bytes.readableBytes + bytes.readableBytes / 16
            ? ByteBuffer(bytes: bytes.readableBytesView) : bytes
        state.withLock { s in
            let key = Key(track: track, time: time)
            if let old = s.entries[key] {
                s.bytes -= old.bytes.readableBytes
            } else {  // kept sorted: the collector and a delayed presenter may add out of order
                var times = s.order[track] ?? []
                times.insert(time, at: times.firstIndex { $0 > time } ?? times.endIndex)
                s.order[track] = times
            }
            s.entries[key] = Entry(start: start, end: end, bytes: bytes, representation: representation)
            s.bytes += bytes.readableBytes
            Self.evict(&s, track: track, maxDuration: maxDuration, maxBytes: maxBytes)
        }
    }

    private static func evict(_ s: inout State, track: Int32, maxDuration: Double, maxBytes: Int) {
        guard let newest = s.order[track]?.last.flatMap({ s.entries[Key(track: track, time: $0)] }) else { return }
        while let oldest = s.order[track]?.first, let entry = s.entries[Key(track: track, time: oldest)],
            newest.end - entry.start > maxDuration + (entry.end - entry.start) || s.bytes > maxBytes
        {
            s.order[track]!.removeFirst()
            s.entries[Key(track: track, time: oldest)] = nil
            s.bytes -= entry.bytes.readableBytes
        }
    }

    func entry(track: Int32, time: UInt64) -> Entry? {
        state.withLock { $0.entries[Key(track: track, time: time)] }
    }

    /// The earliest presentation time from which every segment of `tracks` up to the newest is
    /// kept, nil when a track has nothing.
    func continuousSince(tracks: [Int32]) -> Double? {
        state.withLock { s in
            var since = -Double.infinity
            for track in tracks {
                guard let times = s.order[track], let last = times.last,
                    let newest = s.entries[Key(track: track, time: last)]
                else { return nil }
                var start = newest.start
                for t in times.reversed().dropFirst() {  // back while each segment ends where the next starts
                    guard let e = s.entries[Key(track: track, time: t)], abs(e.end - start) < 0.01 else { break }
                    start = e.start
                }
                since = max(since, start)
            }
            return since
        }
    }

    /// Bytes held.
    var bytes: Int { state.withLock { $0.bytes } }
}

/// The time shift of a live session, shared by its feeders: the user delay, the pause flag and
/// a generation counter bumped whenever the presented position moves by more than steering
/// can follow (the feeders then flush and restart from the new position).
final class TimeShift: Sendable {
    private struct State {
        var delay = 0.0
        var paused = false
        var generation = 0
        var anchor: Double?
        var version = 0  // bumped by every set
        var nextWaiter = 0
        /// Waiters by id: nil until the waiter has registered its continuation.
        var waiters: [Int: CheckedContinuation<Void, Never>?] = [:]
    }

    private let state = Locked(State())

    var delay: Double { state.withLock { $0.delay } }
    var paused: Bool { state.withLock { $0.paused } }
    var generation: Int { state.withLock { $0.generation } }
    /// Bumped by every ``set(delay:paused:reposition:anchor:)``.
    var version: Int { state.withLock { $0.version } }
    /// On demand: the position to restart from after a resume (live restarts from the delay).
    var anchor: Double? { state.withLock { $0.anchor } }

    /// Sets the delay; `reposition`: the feeders restart from the new position. Wakes every
    /// ``changed(from:paused:)`` waiter.
    func set(delay: Double, paused: Bool? = nil, reposition: Bool, anchor: Double? = nil) {
        let waiters = state.withLock { s in
            s.delay = delay
            s.anchor = anchor
            if let paused { s.paused = paused }
            if reposition { s.generation += 1 }
            s.version += 1
            let registered = s.waiters.compactMap(\.value)
            s.waiters = s.waiters.filter { $0.value == nil }
            return registered
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once anything was set since ``version`` was `version`, or the task is
    /// cancelled: the feeders wait here instead of polling.
    func changed(from version: Int) async {
        let id = state.withLock { s in
            defer { s.nextWaiter += 1 }
            s.waiters[s.nextWaiter] = .some(nil)
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (waiter: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s in
                    // Gone: cancelled before registering.
                    guard s.waiters[id] != nil, s.version == version else {
                        s.waiters[id] = nil
                        return true
                    }
                    s.waiters[id] = waiter
                    return false
                }
                if now { waiter.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { s in s.waiters.removeValue(forKey: id) ?? nil }
            waiter?.resume()
        }
    }
}
