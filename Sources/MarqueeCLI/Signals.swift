import Dispatch
import Foundation
import MarqueeStreaming

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
    private struct State {
        var continuation: CheckedContinuation<Void, Never>?
        var fired = false
    }
    private let state = Locked(State())
    private let sources: [DispatchSourceSignal]

    init(sources: [DispatchSourceSignal]) {
        self.sources = sources
    }

    func arm(_ c: CheckedContinuation<Void, Never>) {
        let firedAlready = state.withLock { s in
            if !s.fired { s.continuation = c }
            return s.fired
        }
        if firedAlready {
            c.resume()
            return
        }
        for source in sources {
            source.setEventHandler { [self] in fire() }
            source.resume()
        }
    }

    func fire() {
        let c = state.withLock { s in
            s.fired = true
            return s.continuation.take()
        }
        c?.resume()
    }
}
