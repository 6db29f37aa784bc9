import Foundation
import Marquee
import MarqueeStreaming

/// Proof of play: where and how the item playing is shown, and its play recorded once it ends.
extension PlaylistPlayer {
    /// Where items play (a schedule's entry and playlist name).
    struct PlayContext: Sendable {
        var entry: String?
        var playlist: String?
    }

    /// What proof of play needs of the item playing.
    struct PlayTracking: Sendable {
        var framesBefore: Int
        var droppedBefore: Int
        var shownMono: Double?
        var contentHash: Task<String, Never>?
    }

    /// Records `item`'s play (proof of play) when it was shown: queued for the journal at
    /// once, its content hash awaited there.
    func record(_ item: PlaylistItem, outcome: Outcome) {
        guard journal != nil else { return }
        let now = Monotonic.now()
        let (tracking, context, clockOffset, serverOffset) = inner.withLock {
            ($0.tracking, $0.context, $0.clockOffset, $0.serverOffset)
        }
        guard let tracking, let shown = tracking.shownMono else { return }
        let how: String
        switch outcome {
        case .finished, .cut: how = "finished"
        case .left: how = "skipped"
        case .failed: how = "failed"
        }
        let offset = clockOffset ?? (Monotonic.realtime() - Monotonic.now() + serverOffset)
        let status = player.status
        let draft = PlayRecord(
            item: item.id, url: item.url.absoluteString, entry: context.entry, playlist: context.playlist,
            start: shown + offset, end: max(shown, now) + offset, startMono: shown, endMono: max(shown, now),
            framesPresented: max(0, status.framesPresented - tracking.framesBefore),
            framesDropped: max(0, status.framesDropped - tracking.droppedBefore),
            displayOn: !player.isDisplayOff, outcome: how)
        unrecorded.withLock { $0 += 1 }
        records.yield((draft, tracking.contentHash))
    }

    /// Times proof of play on a server clock: server Unix seconds = monotonic + `offset`.
    func setClockOffset(_ offset: Double) { inner.withLock { $0.clockOffset = offset } }
}
