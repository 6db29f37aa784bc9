import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// Turns the ``MixTimeline`` into mixer commands and events: on each tick (the presented
/// position) it sends the gain ramps and clip starts of the transitions in the next
/// ``horizon`` seconds, timed on the presentation timeline so the core starts them on the exact
/// sample; after a jump (latency jump, delay change, seek) it drops what it had sent and
/// applies the state at the new position at once (applying or undoing what was jumped over).
final class MixDirector: Sendable {
    private let core: CoreHandle
    private let options: MixOptions
    private let cache: MediaCache
    private let events: PlayerEvents.Sink
    private let logger: Logger
    private let inner: Locked<Inner>
    /// How far ahead of the presented position transitions are sent to the core, seconds.
    static let horizon = 0.5

    private struct Inner {
        var timeline: MixTimeline
        var reported = MixState()
        var musicHeard = false
        /// Transitions up to here have been sent; nil: nothing sent (start, or after a jump).
        var scheduledUntil: Double?
        /// States sent, by the time they take effect.
        var commanded: [(time: Double, state: MixState)] = [(-.infinity, MixState())]
        var replan = false
        var last: (position: Double, mono: Double)?
        var musicPath: String?
        var creativePaths: [String: String] = [:]
        /// Breaks whose event named a local creative, refused (reported once each).
        var refusedCreatives: Set<String> = []
        var clipsLoaded: Set<CoreHandle.MixInput> = []
        /// What this tick sends to the core, in order (sent after the lock: see ``tick``).
        var outbox: [CoreCommand] = []
    }

    /// A command for the core, decided under the lock and sent after it in order: a clip start
    /// awaits its file being opened off the cooperative pool, and the gains that follow it wait
    /// for it, so a clip is installed before its gain rises.
    private enum CoreCommand {
        case cancelTimedGains
        case playClip(
            CoreHandle.MixInput, path: String, offset: Double, loop: Bool, crossfade: Double, at: Double?, what: String)
        case setGain(CoreHandle.MixInput, Double, ramp: Double, shape: CoreHandle.Ramp, at: Double?)
        case stopClip(CoreHandle.MixInput)
    }

    init(core: CoreHandle, options: MixOptions, fetcher: HTTPFetcher, events: PlayerEvents.Sink, logger: Logger) {
        self.core = core
        self.options = options
        self.cache = MediaCache(directory: options.cacheDirectory ?? MediaCache.defaultDirectory(), fetcher: fetcher)
        self.events = events
        self.logger = logger
        self.inner = Locked(Inner(timeline: MixTimeline(defaultAdDuration: options.defaultAdDuration)))
        for input in [CoreHandle.MixInput.music, .ad, .spare] {
            try? core.setGain(input, 0, ramp: 0, shape: .linear, at: nil)
        }
    }

    /// Fetches (or finds in the cache) the mute music and the creatives. Failures are reported
    /// as non-fatal errors; the mix does without what is missing.
    func prepare() async {
        var paths: [String: String] = [:]
        for url in options.adCreatives {
            do {
                let path = try await cache.path(for: url)
                paths[url.absoluteString] = path
                // An event may name a configured file by its path, as the operator wrote it.
                if url.isFileURL { paths[url.path] = path }
            } catch {
                report(error, "ad creative")
            }
        }
        var music: String?
        if let url = options.muteMusic {
            do { music = try await cache.path(for: url) } catch { report(error, "mute music") }
        }
        inner.withLock {
            $0.creativePaths.merge(paths) { a, _ in a }
            $0.musicPath = music
        }
    }

    private func report(_ error: PlayerError, _ what: String) {
        logger.warning("\(what) unavailable", metadata: ["error": "\(error)"])
        events.send(.error(error, fatal: false))
    }

    /// Adds events; those at or before what was already sent make the next tick re-plan.
    func insert(_ new: [TimedEvent]) {
        guard !new.isEmpty else { return }
        inner.withLock { s in
            for e in new where s.timeline.insert(e) {
                let reach = e.time
                if let until = s.scheduledUntil, reach <= until { s.replan = true }
                if case .adBreakCancel = e.kind { s.replan = true }
            }
        }
    }

