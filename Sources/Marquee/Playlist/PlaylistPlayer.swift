import Foundation
public import Logging
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// Plays a ``Playlist``'s items in turn on one ``Player``'s outputs, with the analytics of each
/// (``PlayerEvent/item(_:)``).
///
/// - Stream items (live or on-demand DASH/HLS) play through ``Player/load(sources:)``: the
///   outputs stay open, so the last picture of an item stays on screen until the first of the
///   next (no black frame). Each item gets its own target latency, mute and fit.
/// - Gapless: ``prepareAhead`` seconds before an item ends, the next is made ready (a stream's
///   session decoding ahead, its first picture held; an image's or a file's bytes read) and the
///   cut shows its first picture on the next frame. An item that cannot be made ready is found
///   out then: skipped at once at its turn, the one after it made ready instead.
/// - An item ends by itself at its stream's end or after its ``PlaylistItem/playingTime``
///   (counted from its first picture, except while paused: a stall does not stretch a slot;
///   on demand, by media time); a live item without a duration plays until it is left. Then
///   the ``PlaylistQueue`` (repeat, shuffle) chooses the next. A stream item without a picture
///   within ``startTimeout`` fails.
/// - An item that cannot be played is reported (``PlaylistItemEvent/Kind/failed(_:)``) and
///   skipped; when every item failed in turn, the next round waits
///   ``PlayerOptions/minRecoveryDelay``.
/// - Image items (PNG, JPEG; a local file or a URL) are shown as a still picture for their
///   ``PlaylistItem/playingTime`` (5 s by default), without sound.
/// - File items (a local path or a URL of anything libavformat reads with its index first: an
///   MP4 with `+faststart`, MKV, TS, …; up to ``maxFileBytes``) play from memory to their end
///   or for their duration; quartiles only with a duration.
///
/// Events: ``events`` carries the player's events (an item's own end, `ended`, is not passed
/// on: the playlist goes on; an item's fatal error is passed on as not fatal) and the items'.
public final class PlaylistPlayer: Sendable {
    /// The player the items play on (status, volume, display; its own ``Player/events`` are
    /// consumed here and passed on in ``events``).
    public let player: Player
    /// The player's events and the items' (``PlayerEvent/item(_:)``), in order. One consumer.
    public let events: PlayerEvents
    private let sink: PlayerEvents.Sink
    private let base: PlayerOptions
    private let logger: Logger
    private let inner: Locked<Inner>
    /// Where completed plays are recorded (proof of play), nil: not recorded.
    public let journal: ProofOfPlayJournal?
    /// Where image and file items are kept (offline play), nil: fetched each time.
    public let cache: ContentCache?
    /// The records waiting to be appended, in order (``record(_:outcome:)``), and their writer.
    private let records: AsyncStream<(PlayRecord, Task<String, Never>?)>.Continuation
    private let recorder: Task<Void, Never>
    /// Records queued, not appended yet.
    private let unrecorded = Locked(0)

    private struct Inner {
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

