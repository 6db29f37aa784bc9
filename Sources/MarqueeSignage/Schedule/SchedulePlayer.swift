public import Foundation
public import Logging
public import Marquee
import MarqueeStreaming

/// Plays a ``Schedule`` on one ``PlaylistPlayer``: the entry in force now (by the server's
/// clock), then each next one switched to at its start, on the frame — the next entry's first
/// item made ready ahead like any next item (a live one decoded ahead at its target latency),
/// its first picture due at the entry's start. Boxes that share a schedule and a clock switch
/// together.
///
/// - The clock: the ``timeSource`` (an endpoint answering an ISO 8601 time, as DASH's
///   `urn:mpeg:dash:utc:http-iso:2014`, measured at ``play()`` and every `clockInterval`), else
///   the local clock (an NTP-synced box's is good to milliseconds).
/// - An entry's playlist starts from its first item at the entry's start (a box started
///   mid-entry starts it then). A playlist that ends before its entry holds its last picture.
/// - An item in play at an entry's end is cut on it (reported finished).
/// - ``replace(with:)`` (a refreshed schedule) takes effect at once when it changes what is in
///   force now, else at the next entry.
public final class SchedulePlayer: Sendable {
    /// The playlist player the entries play on (item events, commands, the `Player`).
    public let playlistPlayer: PlaylistPlayer
    /// The player's events and the items' (``PlaylistPlayer/events``). One consumer.
    public var events: SignageEvents { playlistPlayer.events }
    /// Where the server's clock is read (nil: the local clock).
    public let timeSource: URL?
    private let logger: Logger
    /// Signalled by ``replace(with:)``: the runner looks again at what is in force.
    private let replaced = Wakeup()
    private let inner: Locked<Inner>

    /// Seconds between measurements of the ``timeSource``.
    package static let clockInterval = 600.0
    /// How long before an entry's end its switch is set (its first item is made ready
    /// `prepareAhead` before it).
    static let switchLead = PlaylistPlayer.prepareAhead + 2

    private struct Inner {
        var schedule: Schedule
        var clock: ServerClock = .local()
        /// The entry playing, nil before ``play()``.
        var entry: ScheduleEntry?
        var runner: Task<Void, Never>?
        var prefetcher: Task<Void, Never>?
    }

    /// Seconds of the schedule ahead whose images and files the cache keeps.
    package static let cacheHorizon = 86_400.0
    /// Seconds between looks ahead (a failed fetch is tried again then).
    package static let cacheInterval = 300.0

    /// A player for `schedule` with `options` for the outputs and defaults; `timeSource` nil:
    /// the local clock; `journal`: where each completed play is recorded (proof of play, with
    /// its schedule entry and playlist, timed on the schedule's clock); `cache`: where the
    /// images and files the next `cacheHorizon` plays are fetched ahead, every
    /// `cacheInterval` (offline play). Throws what
    /// ``PlaylistPlayer/init(playlist:options:router:seed:logger:journal:cache:)`` throws.
    public init(
        schedule: Schedule, options: PlayerOptions, router: (any SourceRouter)? = nil, timeSource: URL? = nil,
        seed: UInt64 = UInt64.random(in: 0...UInt64.max),
        logger: Logger = Logger(label: "marquee.schedule"), journal: ProofOfPlayJournal? = nil,
        cache: ContentCache? = nil
    ) throws(PlayerError) {
        let first = schedule.entry(at: Date())
        guard let playlist = schedule.playlists[first.playlist] else {
            throw PlayerError(.schedule, "no playlist \"\(first.playlist)\"")
        }
        playlistPlayer = try PlaylistPlayer(
            playlist: playlist, options: options, router: router, seed: seed, logger: logger, journal: journal,
            cache: cache)
        self.timeSource = timeSource
        self.logger = logger
        inner = Locked(Inner(schedule: schedule))
    }

    /// The schedule in force.
    public var schedule: Schedule { inner.withLock { $0.schedule } }

    /// The entry playing, nil before ``play()``.
    public var entry: ScheduleEntry? { inner.withLock { $0.entry } }

    /// The server's time now, as this player reads it.
    public var now: Date { inner.withLock { $0.clock }.now() }

    /// Measures the clock, starts the entry in force and follows the schedule; returns once the
    /// first item is loading.
    public func play() async throws(PlayerError) {
        guard inner.withLock({ $0.runner == nil }) else { return }
        playlistPlayer.setClockOffset(inner.withLock { $0.clock.offset })
        await measureClock()
        let (schedule, clock) = inner.withLock { ($0.schedule, $0.clock) }
        let entry = schedule.entry(at: clock.now())
        if let playlist = schedule.playlists[entry.playlist] {
            playlistPlayer.startOver(with: playlist, entry: entry.source.description, name: entry.playlist)
        }
        inner.withLock { $0.entry = entry }
        logger.info(
            "schedule entry",
            metadata: ["entry": "\(entry.source)", "playlist": "\(entry.playlist)", "until": "\(entry.end)"])
        playlistPlayer.announce(.scheduleEntry(entry))
        try await playlistPlayer.play()
        let runner = Task { [weak self] () -> Void in await self?.run() }
        let prefetcher = playlistPlayer.cache.map { cache in
            Task { [weak self] () -> Void in
                while !Task.isCancelled {
                    guard await self?.prefetch(into: cache) != nil else { return }
                    try? await Task.sleep(for: .seconds(Self.cacheInterval))
                }
            }
        }
        inner.withLock {
            $0.runner = runner
            $0.prefetcher = prefetcher
        }
    }

