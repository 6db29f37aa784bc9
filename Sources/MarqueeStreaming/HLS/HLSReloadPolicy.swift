/// When to reload a live HLS media playlist (RFC 8216 §6.3.4), as a pure state machine with an
/// injected clock: after a reload that brought a change, wait one target duration; when it
/// brought nothing new, half a target duration. A playlist that has not changed for 3.5 target
/// durations is *stuck*: reported once per episode, and reloading goes on (a live stream is
/// never given up). A playlist whose media sequence goes backwards is reported as reset.
package struct HLSReloadPolicy: Sendable {
    package enum Outcome: Sendable, Equatable {
        /// New segments (or parts): reload after `after` seconds.
        case changed(after: Double)
        /// Nothing new: reload after `after` seconds.
        case unchanged(after: Double)
        /// Nothing new for 3.5 target durations: reported once, reload after `after` seconds.
        case stuck(after: Double, for: Double)
        /// The media sequence went back (an encoder restart): start over from this playlist.
        case reset(after: Double)
    }

    private var lastNext: UInt64?
    private var lastParts = 0
    private var lastChange: Double?
    private var stuckReported = false

    package init() {}

    /// Records the playlist loaded at time `now` (seconds, any monotonic clock).
    package mutating func loaded(_ playlist: HLSMediaPlaylist, now: Double) -> Outcome {
        let target = max(playlist.targetDuration, 0.1)
        let next = playlist.nextSequence
        let parts = playlist.pendingParts.count
        defer {
            lastNext = next
            lastParts = parts
        }
        guard let previous = lastNext, let changedAt = lastChange else {
            lastChange = now
            return .changed(after: target)
        }
        if next < previous {
            lastChange = now
            stuckReported = false
            return .reset(after: target)
        }
        if next > previous || parts != lastParts {
            lastChange = now
            stuckReported = false
            // LL-HLS: a playlist with parts is reloaded about every part.
            return .changed(after: playlist.partTarget ?? target)
        }
        let half = (playlist.partTarget ?? target) / 2
        let unchangedFor = now - changedAt
        if unchangedFor >= 3.5 * target, !stuckReported {
            stuckReported = true
            return .stuck(after: half, for: unchangedFor)
        }
        return .unchanged(after: half)
    }
}
