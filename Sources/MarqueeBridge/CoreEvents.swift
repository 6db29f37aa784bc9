internal import CCore
import NIOConcurrencyHelpers

/// The core's events as they are queued: the core's wakeup callback (`mq_player_set_wakeup`,
/// run on the player thread that queued an event, never the audio thread) signals, and the
/// consumer drains `mq_player_poll_event`. Nothing polls on a timer: an event reaches the
/// consumer as soon as its task is scheduled.
///
/// One consumer at a time: a new ``CoreHandle/events()`` sequence finishes the one before it
/// (a reload hands the core to a new session).
package struct CoreEvents: AsyncSequence, Sendable {
    package typealias Element = CoreEvent
    let handle: CoreHandle
    let signals: AsyncStream<Void>

    package struct AsyncIterator: AsyncIteratorProtocol {
        let handle: CoreHandle
        var signals: AsyncStream<Void>.AsyncIterator

        /// The next event; `nil` once the core is closed, a newer consumer took over, or the
        /// calling task is cancelled.
        package mutating func next() async -> CoreEvent? {
            while true {
                if let event = handle.pollEvent() { return event }
                // A signal that came after the poll above is buffered: no event is missed.
                guard await signals.next() != nil else { return nil }
            }
        }
    }

    package func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(handle: handle, signals: signals.makeAsyncIterator())
    }
}

/// What the core's wakeup callback reaches: the current consumer's signal stream. Kept alive by
/// its ``CoreHandle`` until the core is destroyed (the callback's context is unretained).
final class CoreWakeup: Sendable {
    private let consumer = NIOLockedValueBox<AsyncStream<Void>.Continuation?>(nil)

    /// Called on a core thread: one signal stands for any number of events (newest kept).
    func signal() {
        consumer.withLockedValue { $0 }?.yield(())
    }

    /// A new consumer's signals; the previous consumer's sequence ends.
    func subscribe() -> AsyncStream<Void> {
        let (signals, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let old = consumer.withLockedValue { current in
            defer { current = continuation }
            return current
        }
        old?.finish()
        return signals
    }

    /// The core is gone: the consumer's sequence ends.
    func finish() {
        consumer.withLockedValue { current in
            defer { current = nil }
            return current
        }?.finish()
    }

    /// The C callback: `ctx` is an unretained `CoreWakeup`.
    static let callback: @convention(c) (UnsafeMutableRawPointer?) -> Void = { ctx in
        guard let ctx else { return }
        Unmanaged<CoreWakeup>.fromOpaque(ctx).takeUnretainedValue().signal()
    }
}
