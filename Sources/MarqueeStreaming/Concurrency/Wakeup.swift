/// A sleep that what it waits for ends early: a task sleeps until a deadline (monotonic
/// seconds) or until ``signal()``, whichever comes first. A signal wakes every task asleep; one
/// that comes while none is asleep is kept for the next ``wait(until:)``, which then returns at
/// once, so a change that comes while a waiter looks at the state is not missed. A loop that
/// waits on it looks at everything again after each wake (a wake may find nothing new).
///
/// What replaces polling at a fixed period: the player's watchers sleep to their next deadline
/// (a quartile, a switch, an end) and the events they follow signal them.
package final class Wakeup: Sendable {
    private struct State {
        var pending = false
        var next = 0
        var waiters: [Int: CheckedContinuation<Void, Never>] = [:]
    }
    private let state = Locked(State())

    package init() {}

    /// How many tasks are asleep in ``wait(until:)`` now.
    package var sleepers: Int { state.withLock { $0.waiters.count } }

    /// Wakes every task asleep in ``wait(until:)``, or the next one to call it.
    package func signal() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            guard !s.waiters.isEmpty else {
                s.pending = true
                return []
            }
            defer { s.waiters.removeAll() }
            return Array(s.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Sleeps until monotonic time `deadline` (nil: no deadline), a ``signal()`` or the calling
    /// task's cancellation. Returns at once when a signal is pending (and takes it).
    package func wait(until deadline: Double?) async {
        let id = state.withLock { s -> Int in
            defer { s.next += 1 }
            return s.next
        }
        let timer: Task<Void, Never>? = deadline.map { deadline in
            Task { [weak self] in
                let seconds = deadline - Monotonic.now()
                if seconds > 0 {
                    do { try await Task.sleep(for: .microseconds(Int64(seconds * 1e6))) } catch { return }
                }
                self?.wake(id)
            }
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { s -> Bool in
                    if s.pending || Task.isCancelled {
                        s.pending = false
                        return true
                    }
                    // (Its timer wakes only at the deadline or after: past it, this wait is over.)
                    if let deadline, Monotonic.now() >= deadline { return true }
                    s.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            wake(id)
        }
        timer?.cancel()
    }

    /// Ends the wait `id` only (its deadline, its task's cancellation); nothing when it is over
    /// or has not begun (a cancellation before it begins is seen as it begins).
    private func wake(_ id: Int) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }
}
