import Dispatch
import Foundation

/// SIGINT / SIGTERM as an awaitable event (so `stop()` runs and outputs are finalised).
enum Signals {
    static func waitForInterrupt() async {
        let sources = [SIGINT, SIGTERM].map { signo -> DispatchSourceSignal in
            signal(signo, SIG_IGN)
            return DispatchSource.makeSignalSource(signal: signo, queue: .global())
        }
        let box = SignalBox(sources: sources)
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                box.arm(continuation)
            }
        } onCancel: {
            box.fire()
        }
    }
}

private final class SignalBox: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<Void, Never>?
    private var fired = false
    private let sources: [DispatchSourceSignal]

    init(sources: [DispatchSourceSignal]) {
        self.sources = sources
    }

    func arm(_ c: CheckedContinuation<Void, Never>) {
        lock.lock()
        if fired {
            lock.unlock()
            c.resume()
            return
        }
        continuation = c
        lock.unlock()
        for source in sources {
            source.setEventHandler { [self] in fire() }
            source.resume()
        }
    }

    func fire() {
        lock.lock()
        fired = true
        let c = continuation
        continuation = nil
        lock.unlock()
        c?.resume()
    }
}
