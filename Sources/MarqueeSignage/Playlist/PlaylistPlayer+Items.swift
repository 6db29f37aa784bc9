import Foundation
import Logging
import Marquee
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// The items in turn: each played by its kind until it ends, fails or is left, then the next
/// one the queue (or a switch) chooses; the items' events.
extension PlaylistPlayer {
    func run() async {
        var item = inner.withLock { inner in
            // A jump (or a step) before play() chose the first item.
            defer { inner.moved = false }
            return inner.moved ? inner.queue.current ?? inner.queue.start() : inner.queue.start()
        }
        var failedInARow = 0
        while let playing = item, !Task.isCancelled {
            let index = inner.withLock { inner in inner.queue.playlist.items.firstIndex { $0.id == playing.id } ?? -1 }
            let status = player.status
            inner.withLock {
                $0.playing = (playing, index, nil)
                $0.tracking = PlayTracking(framesBefore: status.framesPresented, droppedBefore: status.framesDropped)
            }
            let outcome = await play(playing, index: index)
            let mediaTime = inner.withLock { $0.playing?.mediaTime }
            record(playing, outcome: outcome)
            switch outcome {
            case .finished:
                failedInARow = 0
                send(.finished, playing, index, mediaTime: mediaTime)
            case .left:
                failedInARow = 0
                send(.skipped, playing, index, mediaTime: mediaTime)
            case .cut:
                failedInARow = 0
                send(.finished, playing, index, mediaTime: mediaTime)
            case .failed(let error):
                failedInARow += 1
                logger.warning("playlist item failed: skipped", metadata: ["id": "\(playing.id)", "error": "\(error)"])
                send(.failed(error), playing, index, mediaTime: mediaTime)
            }
            if Task.isCancelled { break }
            let count = inner.withLock { $0.queue.order.count }
            if failedInARow >= max(1, count), !switchDue(within: base.minRecoveryDelay) {
                // Every item failed in turn (the network is down?): a pause before the next round.
                failedInARow = 0
                try? await Task.sleep(for: .milliseconds(Int(base.minRecoveryDelay * 1000)))
            }
            var switchAt: Double?
            item = inner.withLock { inner in
                if let taken = inner.takeSwitch(now: Monotonic.now()) {
                    // The switch: the new playlist from its first item.
                    inner.moved = false
                    switchAt = taken.at
                    return taken.first
                }
                if inner.moved {
                    inner.moved = false
                    return inner.queue.current
                }
                return inner.queue.advance()
            }
            if let switchAt { await Self.sleep(until: switchAt) }  // (an item ended just before it)
            if item == nil, inner.withLock({ $0.holdAtEnd }) {
                // The playlist is over before its entry: its last picture holds until the switch.
                item = await holdUntilSwitch()
            }
        }
        inner.withLock { $0.playing = nil }
        if !Task.isCancelled {
            // Repeat off, after the last item: the playlist is over.
            await player.stop()
            sink.send(.ended)
        }
    }

    /// Plays `item` until it ends, fails or is left.
    private func play(_ item: PlaylistItem, index: Int) async -> Outcome {
        let prepared = await takePrepared(item)
        if case .failed(let error) = prepared { return .failed(error) }
        player.setFit(item.fit ?? base.fit)
        var bytes: [UInt8]?
        if case .bytes(let b) = prepared { bytes = b }
        switch item.kind {
        case .stream: return await playStream(item, index: index)
        case .image: return await playFile(item, index: index, still: true, bytes: bytes)
        case .file: return await playFile(item, index: index, still: false, bytes: bytes)
        }
    }

    /// Waits for an item's watch, cancelled by a move (next, previous, a jump) or by stop().
    func follow(_ watch: Task<Outcome, Never>) async -> Outcome {
        let left = inner.withLock { inner -> Bool in
            inner.watch = watch
            return inner.moved
        }
        if left { watch.cancel() }
        let outcome = await withTaskCancellationHandler {
            await watch.value
        } onCancel: {
            watch.cancel()
        }
        inner.withLock { $0.watch = nil }
        return outcome
    }

    func send(_ kind: PlaylistItemEvent.Kind, _ item: PlaylistItem, _ index: Int, mediaTime: Double?) {
        let offset = inner.withLock { $0.serverOffset }
        sink.send(
            .item(
                PlaylistItemEvent(
                    kind, id: item.id, index: index, mediaTime: mediaTime,
                    serverTime: Date().timeIntervalSince1970 + offset)))
    }
}
