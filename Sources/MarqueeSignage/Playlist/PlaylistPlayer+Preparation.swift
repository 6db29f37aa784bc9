import Foundation
import Marquee
import MarqueeStreaming

/// The next items made ready ahead of their turn (a stream's session decoding ahead, an image's
/// or a file's bytes), and what was made ready taken at the item's start.
extension PlaylistPlayer {
    /// An item made ready ahead of its turn.
    enum Prepared: Sendable {
        /// A stream made ready: its manifest and clock, and (once something plays) its session
        /// decoding ahead (`Player.prepare(_:targetLatency:startAt:)`).
        case stream
        /// An image's or a file's bytes.
        case bytes([UInt8])
        /// It cannot play: at its turn it is reported failed and skipped at once.
        case failed(PlayerError)
    }

    /// Seconds before an item's end the next one is made ready: its manifest, server clock and
    /// first segments (a live one's at its target latency, once the server has them), or its
    /// bytes. An item that cannot be made ready is reported failed at its turn, skipped at once,
    /// and the one after it made ready instead.
    package static let prepareAhead = 2.5

    /// Makes the upcoming items ready (once a turn) to start at monotonic time `startAt`: the
    /// next one, or, when it cannot be, the first after it that can. When a pending switch
    /// comes first, or nothing else comes (the playlist ends with the item playing: its last
    /// picture holds until the switch), they are the switch's playlist's, due at its instant;
    /// a preparation made for the queue's next item is made again for them when that turns
    /// out later (a switch set after it, an end moved past the switch).
    func prepareNext(startAt: Double?) {
        inner.withLock { inner in
            var after = inner.queue
            let over = after.advance() == nil
            let pending = inner.switches.first.flatMap { $0.at <= (startAt ?? .infinity) + 0.001 || over ? $0 : nil }
            if inner.prepareStarted {
                guard let pending, (inner.preparedFor ?? .infinity) < pending.at - 0.001 else { return }
                inner.preparation?.cancel()
                inner.preparation = nil
            }
            inner.prepareStarted = true
            var startAt = startAt
            var queue = inner.queue
            var first = false
            if let pending {
                queue = PlaylistQueue(pending.playlist, seed: inner.seed)
                first = true
                // Its first item is due at the switch's instant, known even when the item
                // playing has no known end (a file to its end): a live one is decoded ahead
                // for then (the stream entered mid-segment costs no decode at the cut).
                startAt = pending.at
            }
            inner.preparedFor = startAt
            var upcoming: [PlaylistItem] = []
            for _ in 0..<queue.order.count {
                guard let next = first ? queue.start() : queue.advance() else { break }
                first = false
                upcoming.append(next)
            }
            inner.ready.removeAll()
            let cut = pending != nil
            inner.preparation = Task { [weak self] in await self?.prepare(upcoming, startAt: startAt, cut: cut) }
        }
    }

    /// `cut`: `startAt` is a switch's instant, which the item made ready takes over on (the core
    /// is armed for it: ``Player/prepare(_:targetLatency:startAt:cut:label:)``).
    private func prepare(_ items: [PlaylistItem], startAt: Double?, cut: Bool) async {
        for item in items where !Task.isCancelled {
            let result: Prepared
            switch item.kind {
            case .stream:
                do throws(PlayerError) {
                    try await player.prepare(
                        item.url, targetLatency: item.targetLatency ?? base.targetLatency, startAt: startAt, cut: cut,
                        label: item.id)
                    result = .stream
                } catch { result = .failed(error) }
            case .image, .file:
                do throws(PlayerError) { result = .bytes(try await read(item)) } catch { result = .failed(error) }
                if cut, let startAt, case .bytes(let bytes) = result, !Task.isCancelled {
                    // Decoded ahead and shown on the instant by the core (the play finds it playing).
                    await player.stageFile(
                        bytes, label: item.id, still: item.kind == .image, from: item.startOffset, at: startAt)
                }
            }
            if Task.isCancelled { return }
            inner.withLock { $0.ready[Self.readyKey(item)] = result }
            if case .failed = result { continue }
            return
        }
    }

    /// What was made ready for `item` (the preparation running is awaited: it does what the
    /// item's start would); nil when nothing was.
    func takePrepared(_ item: PlaylistItem) async -> Prepared? {
        let preparation = inner.withLock { $0.preparation }
        await preparation?.value
        return inner.withLock { inner in
            inner.prepareStarted = false
            inner.preparation = nil
            inner.preparedFor = nil
            return inner.ready.removeValue(forKey: Self.readyKey(item))
        }
    }

    /// An item's key among those made ready: its id and URL (a refreshed playlist may give an
    /// id another URL).
    private static func readyKey(_ item: PlaylistItem) -> String { item.id + "\n" + item.url.absoluteString }
}
