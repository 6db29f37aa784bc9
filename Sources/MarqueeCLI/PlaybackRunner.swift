import Foundation
import Logging
import Marquee
import MarqueeFleet
import MarqueeSignage
import MarqueeStreaming
import MarqueeVenue

/// Plays sources through the public API with a status line; shared by `play` and `demo`.
struct PlaybackRunner {
    let output: OutputOptions
    /// How fetched documents are trusted; its CA file is the player's too.
    var security = DocumentSecurity()
    /// The outcome of a SIGTERM/SIGINT (exit status 0).
    static let interrupted: Int32 = -2

    func makeLogger() -> Logger {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = Logger.Level(rawValue: output.logLevel) ?? .notice
            return handler
        }
        return Logger(label: "marquee")
    }

    /// Plays `sources`; with `remote`, its config gives the defaults and every refreshed config
    /// is applied to the playing player.
    func play(sources: [URL], remote: RemoteConfig? = nil) async -> Int32 {
        let logger = makeLogger()
        let (options, eventLog): (PlayerOptions, EventLog?)
        switch setUp(sources: sources, remote: remote) {
        case .success(let made): (options, eventLog) = made
        case .failure(let message): return fail(message.text)
        }
        if output.showOptions {
            do { _ = try options.validated() } catch { return fail("\(error)") }
            for spec in OptionTable.all {
                let shown = spec.read(options)?.description ?? ""
                print("\(spec.name) = \(shown.isEmpty ? "(none)" : shown)")
            }
            return 0
        }
        let player: Player
        do {
            player = try Player(options: options, router: try router(logger, sources: sources), logger: logger)
            try await player.play()
        } catch {
            return fail("\(error)")
        }
        let status = StatusLine(interactive: isatty(STDOUT_FILENO) != 0)
        let outcome = await run(
            player, events: Self.signage(player.events), eventLog: eventLog, status: status,
            what: sources[0].absoluteString
        ) { group in
            if let remote {
                group.addTask {
                    for await config in remote.changes.dropFirst() {  // the first is the one playing
                        do { try player.apply(config) } catch { status.log("warning: remote config: \(error)") }
                    }
                    return nil
                }
                group.addTask {
                    for await failure in remote.failures { status.log("warning: remote config refresh: \(failure)") }
                    return nil
                }
            }
        }
        let final = player.status
        let venue = player.venueStatistics
        // SIGTERM/SIGINT: the sound fades out rather than stopping mid-waveform.
        await player.stop(fadeOut: outcome.code == Self.interrupted ? Player.shutdownFade : 0)
        status.finish(final)
        if let venue, let json = try? JSONEncoder().encode(venue) {
            say("venue: " + String(decoding: json, as: UTF8.self))
        }
        sayQoE(outcome.qoe)
        return outcome.code == Self.interrupted ? 0 : outcome.code
    }

    /// Plays `playlist` (a ``PlaylistPlayer``); with `feed`, each refresh (after `adjust`)
    /// replaces the playlist.
    func play(playlist: Playlist, feed: ContentFeed?, adjust: @escaping @Sendable (Playlist) -> Playlist) async -> Int32
    {
        let streams = playlist.items.filter { $0.kind == .stream }.map(\.url).prefix(1)
        return await playSignage(
            streams: Array(streams), what: "a playlist of \(playlist.items.count) items",
            make: { options, router, logger in
                try PlaylistPlayer(playlist: playlist, options: options, router: router, logger: logger)
            },
            parts: { ($0.player, $0.events, $0.next) }
        ) { playlistPlayer, status, group in
            guard let feed else { return }
            group.addTask {
                for await fresh in feed.changes.dropFirst() {  // the first is the one playing
                    playlistPlayer.replace(with: adjust(fresh))
                    status.log("playlist refreshed: \(fresh.items.count) items")
                }
                return nil
            }
            group.addTask {
                for await failure in feed.failures { status.log("warning: playlist refresh: \(failure)") }
                return nil
            }
        }
    }

    /// Plays `schedule` (a ``SchedulePlayer``), its clock read from `timeSource`.
    func play(
        schedule: Schedule, feed: ScheduleFeed?, timeSource: URL?, journal: ProofOfPlayJournal?, cache: ContentCache?
    ) async -> Int32 {
        let streams = schedule.playlists.values.flatMap(\.items).filter { $0.kind == .stream }.map(\.url).prefix(1)
        return await playSignage(
            streams: Array(streams), what: "a schedule of \(schedule.playlists.count) playlists",
            make: { options, router, logger in
                try SchedulePlayer(
                    schedule: schedule, options: options, router: router, timeSource: timeSource, logger: logger,
                    journal: journal, cache: cache)
            },
            parts: { ($0.playlistPlayer.player, $0.events, $0.playlistPlayer.next) }
        ) { schedulePlayer, status, group in
            guard let feed else { return }
            group.addTask {
                for await fresh in feed.changes.dropFirst() {  // the first is the one playing
                    schedulePlayer.replace(with: fresh)
                    status.log("schedule refreshed: \(fresh.playlists.count) playlists, \(fresh.slots.count) slots")
                }
                return nil
            }
            group.addTask {
                for await failure in feed.failures { status.log("warning: schedule refresh: \(failure)") }
                return nil
            }
        }
    }

    /// Plays what `make` makes (a playlist's or a schedule's player, through the venue proxy when
    /// there is one) until it ends, a signal or `--duration`; `parts` are its player, its events
    /// and its "next item"; `refreshes` adds its feed's tasks.
    private func playSignage<Signage: Playback>(
        streams: [URL], what: String,
        make: (PlayerOptions, VenueProxy?, Logger) throws -> Signage,
        parts: (Signage) -> (player: Player, events: SignageEvents, next: @Sendable () -> Void),
        refreshes: (Signage, StatusLine, inout TaskGroup<Int32?>) -> Void
    ) async -> Int32 {
        let logger = makeLogger()
        let (options, eventLog): (PlayerOptions, EventLog?)
        switch setUp(sources: streams, remote: nil) {
        case .success(let made): (options, eventLog) = made
        case .failure(let message): return fail(message.text)
        }
        let signage: Signage
        do {
            signage = try make(options, try router(logger, sources: streams), logger)
            try await signage.play()
        } catch {
            return fail("\(error)")
        }
        let (player, events, next) = parts(signage)
        let status = StatusLine(interactive: isatty(STDOUT_FILENO) != 0)
        let outcome = await run(player, events: events, eventLog: eventLog, status: status, what: what, next: next) {
            refreshes(signage, status, &$0)
        }
        let final = player.status
        await signage.stop()
        status.finish(final)
        sayQoE(outcome.qoe)
        return outcome.code == Self.interrupted ? 0 : outcome.code
    }

    struct OptionsFailure: Error { let text: String }

    /// The player's options from the command line (and `remote`'s config), and `--events`' log.
    /// The venue proxy the player plays through (`--venue`), serving the hosts of `sources`
    /// (and of each source played later, as it is routed); nil without one.
    private func router(_ logger: Logger, sources: [URL]) throws -> VenueProxy? {
        guard var configuration = try output.venueConfiguration() else { return nil }
        configuration.upstreams += sources.compactMap { url in
            url.host.map { $0 + (url.port.map { ":\($0)" } ?? "") }
        }
        do { return try VenueProxy(configuration: configuration, logger: logger) } catch {
            throw PlayerError(.invalidOptions, "venue: \(error.message)")
        }
    }

    private func setUp(sources: [URL], remote: RemoteConfig?) -> Result<(PlayerOptions, EventLog?), OptionsFailure> {
        func fail(_ text: String) -> Result<(PlayerOptions, EventLog?), OptionsFailure> {
            .failure(OptionsFailure(text: text))
        }
        var options = remote.map { PlayerOptions(config: $0.current) } ?? PlayerOptions(sources: sources)
        options.sources = sources
        let configCA = options.documentSecurity.caFile  // the remote config's, checked against --allow-local
        options.documentSecurity = security
        if security.caFile == nil { options.documentSecurity.caFile = configCA }
        // A player process of its own: it trims itself (PlayerOptions.memoryTrimInterval).
        options.memoryTrimInterval = 10
        if let name = output.board {
            do {
                options = options.applying(
                    try BoardProfile.load(named: name, searchPaths: BoardProfile.searchPaths(repoRoot: repoRoot())))
            } catch {
                return fail("--board \(name): \(error.message)")
            }
        } else {
            options.audioOutput = AudioOutput(spec: Self.defaultAudio()) ?? .null
        }
        // The flags, parsed and checked by their rows of the option table; they win over the
        // board and the remote config.
        for (spec, flag, value) in output.playerOptions {
            do { try spec.apply(value, to: &options, as: flag) } catch { return fail(error.message) }
        }
        do { _ = try output.venueConfiguration() } catch { return fail(error.message) }
        // kept for the delay
        if let delay = output.delay, delay > 0 { options.maxDelay = max(options.maxDelay, min(3600, delay + 5)) }
        guard let path = output.events else { return .success((options, nil)) }
        do { return .success((options, try EventLog(path: path))) } catch {
            return fail("--events \(path): cannot be written: \(error)")
        }
    }

    /// Shows the status line and the events of `player` (its `events`, or a playlist's) until
    /// the stream ends, a fatal error, `--duration`, or SIGTERM/SIGINT; `more` adds tasks.
    /// Returns the exit code (``interrupted`` for a signal) and the session's QoE record (nil
    /// when the fleet's parts could not start), for ``sayQoE(_:)`` once the player has stopped.
    private func run(
        _ player: Player, events: SignageEvents, eventLog: EventLog?, status: StatusLine, what: String,
        next: (@Sendable () -> Void)? = nil,
        more: (inout TaskGroup<Int32?>) -> Void
    ) async -> (code: Int32, qoe: QoERecord?) {
        let fleet: Fleet
        do {
            fleet = try await Fleet.start(
                player: player, customerId: output.customerId, metrics: try output.metricsAddress(),
                metricsToken: try output.metricsToken(),
                otlp: try output.otlpOptions(), controlPath: output.control, next: next)
        } catch {
            return (fail("\(error)"), nil)
        }
        let systemd = SystemdNotifier()
        systemd.ready(status: "playing \(what)")
        let outcome = await withTaskGroup(of: Int32?.self) { group -> Int32 in
            group.addTask { await watchEvents(events, status: status, log: eventLog, telemetry: fleet.telemetry) }
            more(&group)
            group.addTask {
                await showStatus(player, status: status, systemd: systemd)
                return nil
            }
            if let wanted = output.delay, wanted > 0 {
                // The delay reaches back only as far as what has been collected: once that is
                // enough (after about `wanted` seconds of playback), one jump.
                group.addTask {
                    while !Task.isCancelled {
                        try? await Task.sleep(for: .milliseconds(500))
                        guard player.status.availableDelay >= wanted else { continue }
                        _ = try? player.setDelay(wanted)
                        return nil
                    }
                    return nil
                }
            }
            if let duration = output.duration {
                group.addTask {
                    try? await Task.sleep(for: .milliseconds(Int(duration * 1000)))
                    return Task.isCancelled ? nil : 0
                }
            }
            group.addTask {
                await Signals.waitForInterrupt()
                return Task.isCancelled ? nil : Self.interrupted
            }
            var code: Int32 = 0
            for await result in group {
                if let result {
                    code = result
                    break
                }
            }
            // The way out (cancelling, the fleet's last export, the fade, the teardown) runs
            // code that never ran while playing: what playing kept resident goes first, so
            // the process's peak stays the one it had while playing.
            if player.options.memoryTrimInterval != nil { _ = MemoryUsage.trim() }
            group.cancelAll()
            return code
        }
        systemd.stopping()
        return (outcome, await fleet.stop())
    }

    /// The `qoe: {…}` line. Written once the player has stopped: the JSON encoder's code, run
    /// while the player still played (its code resident again after the stop's trim), was the
    /// run's peak RSS.
    private func sayQoE(_ qoe: QoERecord?) {
        guard let qoe else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .xsDateTime
        if let json = try? encoder.encode(qoe) { say("qoe: " + String(decoding: json, as: UTF8.self)) }
    }

    /// The status line 4 times a second; under systemd also `STATUS=` and, only while pictures
    /// (or, audio-only, the media position) keep advancing, `WATCHDOG=1`.
    private func showStatus(_ player: Player, status: StatusLine, systemd: SystemdNotifier) async {
        var lastProgress: (frames: Int, position: Double?) = (-1, nil)
        var lastPing = ContinuousClock.now
        var lastStatus = ContinuousClock.now
        while !Task.isCancelled {
            let now = player.status
            status.show(now)
            let advancing =
                now.framesPresented > lastProgress.frames || (now.position ?? 0) > (lastProgress.position ?? .infinity)
            lastProgress = (now.framesPresented, now.position)
            if let interval = systemd.watchdogInterval, advancing,
                ContinuousClock.now - lastPing >= .seconds(interval / 2)
            {
                systemd.watchdog()
                lastPing = .now
            }
            if systemd.socketPath != nil, ContinuousClock.now - lastStatus >= .seconds(5) {
                systemd.status(StatusLine.format(now))
                lastStatus = .now
            }
            try? await Task.sleep(for: .milliseconds(250))
        }
    }

    private func watchEvents(_ events: SignageEvents, status: StatusLine, log: EventLog?, telemetry: FleetTelemetry)
        async -> Int32?
    {
        for await event in events {
            log?.write(event)
            telemetry.observe(event)
            switch event {
            case .player(let event):
                if let code = Self.show(event, status: status) { return code }
            case .ended:
                status.log("playlist ended")
                return 0
            case .scheduleEntry(let e):
                status.log("schedule: \(e.source) (playlist \(e.playlist)) until \(e.end)")
            case .item(let e):
                var line = "item \(e.index) \"\(e.id)\": \(e.kind.name)"
                if case .quartile(let q) = e.kind { line += " \(q) %" }
                if case .failed(let error) = e.kind { line += ": \(error)" }
                status.log(line)
            }
        }
        return nil
    }

    /// Shows a player's event on the status line; returns the exit code when it ends the run
    /// (a fatal error, the stream's end).
    private static func show(_ event: PlayerEvent, status: StatusLine) -> Int32? {
        switch event {
        case .error(let error, let fatal):
            status.log(fatal ? "error: \(error)" : "warning: \(error)")
            if fatal { return 1 }
        case .ended:
            status.log("stream ended")
            return 0
        case .firstFrame(let seconds):
            status.log(String(format: "first frame after %.3f s", seconds))
        case .sourceLoaded(let url, let type):
            status.log("playing \(url) (\(type.rawValue))")
        case .activeQualityChanged(let q):
            let size = q.width.map { w in " \(w)x\(q.height ?? 0)" } ?? ""
            status.log("\(q.kind) \(q.id) \(q.codecs ?? "")\(size) \(q.bandwidth / 1000) kb/s")
        case .bandwidthTest(let bps, let q):
            status.log(String(format: "link estimate %.0f kb/s: trying %@", bps / 1000, q.id))
        case .timeOffsetChanged(let seconds):
            status.log(String(format: "server clock offset %+.1f ms", seconds * 1000))
        case .outputChanged(let detail), .decoderFallback(let detail):
            status.log(detail)
        case .latencyJump(let error):
            status.log(String(format: "latency %+.3f s off target: jumped", error))
        case .liveEdgeLearned(let moved, let error):
            status.log(String(format: "live edge learned from the playlist: moved %+.4f s (±%.4f s)", moved, error))
        case .targetLatencyChanged(let seconds, let requested):
            status.log(
                seconds > requested
                    ? String(
                        format: "segments arrive too late for %.2f s: latency target %.2f s", requested, seconds)
                    : String(format: "latency target back to %.2f s", seconds))
        case .recovering(let next):
            status.log(String(format: "stalled: reloading (next reload after %.0f s)", next))
        case .recovered:
            status.log("recovered")
        case .configApplied(let target):
            status.log(
                "remote config applied" + (target.map { String(format: " (target latency %.1f s)", $0) } ?? ""))
        case .streamerMuted: status.log("broadcaster muted")
        case .streamerUnmuted: status.log("broadcaster unmuted")
        case .muteMusicStarted: status.log("mute music playing")
        case .muteMusicStopped: status.log("mute music stopped")
        case .adStarted(let ad): status.log(String(format: "ad break %.1f s", ad.end - ad.start))
        case .adFinished: status.log("ad break over")
        case .delayChanged(let seconds): status.log(String(format: "delay %.1f s", seconds))
        case .captionChanged(let text, _):
            status.log(
                text.isEmpty ? "captions cleared" : "captions: " + text.split(separator: "\n").joined(separator: " / "))
        case .stateChanged, .playbackRateChanged, .volumeChanged, .timeUpdate, .seeked, .seekClamped:
            break
        }
        return nil
    }

    /// A player's events as a playlist's (each one `.player`), for the one event loop.
    private static func signage(_ events: PlayerEvents) -> SignageEvents {
        let (stream, sink) = SignageEvents.make()
        Task {
            for await event in events { sink.send(.player(event)) }
            sink.finish()
        }
        return stream
    }

    private func fail(_ message: String) -> Int32 {
        FileHandle.standardError.write(Data("marquee: \(message)\n".utf8))
        return 1
    }

    /// ALSA's default device when the machine has a playback PCM, else the null output.
    static func defaultAudio() -> String {
        let devices = (try? FileManager.default.contentsOfDirectory(atPath: "/dev/snd")) ?? []
        return devices.contains { $0.hasPrefix("pcmC") && $0.hasSuffix("p") } ? "alsa:default" : "null"
    }
}
