import NIOConcurrencyHelpers

/// A value behind a lock: `withLock` runs its body with the value, one caller at a time. The
/// drop-in for the standard library's `Mutex` throughout the player, built on SwiftNIO's
/// `NIOLock` (a `pthread_mutex_t`).
///
/// Why not `Mutex`: on Linux it is a priority-inheriting futex whose contended path (spinning in
/// `_lockSlow`, then `FUTEX_LOCK_PI`, where the kernel hands the lock over) runs in the
/// uninstrumented standard library, so ThreadSanitizer sees no ordering between two holders
/// that met there and reports a race between two bodies of the same lock (it did, now and
/// then, for `PlaybackSession`'s monitor under `scripts/tsan`). ThreadSanitizer intercepts
/// `pthread_mutex_lock`, so races it reports are real ones. The cost is the same order: an
/// uncontended lock and unlock is an atomic each way.
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NIOLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with the value, the lock held.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