    /// The mix at presented time `t` (for tests and status).
    func state(at t: Double) -> MixState { inner.withLock { $0.timeline.state(at: t) } }

    /// One step, with the presented `position` at monotonic `mono` playing at `rate`.
    func tick(position: Double, mono: Double, rate: Double) async {
        let commands = inner.withLock { s -> [CoreCommand] in
            if let last = s.last, abs(position - (last.position + (mono - last.mono) * rate)) > 0.3 {
                logger.debug("mix: jump", metadata: ["from": "\(last.position)", "to": "\(position)"])
                replan(&s, at: position, jumped: true)
            } else if s.replan || s.scheduledUntil == nil {
                replan(&s, at: position, jumped: false)
            }
            s.last = (position, mono)
            let until = position + Self.horizon
            if let from = s.scheduledUntil, until > from {
                for t in s.timeline.changes(after: from, through: until) {
                    let before = s.commanded.last!.state
                    let after = s.timeline.state(at: t)
                    if before != after { command(&s, from: before, to: after, at: t, jumped: false) }
                }
                s.scheduledUntil = until
            }
            announce(&s, at: position)
            tidy(&s, at: position)
            defer { s.outbox.removeAll() }
            return s.outbox
        }
        await send(commands)
    }

    /// Sends `commands` to the core in order.
    private func send(_ commands: [CoreCommand]) async {
        for command in commands {
            switch command {
            case .cancelTimedGains:
                try? core.cancelTimedGains()
            case .setGain(let input, let gain, let ramp, let shape, let at):
                try? core.setGain(input, gain, ramp: ramp, shape: shape, at: at)
            case .stopClip(let input):
                try? core.stopClip(input)
            case .playClip(let input, let path, let offset, let loop, let crossfade, let at, let what):
                do {
                    try await core.playClip(input, path: path, offset: offset, loop: loop, crossfade: crossfade, at: at)
                } catch {
                    report(PlayerError(.media, "\(what) \(path): \(error.message)", coreCode: error.code), what)
                }
            }
        }
    }

    /// Drops what was sent for after `position` and brings the mix to the state there.
    private func replan(_ s: inout Inner, at position: Double, jumped: Bool) {
        s.outbox.append(.cancelTimedGains)
        s.replan = false
        s.commanded.removeAll { $0.time > position }
        let current = s.commanded.last!.state
        let target = s.timeline.state(at: position)
        if current != target || jumped {
            command(&s, from: current, to: target, at: nil, now: position, jumped: jumped)
        }
        s.scheduledUntil = position
    }

    /// Sends the ramps and clip starts that move the mix from `a` to `b` at presentation time `at`
    /// (nil: now, the presented position being `now`).
    private func command(
        _ s: inout Inner, from a: MixState, to b: MixState, at: Double?, now: Double? = nil, jumped: Bool
    ) {
        let t = at ?? now ?? 0
        let hasMusic = s.musicPath != nil
        let (ga, gb) = (a.gains(hasMusic: hasMusic), b.gains(hasMusic: hasMusic))
        let adChange = a.adBreak != b.adBreak
        let ramp = adChange ? options.adFade : options.muteCrossfade
        let shape: CoreHandle.Ramp =
            (adChange ? options.adFadeShape : options.muteCrossfadeShape) == .linear ? .linear : .equalPower
        // Clips first, so a clip is installed before its gain rises. An input counts as loaded
        // once its clip is commanded (one that fails to open leaves the input as it was; a later
        // stop of it changes nothing heard).
        if let ad = b.adBreak, ad != a.adBreak || jumped, let path = creativePath(&s, for: ad) {
            s.outbox.append(
                .playClip(
                    .ad, path: path, offset: max(0, t - ad.start), loop: false, crossfade: 0, at: at,
                    what: "ad creative"))
            s.clipsLoaded.insert(.ad)
        }
        if b.streamerMuted, let start = b.muteStart, let path = s.musicPath, a.muteStart != start || jumped {
            s.outbox.append(
                .playClip(
                    .music, path: path, offset: max(0, t - start), loop: true, crossfade: options.loopCrossfade, at: at,
                    what: "mute music"))
            s.clipsLoaded.insert(.music)
        }
        for (input, from, to) in [
            (CoreHandle.MixInput.stream, ga.stream, gb.stream), (.music, ga.music, gb.music), (.ad, ga.ad, gb.ad),
        ]
        where from != to || at == nil {
            s.outbox.append(.setGain(input, to, ramp: ramp, shape: shape, at: at))
        }
        s.commanded.append((at ?? now ?? -.infinity, b))
        if s.commanded.count > 64 { s.commanded.removeFirst(s.commanded.count - 64) }
    }

