import Foundation
import Logging
import Marquee
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// Stream items: loaded on the player, then followed to their first picture, quartiles and end.
extension PlaylistPlayer {
    /// Seconds a stream item may take from its load to its first picture before it is given up
    /// (reported failed, the playlist goes on).
    package static let startTimeout = 10.0

    /// Plays a stream item until it ends, fails or is left.
    func playStream(_ item: PlaylistItem, index: Int) async -> Outcome {
        let target = item.targetLatency ?? base.targetLatency
        if target > 0 { try? player.setTargetLatency(target) }
        try? player.setVolume(muted: item.muted || base.muted)
        let before = player.status.framesPresented
        // Named before the load, as a stream made ready ahead shows its first picture when the
        // load switches to it (the item before has shown its last: it was cut or ended), and
        // again after it, as the first load opens the outputs.
        player.setLabel(item.id)
        do {
            // (The first opens the outputs; they stay open through failures until stop().)
            try await player.load(sources: [item.url])
        } catch {
            return .failed(error)
        }
        player.setLabel(item.id)
        send(.started, item, index, mediaTime: nil)
        let outcome = await follow(Task { await self.watch(item, index: index, framesBefore: before) })
        if case .failed = outcome {} else { await player.cut() }  // on its last picture
        return outcome
    }

    /// Follows the playing item: its first picture, its quartiles, its end.
    ///
    /// An on-demand item's progress is its media position from its start (its
    /// ``PlaylistItem/startOffset``), so each quartile fires when the picture at its media time
    /// is presented (the wait is slept to that time, not polled); a live item's is the time it
    /// has been playing since its first picture.
    private func watch(_ item: PlaylistItem, index: Int, framesBefore: Int) async -> Outcome {
        let began = Monotonic.now()
        var shown = false
        var played = 0.0  // seconds playing since the first picture
        var lastTick = Monotonic.now()
        var quartiles = Quartiles()
        var seeked = item.startOffset <= 0
        let audioOnly = { [player] in
            !player.activeQualities.isEmpty && !player.activeQualities.contains { $0.kind == "video" }
        }
        // The first picture under the item's label wakes the watcher (the player's event pump
        // signals it), as its player events and a switch do.
        let relay = Task { [player, changes] in
            while !Task.isCancelled {
                await player.pictures.wait(until: nil)
                changes.signal()
            }
        }
        defer { relay.cancel() }
        while !Task.isCancelled {
            let status = player.status
            let now = Monotonic.now()
            if status.state == .error {
                return .failed(player.error ?? PlayerError(.media, "item \"\(item.id)\" failed"))
            }
            let onDemand = player.duration
            if !seeked, onDemand != nil {
                seeked = true
                try? player.seek(to: item.startOffset)
            }
            if !shown, status.framesPresented > framesBefore || (status.state == .playing && audioOnly()),
                let position = status.position
            {
                shown = true
                lastTick = now
                inner.withLock {
                    $0.playing?.mediaTime = position
                    $0.tracking?.shownMono = now
                }
                send(.impression, item, index, mediaTime: position)
            }
            // An item's time runs from its first picture on, but for pauses (a stall does not
            // stretch a signage slot).
            if shown, status.state != .paused { played += now - lastTick }
            lastTick = now
            if let cut = cutAt, now >= cut { return .cut }
            guard shown else {
                if now - began > Self.startTimeout {
                    return .failed(
                        PlayerError(.media, "item \"\(item.id)\": no picture within \(Int(Self.startTimeout)) s"))
                }
                // Asleep until its first picture (the core's event for the first picture under
                // its label), a player event (an audio-only item's playing state) or a switch,
                // at most the 10 s start timeout.
                await changes.wait(until: began + Self.startTimeout + 0.001)
                continue
            }
            if let position = status.position { inner.withLock { $0.playing?.mediaTime = position } }
            let cut = cutAt
            let start = onDemand != nil ? item.startOffset : 0
            let progress = onDemand != nil ? (status.position ?? start) - start : played
            let length = onDemand.map { min(item.playingTime ?? .infinity, $0 - start) } ?? item.playingTime
            if let length, length > 0 {
                for q in quartiles.take(progress: progress, length: length) {
                    send(
                        .quartile(q.percent), item, index,
                        mediaTime: onDemand != nil ? start + q.share : status.position)
                }
                if let cap = item.playingTime, progress >= cap { return .finished }
                let left = (length - progress) / max(status.playbackRate, 0.1)
                if status.state == .playing, left <= Self.prepareAhead, now + left < (cut ?? .infinity) {
                    prepareNext(startAt: now + left)
                }
            }
            if let cut, cut - now <= Self.prepareAhead { prepareNext(startAt: cut) }
            if status.state == .ended {
                if onDemand != nil {
                    for q in quartiles.rest() { send(.quartile(q), item, index, mediaTime: status.position) }
                }
                return .finished
            }
            // Asleep to the next quartile, the cap or the switch (a frame's precision), the time
            // to make the next item ready, or at most 0.25 s (its progress and state sampled 4×/s,
            // so a change of the playback rate moves a deadline by a few ms at most); the player's
            // events (a pause, its end, an error) and a new switch wake it sooner (``changes``).
            var wait = 0.25
            if let length, length > 0, status.state == .playing {
                let next = min(quartiles.nextDue(length: length) ?? .infinity, item.playingTime ?? .infinity)
                let rate = max(status.playbackRate, 0.1)
                wait = min(wait, (next - progress) / rate)
                let prepare = (length - progress) / rate - Self.prepareAhead
                if prepare > 0 { wait = min(wait, prepare) }
            }
            if let cut {
                let prepare = cut - Self.prepareAhead - Monotonic.now()
                wait = min(wait, max(0, prepare > 0 ? prepare : cut - Monotonic.now()))
            }
            await changes.wait(until: Monotonic.now() + max(0.001, wait))
        }
        return .left
    }
}