    /// An item made ready ahead of its turn.
    enum Prepared: Sendable {
        /// A stream made ready: its manifest and clock, and (once something plays) its session
        /// decoding ahead (``Player/prepare(_:targetLatency:startAt:)``).
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
    public static let prepareAhead = 2.5

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
    /// ``PlayerError/Code-swift.struct/playlist`` for an empty playlist, else what
    /// ``Player/init(options:logger:)`` throws.
    public init(
        playlist: Playlist, options: PlayerOptions, seed: UInt64 = UInt64.random(in: 0...UInt64.max),
        logger: Logger = Logger(label: "marquee.playlist"), journal: ProofOfPlayJournal? = nil,
        cache: ContentCache? = nil
    ) throws(PlayerError) {
        guard !playlist.items.isEmpty else { throw PlayerError(.playlist, "the playlist has no items") }
        var options = options
        // Replaced by each item's; an item that is not a stream is not a source.
        options.sources = [playlist.items.first { $0.kind == .stream }?.url ?? URL(string: "http://127.0.0.1/")!]
        options.failFast = true  // an item that does not play is skipped, not retried
        base = options
        player = try Player(options: options, logger: logger)
        player.inner.withLock { $0.startAttempts = 2 }  // an item that does not answer: skipped after 0.5 s
        self.logger = logger
        (events, sink) = PlayerEvents.make()
        inner = Locked(Inner(queue: PlaylistQueue(playlist, seed: seed), seed: seed))
        self.journal = journal
        self.cache = cache
        let (stream, input) = AsyncStream<(PlayRecord, Task<String, Never>?)>.makeStream()
        records = input
        let unrecorded = self.unrecorded
        recorder = Task { [journal, logger] in
            for await (draft, hashing) in stream {
                var draft = draft
                draft.contentHash = await hashing?.value
                do throws(PlayerError) { try journal?.append(draft) } catch {
                    logger.error(
                        "proof of play not recorded", metadata: ["item": "\(draft.item)", "error": "\(error)"])
                }
                unrecorded.withLock { $0 -= 1 }
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

    /// Records `item`'s play (proof of play) when it was shown: queued for the journal at
    /// once, its content hash awaited there.
    private func record(_ item: PlaylistItem, outcome: Outcome) {
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
            displayOn: !player.inner.withLock { $0.displayOff }, outcome: how)
        unrecorded.withLock { $0 += 1 }
        records.yield((draft, tracking.contentHash))
    }

    /// The queue now: the playlist in force, the order, the item playing.
    public var queue: PlaylistQueue { inner.withLock { $0.queue } }

    /// The item playing (or loading) and its index in the playlist's items.
    public var current: (item: PlaylistItem, index: Int)? { inner.withLock { $0.playing.map { ($0.item, $0.index) } } }

    /// Starts the first item; returns at once (the items' events tell what follows).
    public func play() async throws(PlayerError) {
        inner.withLock { inner in
            guard inner.runner == nil else { return }
            let forwarder = Task { [player, sink, inner = self.inner] in
                for await event in player.events {
                    switch event {
                    case .ended, .stateChanged(.ended): continue  // an item's end: the playlist goes on
                    case .error(let error, true): sink.send(.error(error, fatal: false))  // the item is skipped
                    case .timeOffsetChanged(let seconds):
                        if seconds != 0 { inner.withLock { $0.serverOffset = seconds } }
                        sink.send(event)
                    default: sink.send(event)
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
    /// ``PlayerError/Code-swift.struct/invalidArgument`` (nothing changes) for an index outside them.
    public func jump(toIndex index: Int) throws(PlayerError) {
        try inner.withLock { (inner: inout Inner) throws(PlayerError) in
            _ = try inner.queue.jump(toIndex: index)
            Self.leave(&inner)
        }
    }

    /// Leaves the item playing for the item with `id`. Throws
    /// ``PlayerError/Code-swift.struct/invalidArgument`` (nothing changes) when none has it.
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

    /// Switches to `playlist` at monotonic time `at` (a schedule's next entry): the item
    /// playing then is cut on that time (reported finished) and `playlist` starts from its
    /// first item, made ready ahead like any next item (its first picture due at `at`). A
    /// playlist that ends before holds its last picture until then. Switches set for `at` or
    /// later are replaced.
    func switchPlaylist(to playlist: Playlist, at: Double, entry: String? = nil, name: String? = nil) {
        inner.withLock { inner in
            inner.switches.removeAll { $0.at >= at - 0.001 }
            inner.switches.append((at, playlist, PlayContext(entry: entry, playlist: name)))
            inner.holdAtEnd = true
            // Made ready for an item due after the switch: again, for the new playlist's.
            if inner.prepareStarted, (inner.preparedFor ?? .infinity) >= at - 0.001 {
                inner.preparation?.cancel()
                inner.preparation = nil
                inner.ready.removeAll()
                inner.prepareStarted = false
            }
        }
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

    /// Times proof of play on a server clock: server Unix seconds = monotonic + `offset`.
    func setClockOffset(_ offset: Double) { inner.withLock { $0.clockOffset = offset } }

    /// Sends `event` on ``events`` (a schedule's).
    func announce(_ event: PlayerEvent) { sink.send(event) }

    /// The pending switch's monotonic time, nil without one.
    private var cutAt: Double? { inner.withLock { $0.switches.first?.at } }

    /// Pauses the item playing (``Player/pause()``); its duration stops counting. Throws
    /// ``PlayerError/Code-swift.struct/state`` for an image or file item (they are not paused)
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
        // Every completed play in the journal before stop() returns.
        for _ in 0..<500 where unrecorded.withLock({ $0 }) > 0 { try? await Task.sleep(for: .milliseconds(2)) }
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

    /// Makes the upcoming items ready (once a turn) to start at monotonic time `startAt`: the
    /// next one, or, when it cannot be, the first after it that can. When a pending switch
    /// comes first, or nothing else comes (the playlist ends with the item playing: its last
    /// picture holds until the switch), they are the switch's playlist's, due at its instant;
    /// a preparation made for the queue's next item is made again for them when that turns
    /// out later (a switch set after it, an end moved past the switch).
    private func prepareNext(startAt: Double?) {
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
            inner.preparation = Task { [weak self] in await self?.prepare(upcoming, startAt: startAt) }
        }
    }

    private func prepare(_ items: [PlaylistItem], startAt: Double?) async {
        for item in items where !Task.isCancelled {
            let result: Prepared
            switch item.kind {
            case .stream:
                do throws(PlayerError) {
                    try await player.prepare(
                        item.url, targetLatency: item.targetLatency ?? base.targetLatency, startAt: startAt)
                    result = .stream
                } catch { result = .failed(error) }
            case .image, .file:
                do throws(PlayerError) { result = .bytes(try await read(item)) } catch { result = .failed(error) }
            }
            if Task.isCancelled { return }
            inner.withLock { $0.ready[Self.readyKey(item)] = result }
            if case .failed = result { continue }
            return
        }
    }

    /// What was made ready for `item` (the preparation running is awaited: it does what the
    /// item's start would); nil when nothing was.
    private func takePrepared(_ item: PlaylistItem) async -> Prepared? {
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

    // MARK: the items in turn

    private func run() async {
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

    /// How early (seconds) a switch is taken by an item that ends just before it: its first
    /// picture is due at the switch anyway.
    static let switchEarly = 0.05

    /// Sleeps until monotonic time `at` (to the millisecond; nothing when it is past).
    private static func sleep(until at: Double) async {
        let wait = at - Monotonic.now()
        if wait > 0 { try? await Task.sleep(for: .microseconds(Int(wait * 1e6))) }
    }

    /// Whether a switch is pending within `seconds`.
    private func switchDue(within seconds: Double) -> Bool {
        cutAt.map { $0 - Monotonic.now() <= seconds } ?? false
    }

    /// Waits, the last picture held, for the pending switch (made ready ahead); its playlist's
    /// first item then, nil when stopped.
    private func holdUntilSwitch() async -> PlaylistItem? {
        inner.withLock { $0.playing = nil }
        while !Task.isCancelled {
            let now = Monotonic.now()
            if let at = cutAt {
                if at - now <= Self.prepareAhead { prepareNext(startAt: at) }
                if now >= at - Self.switchEarly {
                    let first = inner.withLock { inner -> PlaylistItem? in inner.takeSwitch(now: Monotonic.now())?.first
                    }
                    await Self.sleep(until: at)
                    return first
                }
                try? await Task.sleep(
                    for: .milliseconds(max(1, min(10, Int(((at - Self.switchEarly - now) * 1000).rounded(.up))))))
            } else {
                try? await Task.sleep(for: .milliseconds(10))
            }
        }
        return nil
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

    /// Seconds a stream item may take from its load to its first picture before it is given up
    /// (reported failed, the playlist goes on).
    public static let startTimeout = 10.0

    /// The largest image or file item read, bytes: read whole and handed to the core (a file
    /// plays from memory; its cost is its size, twice with sound, until it has played).
    public static let maxFileBytes = 64 << 20

    /// Shows an image item for its ``PlaylistItem/playingTime`` (5 s by default) from its
    /// picture on; plays a file item to its end, or for its duration.
    private func playFile(_ item: PlaylistItem, index: Int, still: Bool, bytes prepared: [UInt8]?) async -> Outcome {
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
        let outcome = await follow(
            Task { () -> Outcome in
                // Its first picture (due 0.25 s after), then its time or its end.
                var shown: Double?
                var quartiles = Quartiles()
                let deadline = Monotonic.now() + 5
                // A file that stops playing without ending (nothing presented, its position still)
                // is given up after 10 s: the playlist goes on.
                var progress = (frames: before, position: Double?.none, at: Monotonic.now())
                while !Task.isCancelled {
                    let now = Monotonic.now()
                    while let event = player.fileEvent() {
                        switch event.kind {
                        case .ended where !still:
                            if length != nil {
                                for q in quartiles.rest() {
                                    send(.quartile(q), item, index, mediaTime: shown.map { now - $0 })
                                }
                            }
                            return .finished
                        case .error where event.error?.isMissingStream == true:
                            continue  // a file without sound (or without pictures) plays what it has
                        case .error where shown == nil:
                            return .failed(PlayerError(.media, "item \"\(item.id)\": \(event.message)"))
                        default: continue
                        }
                    }
                    if shown == nil {
                        if player.status.framesPresented > before {
                            shown = min(now, due)
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
                    if let shown, let length {
                        let played = now - shown
                        inner.withLock { $0.playing?.mediaTime = played }
                        for q in quartiles.take(progress: played, length: length) {
                            send(.quartile(q.percent), item, index, mediaTime: min(played, q.share))
                        }
                        if played >= length { return .finished }
                        let end = min(now + length - played, cut ?? .infinity)
                        if end - now <= Self.prepareAhead { prepareNext(startAt: end) }
                    } else if let cut, cut - now <= Self.prepareAhead {
                        prepareNext(startAt: cut)
                    } else if shown != nil, !still {
                        // A file to its end, its length unknown: the next is made ready from its
                        // start (a live one loaded, not decoded: its entry depends on when).
                        prepareNext(startAt: nil)
                    }
                    // Slept to the next quartile, the end or the switch (a frame's precision), at most 10 ms.
                    var wait = 0.01
                    if let shown, let length {
                        let played = Monotonic.now() - shown
                        wait = min(
                            wait, max(0.001, min(quartiles.nextDue(length: length) ?? .infinity, length) - played))
                    }
                    if let cut { wait = min(wait, max(0.001, cut - Monotonic.now())) }
                    try? await Task.sleep(for: .milliseconds(max(1, Int((wait * 1000).rounded(.up)))))
                }
                return .left
            })
        if case .failed = outcome {} else { await player.cut() }  // a file's sound stops with its last picture
        return outcome
    }

    /// An image's or a file's bytes: a local file, else from the ``cache`` (kept there when
    /// fetched), else fetched (two tries); checked against its announced ``PlaylistItem/sha256``
    /// (a mismatch is not played).
    private func read(_ item: PlaylistItem) async throws(PlayerError) -> [UInt8] {
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

    /// Waits for an item's watch, cancelled by a move (next, previous, a jump) or by stop().
    private func follow(_ watch: Task<Outcome, Never>) async -> Outcome {
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

    /// Plays a stream item until it ends, fails or is left.
    private func playStream(_ item: PlaylistItem, index: Int) async -> Outcome {
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
                try? await Task.sleep(for: .milliseconds(10))
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
            // Slept to the next quartile or the cap (a frame's precision), at most 20 ms.
            var wait = 0.02
            if let length, length > 0, status.state == .playing {
                let next = min(quartiles.nextDue(length: length) ?? .infinity, item.playingTime ?? .infinity)
                wait = min(wait, (next - progress) / max(status.playbackRate, 0.1))
            }
            if let cut { wait = min(wait, max(0.001, cut - Monotonic.now())) }
            try? await Task.sleep(for: .milliseconds(max(1, Int(wait * 1000))))
        }
        return .left
    }

    private func send(_ kind: PlaylistItemEvent.Kind, _ item: PlaylistItem, _ index: Int, mediaTime: Double?) {
        let offset = inner.withLock { $0.serverOffset }
        sink.send(
            .item(
                PlaylistItemEvent(
                    kind, id: item.id, index: index, mediaTime: mediaTime,
                    serverTime: Date().timeIntervalSince1970 + offset)))
    }
}
