internal import CCore
import Dispatch
import Foundation
import NIOConcurrencyHelpers

/// A cut the core times itself (`mq_player_activate_tracks_at`): armed ahead of its instant, it
/// runs on a thread of its own, not on Swift's cooperative pool, which a busy box can hold up
/// for tens of milliseconds: boxes on one schedule cut on the same picture whatever their
/// pools are doing. The tracks replaced stop ``lead`` before the instant (their queued pictures
/// and sound play on), and the staged ones take over on it with their timeline and label.
package final class ArmedActivation: Sendable {
    /// How it ended.
    package enum Outcome: Sendable, Equatable {
        /// Cancelled before it began: nothing changed.
        case cancelled
        /// The staged tracks took over at the instant.
        case activated
        /// The core refused (no staged track, or nothing decoded ahead yet): nothing changed.
        case refused(CoreError)
    }

    private enum State {
        case armed, firing
        case done(Outcome)
    }

    /// Seconds before the instant the tracks replaced stop decoding: a decode under way ends
    /// within it on a busy box, and the thread's own wake-up may come that late.
    package static let lead = 0.030

    /// The monotonic instant (seconds) the staged tracks' first picture is due.
    package let at: Double
    private let state = NIOLockedValueBox(State.armed)
    private let finished = DispatchSemaphore(value: 0)
    private let begun = NIOLockedValueBox(UInt64?.none)

    /// The epoch the activation began (``CoreHandle/epoch``), once it did.
    package var epoch: UInt64? { begun.withLockedValue { $0 } }

    /// Arms the activation of `core`'s staged tracks at monotonic `at`, the timeline then reading
    /// `mediaAnchor` (nil: the time of the picture, else the sound, they hold), the wall clock
    /// `wallOffset` from monotonic time (nil: unchanged), and the `frames:` label `label`
    /// (nil: unchanged).
    package init(core: CoreHandle, at: Double, mediaAnchor: Double?, wallOffset: Double?, label: String?) {
        self.at = at
        let player = core.player
        let (state, finished, begun) = (state, finished, begun)
        let thread = Thread {
            // Asleep to the lead's start in short naps (a cancellation is seen within one), then
            // the core sleeps the rest to the instant itself.
            while true {
                if case .done = state.withLockedValue({ $0 }) { return }
                let left = at - ArmedActivation.lead - 0.002 - mq_clock_now()
                if left <= 0 { break }
                Thread.sleep(forTimeInterval: min(left, 0.010))
            }
            let go = state.withLockedValue { s -> Bool in
                guard case .armed = s else { return false }
                s = .firing
                return true
            }
            guard go else { return }
            var activation = mq_activation()
            activation.at = at
            activation.media_anchor = mediaAnchor ?? .nan
            activation.wall_offset = wallOffset ?? .nan
            activation.lead = ArmedActivation.lead
            let rc: Int32 = withOptionalCString(label) { text in
                activation.label = text
                return player.withEpochLock { p, epoch in
                    guard let p else { return MQ_ERR_CLOSED.rawValue }
                    let rc = mq_player_activate_tracks_at(p, &activation)
                    if rc >= 0 {
                        epoch += 1
                        begun.withLockedValue { $0 = epoch }
                    }
                    return rc
                }
            }
            state.withLockedValue { $0 = .done(rc < 0 ? .refused(CoreError(code: rc)) : .activated) }
            finished.signal()
        }
        thread.name = "mq-cut"
        thread.start()
    }

    /// Cancels it unless it began: `.cancelled` then; else waits for its end (at most the lead)
    /// and returns it.
    @discardableResult
    package func cancel() -> Outcome {
        let (cancelled, outcome) = state.withLockedValue { s -> (Bool, Outcome?) in
            switch s {
            case .armed:
                s = .done(.cancelled)
                return (true, .cancelled)
            case .firing: return (false, nil)
            case .done(let outcome): return (false, outcome)
            }
        }
        if cancelled {
            return .cancelled
        }
        if let outcome { return outcome }
        finished.wait()
        finished.signal()  // (for another waiter)
        if case .done(let outcome) = state.withLockedValue({ $0 }) { return outcome }
        return .cancelled
    }

    /// How it ended, nil while armed or under way.
    package var outcome: Outcome? {
        if case .done(let outcome) = state.withLockedValue({ $0 }) { outcome } else { nil }
    }
}
