import Foundation
public import Logging
public import Marquee
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// Plays a ``Playlist``'s items in turn on one `Player`'s outputs, with the analytics of each
/// (`PlayerEvent.item(_:)`).
///
/// - Stream items (live or on-demand DASH/HLS) play through `Player.load(sources:)`: the
///   outputs stay open, so the last picture of an item stays on screen until the first of the
///   next (no black frame). Each item gets its own target latency, mute and fit.
/// - Gapless: `prepareAhead` seconds before an item ends, the next is made ready (a stream's
///   session decoding ahead, its first picture held; an image's or a file's bytes read) and the
///   cut shows its first picture on the next frame. An item that cannot be made ready is found
///   out then: skipped at once at its turn, the one after it made ready instead.
/// - An item ends by itself at its stream's end or after its ``PlaylistItem/playingTime``
///   (counted from its first picture, except while paused: a stall does not stretch a slot;
///   on demand, by media time); a live item without a duration plays until it is left. Then
///   the ``PlaylistQueue`` (repeat, shuffle) chooses the next. A stream item without a picture
///   within `startTimeout` fails.
/// - An item that cannot be played is reported (``PlaylistItemEvent/Kind/failed(_:)``) and
///   skipped; when every item failed in turn, the next round waits
///   `PlayerOptions.minRecoveryDelay`.
/// - Image items (PNG, JPEG; a local file or a URL) are shown as a still picture for their
///   ``PlaylistItem/playingTime`` (5 s by default), without sound.
/// - File items (a local path or a URL of anything libavformat reads with its index first: an
///   MP4 with `+faststart`, MKV, TS, …; up to `maxFileBytes`) play from memory to their end
///   or for their duration; quartiles only with a duration.
///
/// Events: ``events`` carries the player's events (an item's own end, `ended`, is not passed
/// on: the playlist goes on; an item's fatal error is passed on as not fatal) and the items'.
public final class PlaylistPlayer: Sendable {
    /// The player the items play on (status, volume, display; its own `Player.events` are
    /// consumed here and passed on in ``events``).
    public let player: Player
    /// The player's events and the items' (`PlayerEvent.item(_:)`), in order. One consumer.
    public let events: SignageEvents
    let sink: SignageEvents.Sink
    let base: PlayerOptions
    let logger: Logger
    let inner: Locked<Inner>
    /// Where completed plays are recorded (proof of play), nil: not recorded.
    public let journal: ProofOfPlayJournal?
    /// Where image and file items are kept (offline play), nil: fetched each time.
    public let cache: ContentCache?
    /// The records waiting to be appended, in order (``record(_:outcome:)``), and their writer.
    let records: AsyncStream<(PlayRecord, Task<String, Never>?)>.Continuation
    private let recorder: Task<Void, Never>
    /// Records queued, not appended yet.
    let unrecorded = Locked(0)
    /// Signalled when the last queued record is appended (``stop()`` waits for it).
    let recorded = Wakeup()
    /// What wakes the watcher of the item playing (or the hold before a switch) before its next
    /// deadline: a file item's events, a switch set, the player's events.
    let changes = Wakeup()

    struct Inner {
        var queue: PlaylistQueue
        /// A command (next, previous, a jump) chose the item: the loop takes the queue's
        /// current one instead of advancing.
        var moved = false
        var runner: Task<Void, Never>?
        var forwarder: Task<Void, Never>?
        /// The playing item's watch: cancelled to leave the item.
        var watch: Task<Outcome, Never>?
        var playing: (item: PlaylistItem, index: Int, mediaTime: Double?)?
        /// The last server clock offset measured (a live item's), seconds.
        var serverOffset = 0.0
        var paused = false
        /// The next items made ready while this one plays (``prepareNext(startAt:)``), once a turn.
        var preparation: Task<Void, Never>?
        var prepareStarted = false
        /// What the preparation found, by item (``readyKey(_:)``).
        var ready: [String: Prepared] = [:]
        /// The monotonic time the preparation running is for (nil: not known).
        var preparedFor: Double?
        /// Switches to other playlists at monotonic times (a schedule's next entries), in order.
        var switches: [(at: Double, playlist: Playlist, context: PlayContext)] = []

