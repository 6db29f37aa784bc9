import Foundation
import Logging
import Marquee
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// Image and file items: read (a local file, the cache, or fetched), then shown or played from
/// memory for their time or to their end.
extension PlaylistPlayer {
    /// The largest image or file item read, bytes: read whole and handed to the core (a file
    /// plays from memory; its cost is its size, twice with sound, until it has played).
    package static let maxFileBytes = 64 << 20

    /// Shows an image item for its ``PlaylistItem/playingTime`` (5 s by default) from its
    /// picture on; plays a file item to its end, or for its duration.
    func playFile(_ item: PlaylistItem, index: Int, still: Bool, bytes prepared: [UInt8]?) async -> Outcome {
        let bytes: [UInt8]
        if let prepared {
            bytes = prepared
        } else {
            do {
                bytes = try await read(item)
            } catch {
                return .failed(error)
            }
        }
        let before = player.status.framesPresented
        if journal != nil {
            // Known already when read (checked against the announced hash, or kept by it in the
            // cache): not hashed twice.
            let known = item.sha256 ?? (item.url.isFileURL ? nil : cache?.sha256(of: item.url))
            let hashing = known.map { hash in Task { hash } } ?? Task.detached { sha256Hex(bytes) }
            inner.withLock { $0.tracking?.contentHash = hashing }
        }
        let due: Double  // when its first picture is due: its time counts from there
        do {
            due = try await player.playFile(bytes, label: item.id, still: still, from: item.startOffset)
        } catch {
            return .failed(error)
        }
        send(.started, item, index, mediaTime: nil)
        // A file's length, when its index tells it (MP4): its slot, cut on its last picture's
        // end (not after its sound drained), with quartiles; else it plays to its end.
        let duration = still ? nil : MP4Duration.seconds(of: bytes).map { max(0, $0 - item.startOffset) }
        let length = item.playingTime ?? duration
        // Its events (its end, a decode error) as the core queues them; they wake the watcher.
        let pending = Locked<[FileEvent]>([])
        let listener = Task { [player, changes] in
            for await event in player.fileEvents() {
                pending.withLock { $0.append(event) }
                changes.signal()
            }
        }
        let outcome = await follow(
            Task { () -> Outcome in
                defer { listener.cancel() }
                // Its first picture (due 0.25 s after), then its time or its end.
                var shown: Double?
                var quartiles = Quartiles()
                let deadline = Monotonic.now() + 5
                // A file that stops playing without ending (nothing presented, its position still)
                // is given up after 10 s: the playlist goes on.
                var progress = (frames: before, position: Double?.none, at: Monotonic.now())
                while !Task.isCancelled {
                    let now = Monotonic.now()
                    for event in pending.withLock({ events in
                        defer { events.removeAll() }
                        return events
                    }) {
                        switch event {
                        case .ended where !still:
                            if length != nil {
                                for q in quartiles.rest() {
                                    send(.quartile(q), item, index, mediaTime: shown.map { now - $0 })
                                }
                            }
                            return .finished
                        case .failed(_, missingStream: true):
                            continue  // a file without sound (or without pictures) plays what it has
                        case .failed(let message, _) where shown == nil:
                            return .failed(PlayerError(.media, "item \"\(item.id)\": \(message)"))
                        default: continue
                        }
                    }
                    if shown == nil {
                        // Its time counts from its first picture's due instant (the core shows it
                        // then). Not before it: the pictures counted since `before` may be the
                        // item before's last, presented while this one was being put on (a CI
                        // run's cut from an image to live came 3.8 ms early from one).
                        if now >= due, player.status.framesPresented > before {
                            shown = due
                            inner.withLock {
                                $0.playing?.mediaTime = 0
                                $0.tracking?.shownMono = shown
                            }
                            send(.impression, item, index, mediaTime: 0)
                        } else if now > deadline {
                            return .failed(
                                PlayerError(
                                    .media, "item \"\(item.id)\": no picture from \(item.url.lastPathComponent)"))
                        }
                    }
                    if !still, shown != nil {
                        let status = player.status
                        if status.framesPresented != progress.frames || status.position != progress.position {
                            progress = (status.framesPresented, status.position, now)
                        } else if now - progress.at > Self.startTimeout {
                            return .failed(
                                PlayerError(
                                    .media, "item \"\(item.id)\": stopped playing for \(Int(Self.startTimeout)) s"))
                        }
                    }
                    let cut = cutAt
                    if let cut, now >= cut { return .cut }
                    // The next deadline: a quartile, its end or the switch (a frame's precision),
                    // the time to make the next item ready; its events and a new switch wake it
                    // before (``changes``).
                    var next = Double.infinity
                    if let shown, let length {
                        let played = now - shown
                        inner.withLock { $0.playing?.mediaTime = played }
                        for q in quartiles.take(progress: played, length: length) {
                            send(.quartile(q.percent), item, index, mediaTime: min(played, q.share))
                        }
                        if played >= length { return .finished }
                        let end = min(now + length - played, cut ?? .infinity)
                        if end - now <= Self.prepareAhead {
                            prepareNext(startAt: end)
                        } else {
                            next = end - Self.prepareAhead
                        }
                        next = min(next, shown + min(quartiles.nextDue(length: length) ?? .infinity, length))
                    } else if let cut, cut - now <= Self.prepareAhead {
                        prepareNext(startAt: cut)
                    } else if shown != nil, !still {
                        // A file to its end, its length unknown: the next is made ready from its
                        // start (a live one loaded, not decoded: its entry depends on when).
                        prepareNext(startAt: nil)
                    }
                    if let cut { next = min(next, cut - Self.prepareAhead > now ? cut - Self.prepareAhead : cut) }
                    // Sampled: no event tells that its first picture was presented (looked at
                    // 20 ms after it is due, then every 100 ms up to 5 s), nor that it stopped
                    // moving (the 10 s stall watch, looked at once a second).
                    if shown == nil { next = min(next, now < due + 0.02 ? due + 0.02 : now + 0.1) }
                    if !still, shown != nil { next = min(next, now + 1) }
                    await changes.wait(until: next.isFinite ? next : nil)
                }
                return .left
            })
        if case .failed = outcome {} else { await player.cut() }  // a file's sound stops with its last picture
        return outcome
    }

    /// An image's or a file's bytes: a local file, else from the ``cache`` (kept there when
    /// fetched), else fetched (two tries); checked against its announced ``PlaylistItem/sha256``
    /// (a mismatch is not played).
    func read(_ item: PlaylistItem) async throws(PlayerError) -> [UInt8] {
        if let cache, !item.url.isFileURL { return try await cache.fetch(item.url, sha256: item.sha256) }
        let bytes = try await Self.read(item.url, fetcher: player.fetcher)
        if let announced = item.sha256, sha256Hex(bytes) != announced {
            throw PlayerError(
                .media, "\(Redact.url(item.url)): its bytes do not hash to the announced \(announced): not played")
        }
        return bytes
    }

    /// A local file's bytes, or fetched (two tries).
    private static func read(_ url: URL, fetcher: HTTPFetcher) async throws(PlayerError) -> [UInt8] {
        if url.isFileURL {
            do { return try LocalFile.read(url.path, maxBytes: maxFileBytes, what: "item") } catch {
                throw PlayerError(.playlist, error.message)
            }
        }
        var policy = FetchPolicy.manifest
        policy.attempts = 2
        do {
            let result = try await fetcher.get(url, policy: policy, maxBytes: maxFileBytes)
            return [UInt8](result.body.readableBytesView)
        } catch {
            throw PlayerError(.network, "\(Redact.url(url)): \(error)")
        }
    }
}
