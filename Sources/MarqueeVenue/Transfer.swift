import Foundation
import MarqueeStreaming
import NIOCore

/// The head of an upstream answer.
struct TransferHead: Sendable {
    var status: Int
    var reason: String
    var headers: [(String, String)]
    /// Where the answer came from after redirects.
    var url: URL

    func header(_ name: String) -> String? {
        headers.first { $0.0.caseInsensitiveCompare(name) == .orderedSame }?.1
    }
}

/// What a reader of a ``Transfer`` is handed, in order: the head, the body's chunks, the end.
enum TransferPart: Sendable {
    case head(TransferHead)
    case chunk(ByteBuffer)
}

/// One upstream answer being received, shared by every request that wants it (coalescing): a
/// reader that joins late is first handed what has arrived, then each chunk as it comes. The
/// chunks are kept until the end (a late joiner needs them; a finished transfer's body goes to
/// the store as one buffer). When the last reader leaves before the end, `onAbandoned` runs (the
/// fetch is cancelled).
final class Transfer: Sendable {
    private let state = Locked(State())
    let onAbandoned: Locked<(@Sendable () -> Void)?> = Locked(nil)
    /// The proxy-wide bound on bytes kept by transfers under way (nil: none but `retainLimit`).
    let budget: ByteBudget?

    private struct State {
        var head: TransferHead?
        var chunks: [ByteBuffer] = []
        var bytes = 0
        var end: Result<Void, any Error>?
        var readers: [Int: AsyncThrowingStream<TransferPart, any Error>.Continuation] = [:]
        var nextReader = 0
        /// The body grew past `retainLimit` (or the budget ran out): its chunks are no longer
        /// kept, nobody may join.
        var overflowed = false
        /// Bytes taken from `budget` for the chunks kept.
        var reserved = 0
        /// Judged for the store (``settle()``), and who waits for that.
        var settled = false
        var settling: [CheckedContinuation<Void, Never>] = []
    }

    /// Bytes of body kept for readers who join late; past it the transfer is only its readers'.
    let retainLimit: Int

    init(retainLimit: Int, budget: ByteBudget? = nil) {
        self.retainLimit = retainLimit
        self.budget = budget
    }

    deinit {
        let reserved = state.withLock { $0.reserved }
        budget?.release(reserved)
    }

    func receive(head: TransferHead) {
        let readers = state.withLock { s in
            s.head = head
            return Array(s.readers.values)
        }
        for r in readers { r.yield(.head(head)) }
    }

    func receive(chunk: ByteBuffer) {
        let (readers, released) = state.withLock {
            s -> ([AsyncThrowingStream<TransferPart, any Error>.Continuation], Int) in
            s.bytes += chunk.readableBytes
            var released = 0
            if !s.overflowed, s.bytes <= retainLimit, budget?.reserve(chunk.readableBytes) ?? true {
                s.chunks.append(chunk)
                if budget != nil { s.reserved += chunk.readableBytes }
            } else {
                s.overflowed = true
                s.chunks = []
                (released, s.reserved) = (s.reserved, 0)
            }
            return (Array(s.readers.values), released)
        }
        budget?.release(released)
        for r in readers { r.yield(.chunk(chunk)) }
    }

    func finish(_ result: Result<Void, any Error>) {
        let readers = state.withLock { s in
            s.end = result
            defer { s.readers = [:] }
            return Array(s.readers.values)
        }
        for r in readers {
            switch result {
            case .success: r.finish()
            case .failure(let e): r.finish(throwing: e)
            }
        }
    }

    /// The parts so far and then as they come. Ends when the transfer does (throwing its error).
    /// Nil when the body outgrew what is kept (the caller fetches for itself).
    func read() -> AsyncThrowingStream<TransferPart, any Error>? {
        let (stream, continuation) = AsyncThrowingStream<TransferPart, any Error>.makeStream()
        let joined: Int?? = state.withLock { s -> Int?? in
            if s.overflowed { return .none }
            if let head = s.head { continuation.yield(.head(head)) }
            for c in s.chunks { continuation.yield(.chunk(c)) }
            if let end = s.end {
                switch end {
                case .success: continuation.finish()
                case .failure(let e): continuation.finish(throwing: e)
                }
                return .some(nil)
            }
            let id = s.nextReader
            s.nextReader += 1
            s.readers[id] = continuation
            return .some(id)
        }
        guard let joined else { return nil }
        if let id = joined {
            continuation.onTermination = { [weak self] _ in self?.leave(id) }
        }
        return stream
    }

    private func leave(_ id: Int) {
        let abandoned = state.withLock { s -> Bool in
            guard s.readers.removeValue(forKey: id) != nil else { return false }
            return s.readers.isEmpty && s.end == nil
        }
        if abandoned { onAbandoned.withLock { $0 }?() }
    }

    /// The proxy has judged the finished body for the store (stored or not): the waiters of
    /// ``settled()`` go on.
    func settle() {
        let waiting = state.withLock { s in
            s.settled = true
            defer { s.settling = [] }
            return s.settling
        }
        for w in waiting { w.resume() }
    }

    /// Returns once ``settle()`` was called (at once if it was). Every transfer in the proxy's
    /// in-flight table is settled when it ends, whatever its outcome.
    func settled() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let done = state.withLock { s -> Bool in
                if s.settled { return true }
                s.settling.append(c)
                return false
            }
            if done { c.resume() }
        }
    }

    /// Whether a reader may still join (the body has not outgrown what is kept).
    var isJoinable: Bool { state.withLock { !$0.overflowed } }

    var isFinished: Bool { state.withLock { $0.end != nil } }
    /// Judged for the store and out of the in-flight table (``settle()``).
    var isSettled: Bool { state.withLock { $0.settled } }
    var receivedBytes: Int { state.withLock { $0.bytes } }

    /// The whole body once finished successfully (one buffer).
    func body() -> ByteBuffer? {
        state.withLock { s in
            guard case .success = s.end, !s.overflowed else { return nil }
            var all = ByteBuffer()
            all.reserveCapacity(s.bytes)
            for var c in s.chunks { all.writeBuffer(&c) }
            return all
        }
    }

    var head: TransferHead? { state.withLock { $0.head } }
}

/// Bytes that transfers under way may keep for late joiners, all together: many answers at once
/// (a guest asking for every segment of a long DVR window) must not hold more than this. A
/// transfer that cannot reserve a chunk stops keeping (its readers still get every byte).
final class ByteBudget: Sendable {
    let limit: Int
    private let used = Locked(0)

    init(limit: Int) { self.limit = limit }

    /// Takes `bytes` when they fit under the limit.
    func reserve(_ bytes: Int) -> Bool {
        used.withLock { u in
            guard u + bytes <= limit else { return false }
            u += bytes
            return true
        }
    }

    func release(_ bytes: Int) {
        guard bytes > 0 else { return }
        used.withLock { $0 = max(0, $0 - bytes) }
    }

    var inUse: Int { used.withLock { $0 } }
}