        /// The switch due at `now` or within ``PlaylistPlayer/switchEarly`` of it (the latest
        /// of those), taken with those before it: its playlist is the queue's now.
        mutating func takeSwitch(now: Double) -> (at: Double, first: PlaylistItem?)? {
            let due = switches.filter { now >= $0.at - PlaylistPlayer.switchEarly }
            guard let last = due.last else { return nil }
            switches.removeFirst(due.count)
            queue = PlaylistQueue(last.playlist, seed: seed)
            context = last.context
            return (last.at, queue.start())
        }
        /// Whether the end of the playlist holds its last picture (a schedule's entry: until
        /// the next switch) rather than stopping.
        var holdAtEnd = false
        /// The seed of the shuffled orders (queues made for switches draw from it too).
        var seed: UInt64
        /// The schedule entry and playlist the items play in (proof of play), nil outside a schedule.
        var context: PlayContext = PlayContext()
        /// Server Unix seconds minus monotonic seconds (a schedule's clock); nil: the local clock
        /// corrected by ``serverOffset``.
        var clockOffset: Double?
        /// The item playing's proof of play, so far.
        var tracking: PlayTracking?
    }

    /// How an item's turn ended.
    enum Outcome: Sendable {
        case finished
        case failed(PlayerError)
        case left
        /// Cut by a switch to another playlist (a schedule's entry ended).
        case cut
    }

    /// A player for `playlist` with `options` for the outputs and defaults (its sources are
    /// the items'); `seed` draws the shuffled orders. Throws
    /// `PlayerError.Code.playlist` for an empty playlist, else what
    /// `Player.init(options:router:logger:)` throws. `router`: the player's (a venue proxy).
    public init(
        playlist: Playlist, options: PlayerOptions, router: (any SourceRouter)? = nil,
        seed: UInt64 = UInt64.random(in: 0...UInt64.max),
        logger: Logger = Logger(label: "marquee.playlist"), journal: ProofOfPlayJournal? = nil,
        cache: ContentCache? = nil
    ) throws(PlayerError) {
        guard !playlist.items.isEmpty else { throw PlayerError(.playlist, "the playlist has no items") }
        var options = options
        // Replaced by each item's as it plays; an item that is not a stream is not a source.
        options.sources = playlist.items.first { $0.kind == .stream }.map { [$0.url] } ?? []
        options.failFast = true  // an item that does not play is skipped, not retried
        base = options
        player = try Player(options: options, router: router, logger: logger, requiresSources: false)
        player.limitStartAttempts(2)  // an item that does not answer: skipped after 0.5 s
        self.logger = logger
        (events, sink) = SignageEvents.make()
        inner = Locked(Inner(queue: PlaylistQueue(playlist, seed: seed), seed: seed))
        self.journal = journal
        self.cache = cache
        let (stream, input) = AsyncStream<(PlayRecord, Task<String, Never>?)>.makeStream()
        records = input
        let (unrecorded, recorded) = (self.unrecorded, self.recorded)
        recorder = Task { [journal, logger] in
            for await (draft, hashing) in stream {
                var draft = draft
                draft.contentHash = await hashing?.value
                do throws(PlayerError) { try journal?.append(draft) } catch {
                    logger.error(
                        "proof of play not recorded", metadata: ["item": "\(draft.item)", "error": "\(error)"])
                }
                if unrecorded.withLock({ n -> Int in
                    n -= 1
                    return n
                }) == 0 {
                    recorded.signal()
                }
            }
        }
    }

    deinit {
        inner.withLock {
            $0.runner?.cancel()
            $0.forwarder?.cancel()
        }
        records.finish()
        sink.finish()
    }

    /// The queue now: the playlist in force, the order, the item playing.
    public var queue: PlaylistQueue { inner.withLock { $0.queue } }

    /// The item playing (or loading) and its index in the playlist's items.
    public var current: (item: PlaylistItem, index: Int)? { inner.withLock { $0.playing.map { ($0.item, $0.index) } } }

