internal import CCore
import NIOConcurrencyHelpers

/// What the core's wakeup callback reaches: the current consumer's signal stream (the player's
/// event pump, ``CoreHandle/eventSignals()``), which then drains ``CoreHandle/pollEvent()``.
/// Nothing polls on a timer: an event reaches the consumer as soon as its task is scheduled. Kept
/// alive by its ``CoreHandle`` until the core is destroyed (the callback's context is unretained).
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