    /// The creative for `ad`: the one its event names (if it is one the operator configured,
    /// cached), else the options' in turn. An event never chooses a local file: one it names
    /// that is not configured is refused (an event and a log, once a break) and the break
    /// plays the configured ones.
    private func creativePath(_ s: inout Inner, for ad: AdBreak) -> String? {
        if let named = ad.creative, let path = s.creativePaths[named] { return path }
        if let named = ad.creative, !Self.isRemote(named),
            s.refusedCreatives.insert("\(ad.id ?? "")@\(ad.start)").inserted
        {
            let which = ad.id ?? "at \(ad.start) s"
            let error = PlayerError(
                .invalidArgument,
                """
                ad break \(which): the event names the creative "\(named)", \
                a local file that is not a configured creative: not played
                """
            )
            logger.warning("ad creative refused", metadata: ["creative": "\(named)", "break": "\(which)"])
            events.send(.error(error, fatal: false))
        }
        let pool = options.adCreatives.compactMap { s.creativePaths[$0.absoluteString] }
        guard !pool.isEmpty else { return nil }
        let index = Int(UInt64(max(0, ad.start * 1000).rounded()) % UInt64(pool.count))  // stable for a break
        return pool[index]
    }

    /// Whether an event's creative is an http(s) URL (anything else would be a local file).
    static func isRemote(_ named: String) -> Bool {
        guard let scheme = URL(string: named)?.scheme?.lowercased() else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// Sends the events for what changed at the presented position.
    private func announce(_ s: inout Inner, at position: Double) {
        let now = s.timeline.state(at: position)
        let old = s.reported
        guard now != old || s.musicHeard != (now.streamerMuted && now.adBreak == nil && s.musicPath != nil) else {
            return
        }
        if let ad = old.adBreak, ad != now.adBreak { events.send(.adFinished(ad)) }
        if old.streamerMuted != now.streamerMuted { events.send(now.streamerMuted ? .streamerMuted : .streamerUnmuted) }
        let heard = now.streamerMuted && now.adBreak == nil && s.musicPath != nil
        if heard != s.musicHeard { events.send(heard ? .muteMusicStarted : .muteMusicStopped) }
        if let ad = now.adBreak, ad != old.adBreak { events.send(.adStarted(ad)) }
        s.musicHeard = heard
        s.reported = now
    }

    /// Unloads clips once they are silent and no longer wanted; forgets old events.
    private func tidy(_ s: inout Inner, at position: Double) {
        let wanted = s.commanded.last!.state
        if s.clipsLoaded.contains(.ad), wanted.adBreak == nil, s.timeline.state(at: position).adBreak == nil,
            core.gain(.ad) == 0
        {
            s.outbox.append(.stopClip(.ad))
            s.clipsLoaded.remove(.ad)
        }
        if s.clipsLoaded.contains(.music), !wanted.streamerMuted, !s.timeline.state(at: position).streamerMuted,
            core.gain(.music) == 0
        {
            s.outbox.append(.stopClip(.music))
            s.clipsLoaded.remove(.music)
        }
        s.timeline.forget(before: position - 600)  // the user delay may move back up to 5 min
    }
}