    /// Starts the first item; returns at once (the items' events tell what follows).
    public func play() async throws(PlayerError) {
        inner.withLock { inner in
            guard inner.runner == nil else { return }
            let forwarder = Task { [player, sink, inner = self.inner, changes] in
                for await event in player.events {
                    defer { changes.signal() }  // the item's watcher looks again
                    switch event {
                    case .ended, .stateChanged(.ended): continue  // an item's end: the playlist goes on
                    case .error(let error, true):  // the item is skipped
                        sink.send(.player(.error(error, fatal: false)))
                    case .timeOffsetChanged(let seconds):
                        if seconds != 0 { inner.withLock { $0.serverOffset = seconds } }
                        sink.send(.player(event))
                    default: sink.send(.player(event))
                    }
                }
            }
            inner.forwarder = forwarder
            inner.runner = Task { [weak self] in await self?.run() }
        }
    }

    /// Leaves the item playing for the next one, wrapping after the last.
    public func next() { move { $0.next() } }

    /// Leaves the item playing for the previous one, wrapping before the first.
    public func previous() { move { $0.previous() } }

    /// Leaves the item playing for the item at `index` of the playlist's items. Throws
    /// `PlayerError.Code.invalidArgument` (nothing changes) for an index outside them.
    public func jump(toIndex index: Int) throws(PlayerError) {
        try inner.withLock { (inner: inout Inner) throws(PlayerError) in
            _ = try inner.queue.jump(toIndex: index)
            Self.leave(&inner)
        }
    }

    /// Leaves the item playing for the item with `id`. Throws
    /// `PlayerError.Code.invalidArgument` (nothing changes) when none has it.
    public func jump(toID id: String) throws(PlayerError) {
        try inner.withLock { (inner: inout Inner) throws(PlayerError) in
            _ = try inner.queue.jump(toID: id)
            Self.leave(&inner)
        }
    }

    /// A new playlist (a feed refresh, a schedule): the item playing plays on (to its end, when
    /// the new playlist no longer has it), then the new one goes on (``PlaylistQueue/replace(with:)``).
    public func replace(with playlist: Playlist) {
        inner.withLock { inner in
            inner.queue.replace(with: playlist)
            // What was made ready was for the old order: again for the new one.
            inner.preparation?.cancel()
            inner.preparation = nil
            inner.ready.removeAll()
            inner.prepareStarted = false
        }
    }

    /// Pauses the item playing (`Player.pause()`); its duration stops counting. Throws
    /// `PlayerError.Code.state` for an image or file item (they are not paused)
    /// or when nothing plays.
    public func pause() throws(PlayerError) {
        if let item = inner.withLock({ $0.playing?.item }), item.kind != .stream {
            throw PlayerError(
                .state, "pause: item \"\(item.id)\" is \(item.kind == .image ? "an image" : "a file"): not paused")
        }
        try player.pause()
        let playing = inner.withLock { inner -> (item: PlaylistItem, index: Int, mediaTime: Double?)? in
            inner.paused = true
            return inner.playing
        }
        if let playing { send(.paused, playing.item, playing.index, mediaTime: player.status.position) }
    }

    /// Resumes after ``pause()``.
    public func resume() {
        player.resume()
        let playing = inner.withLock { inner -> (item: PlaylistItem, index: Int, mediaTime: Double?)? in
            defer { inner.paused = false }
            return inner.paused ? inner.playing : nil
        }
        if let playing { send(.resumed, playing.item, playing.index, mediaTime: player.status.position) }
    }

    /// Stops: the item playing is reported skipped, the outputs close.
    public func stop() async {
        let (runner, watch) = inner.withLock { inner in (inner.runner, inner.watch) }
        watch?.cancel()
        runner?.cancel()
        await runner?.value
        // Every completed play in the journal before stop() returns (at most 1 s).
        let giveUp = Monotonic.now() + 1
        while unrecorded.withLock({ $0 }) > 0, Monotonic.now() < giveUp { await recorded.wait(until: giveUp) }
        await player.stop()
        let forwarder = inner.withLock { inner -> Task<Void, Never>? in
            defer { inner.runner = nil }
            return inner.forwarder
        }
        forwarder?.cancel()
    }

    private func move(_ step: (inout PlaylistQueue) -> PlaylistItem?) {
        inner.withLock { inner in
            _ = step(&inner.queue)
            Self.leave(&inner)
        }
    }

    private static func leave(_ inner: inout Inner) {
        inner.moved = true
        inner.watch?.cancel()
        inner.preparation?.cancel()  // made ready for another order
        inner.preparation = nil
        inner.ready.removeAll()
    }
}
