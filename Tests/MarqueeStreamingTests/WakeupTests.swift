import Testing

@testable import MarqueeStreaming

/// The watchers' sleep: a deadline, a signal or a cancellation ends it, and nothing is missed.
/// The deadlines a wake must beat are a minute away, so a loaded machine (the parallel suites on
/// two cores) cannot make a right answer look wrong; a wait that never ends hits the time limit.
@Suite(.timeLimit(.minutes(1))) struct WakeupTests {
    /// A signal that comes while no one sleeps is kept: the next wait returns at once, the one
    /// after it sleeps to its deadline (the signal was taken).
    @Test func aSignalWithNoOneAsleepIsKeptForTheNextWait() async {
        let wakeup = Wakeup()
        wakeup.signal()
        let began = Monotonic.now()
        await wakeup.wait(until: began + 60)
        #expect(Monotonic.now() - began < 30, "the pending signal ends the wait at once")
        let again = Monotonic.now()
        await wakeup.wait(until: again + 0.2)
        let slept = Monotonic.now() - again
        #expect(slept >= 0.2, "the signal was taken: the next wait sleeps to its deadline (\(slept) s)")
    }

    /// A signal wakes every task asleep (several requests may wait on one change), long before
    /// their deadlines; a deadline already past returns at once.
    @Test func aSignalWakesEveryWaiter() async {
        let wakeup = Wakeup()
        let began = Monotonic.now()
        await withTaskGroup(of: Double.self) { group in
            for _ in 0..<3 {
                group.addTask {
                    await wakeup.wait(until: began + 120)
                    return Monotonic.now()
                }
            }
            while wakeup.sleepers < 3 { try? await Task.sleep(for: .milliseconds(10)) }  // all three asleep
            wakeup.signal()
            for await woke in group { #expect(woke - began < 60, "woken by the signal, not the deadline") }
        }
        let past = Monotonic.now()
        await wakeup.wait(until: past - 1)
        #expect(Monotonic.now() - past < 30)
    }

    /// Cancelling the sleeping task ends a wait that has no deadline.
    @Test func cancellationEndsAWaitWithoutDeadline() async {
        let wakeup = Wakeup()
        let sleeper = Task {
            await wakeup.wait(until: nil)
            return true
        }
        try? await Task.sleep(for: .milliseconds(200))
        sleeper.cancel()
        #expect(await sleeper.value)
    }
}
