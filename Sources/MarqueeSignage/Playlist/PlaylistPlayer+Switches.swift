import Foundation
import Marquee
import MarqueeStreaming

/// A schedule's switches to other playlists: set ahead, taken on time, the last picture held
/// until the next one when a playlist ends before it.
extension PlaylistPlayer {
    /// Switches to `playlist` at monotonic time `at` (a schedule's next entry): the item
    /// playing then is cut on that time (reported finished) and `playlist` starts from its
    /// first item, made ready ahead like any next item (its first picture due at `at`). A
    /// playlist that ends before holds its last picture until then. Switches set for `at` or
    /// later are replaced.
    func switchPlaylist(to playlist: Playlist, at: Double, entry: String? = nil, name: String? = nil) {
        let again = inner.withLock { inner -> Bool in
            inner.switches.removeAll { $0.at >= at - 0.001 }
            inner.switches.append((at, playlist, PlayContext(entry: entry, playlist: name)))
            inner.holdAtEnd = true
            // Made ready for an item due after the switch: again, for the new playlist's.
            guard inner.prepareStarted, (inner.preparedFor ?? .infinity) >= at - 0.001 else { return false }
            inner.preparation?.cancel()
            inner.preparation = nil
            inner.ready.removeAll()
            inner.prepareStarted = false
            return true
        }
        // (A stream made ready for a switch replaced must not take over on its instant.)
        if again { player.disarmCut() }
        changes.signal()  // the watcher or the hold takes its time from now on
    }

    /// Before ``play()``: plays `playlist` from its first item instead, holding its end (a
    /// schedule's first entry).
    func startOver(with playlist: Playlist, entry: String? = nil, name: String? = nil) {
        inner.withLock { inner in
            inner.queue = PlaylistQueue(playlist, seed: inner.seed)
            inner.holdAtEnd = true
            inner.context = PlayContext(entry: entry, playlist: name)
        }
    }

    /// Sends `event` on ``events`` (a schedule's).
    func announce(_ event: SignageEvent) { sink.send(event) }

    /// The pending switch's monotonic time, nil without one.
    var cutAt: Double? { inner.withLock { $0.switches.first?.at } }

    /// How early (seconds) a switch is taken by an item that ends just before it: its first
    /// picture is due at the switch anyway.
    static let switchEarly = 0.05

    /// Sleeps until monotonic time `at` (to the microsecond; nothing when it is past).
    static func sleep(until at: Double) async {
        let wait = at - Monotonic.now()
        if wait > 0 { try? await Task.sleep(for: .microseconds(Int(wait * 1e6))) }
    }

    /// Whether a switch is pending within `seconds`.
    func switchDue(within seconds: Double) -> Bool {
        cutAt.map { $0 - Monotonic.now() <= seconds } ?? false
    }

    /// Waits, the last picture held, for the pending switch (made ready ahead); its playlist's
    /// first item then, nil when stopped.
    func holdUntilSwitch() async -> PlaylistItem? {
        inner.withLock { $0.playing = nil }
        while !Task.isCancelled {
            let now = Monotonic.now()
            guard let at = cutAt else {
                await changes.wait(until: nil)  // a switch set (``switchPlaylist(to:at:entry:name:)``) wakes it
                continue
            }
            if at - now <= Self.prepareAhead { prepareNext(startAt: at) }
            if now >= at - Self.switchEarly {
                let first = inner.withLock { inner -> PlaylistItem? in inner.takeSwitch(now: Monotonic.now())?.first }
                await Self.sleep(until: at)
                return first
            }
            // Asleep to the preparation's time or the switch's, or until the switch changes.
            let prepareAt = at - Self.prepareAhead
            await changes.wait(until: prepareAt > now ? prepareAt : at - Self.switchEarly)
        }
        return nil
    }
}