    /// Fetches into `cache` what the next `cacheHorizon` of the schedule plays; returns the
    /// items fetched.
    @discardableResult
    public func prefetch(into cache: ContentCache) async -> Int {
        let (fetched, failed) = await cache.prefetch(schedule, from: now, horizon: Self.cacheHorizon)
        if fetched > 0 || !failed.isEmpty {
            logger.info(
                "content cache",
                metadata: ["fetched": "\(fetched)", "failed": "\(failed.count)", "bytes": "\(cache.totalBytes)"])
        }
        for (url, error) in failed {
            logger.warning("not cached yet", metadata: ["url": "\(Redact.url(url))", "error": "\(error)"])
        }
        return fetched
    }

    /// A new schedule (a refresh): in force at once when it changes what plays now, else from
    /// the next entry.
    public func replace(with schedule: Schedule) {
        inner.withLock { $0.schedule = schedule }
        replaced.signal()  // the runner looks at what is in force now
    }

    /// Pauses the item playing, as ``PlaylistPlayer/pause()`` does (and throws what it throws);
    /// the schedule's clock goes on.
    public func pause() throws(PlayerError) { try playlistPlayer.pause() }

    /// Resumes after ``pause()``.
    public func resume() { playlistPlayer.resume() }

    /// Stops following the schedule and the playlist player.
    public func stop() async {
        let (runner, prefetcher) = inner.withLock { inner in
            defer { (inner.runner, inner.prefetcher) = (nil, nil) }
            return (inner.runner, inner.prefetcher)
        }
        prefetcher?.cancel()
        runner?.cancel()
        await runner?.value
        await playlistPlayer.stop()
    }

    private func measureClock() async {
        guard let timeSource else { return }
        let timing = UTCTiming(schemeIdUri: "urn:mpeg:dash:utc:http-iso:2014", value: timeSource.absoluteString)
        let player = playlistPlayer.player
        let clock = await ClockSync(fetcher: player.fetcher, logger: logger, book: player.clocks).synchronize(
            timings: [timing])
        if clock.isLocal {
            logger.warning("the time source did not answer: the local clock", metadata: ["source": "\(timeSource)"])
        }
        inner.withLock { $0.clock = clock }
        playlistPlayer.setClockOffset(clock.offset)
    }

    /// Sets each next entry's switch ahead of it, and follows replacements of the schedule.
    private func run() async {
        var measured = Monotonic.now()
        while !Task.isCancelled {
            if Monotonic.now() - measured > Self.clockInterval {
                await measureClock()
                measured = Monotonic.now()
            }
            let (schedule, clock, entry) = inner.withLock { ($0.schedule, $0.clock, $0.entry) }
            guard var playing = entry else { return }
            // What is in force now by the schedule (maybe replaced): another source switches at
            // once; the same one may end at another time.
            let inForce = schedule.entry(at: clock.now())
            if inForce.source != playing.source || inForce.playlist != playing.playlist {
                await switchTo(inForce, at: Monotonic.now() + Self.replaceLead, schedule: schedule)
                continue
            }
            if inForce.end != playing.end {
                playing.end = inForce.end
                inner.withLock { $0.entry = playing }
            }
            let setAt = clock.monotonic(at: playing.end) - Self.switchLead
            if setAt > Monotonic.now() {
                // Asleep to the time the switch is set, the clock's next measure, or a
                // replacement of the schedule (``replace(with:)`` wakes it).
                await replaced.wait(until: min(setAt, measured + Self.clockInterval))
                continue
            }
            let next = schedule.entry(at: playing.end)
            await switchTo(next, at: clock.monotonic(at: next.start), schedule: schedule)
        }
    }

    /// Seconds after a replacement of the schedule that changes what is in force its switch comes.
    package static let replaceLead = 0.5

    /// Switches the playlist player to `entry`'s playlist at monotonic `at`, and waits for it.
    private func switchTo(_ entry: ScheduleEntry, at: Double, schedule: Schedule) async {
        guard let playlist = schedule.playlists[entry.playlist] else { return }
        playlistPlayer.switchPlaylist(to: playlist, at: at, entry: entry.source.description, name: entry.playlist)
        let wait = at - Monotonic.now()
        if wait > 0 { try? await Task.sleep(for: .milliseconds(Int(wait * 1000) + 1)) }
        inner.withLock { $0.entry = entry }
        logger.info(
            "schedule entry",
            metadata: ["entry": "\(entry.source)", "playlist": "\(entry.playlist)", "until": "\(entry.end)"])
        playlistPlayer.announce(.scheduleEntry(entry))
    }
}
