import MarqueeStreaming

/// An ad break on the presentation timeline.
public struct AdBreak: Sendable, Hashable {
    /// The id of the event that announced it (a DASH event's `id`, a SCTE-35 splice event id,
    /// the `id` given to ``Player/schedule(_:at:duration:id:)``), when it had one.
    public var id: String?
    /// Presentation time the break starts, seconds.
    public var start: Double
    /// Presentation time the break ends, seconds: its start plus the event's duration (else
    /// ``MixOptions/defaultAdDuration``), or its end cue's time when that comes first.
    public var end: Double
    /// The creative named by the event, if any (else the options' creatives are used).
    public var creative: String?
}

/// What the mix is at one presented time: derived from the events up to that time only.
package struct MixState: Sendable, Hashable {
    /// The broadcaster has muted the stream.
    package var streamerMuted = false
    /// When the current mute began (the mute music plays from there).
    package var muteStart: Double?
    /// The ad break in progress.
    package var adBreak: AdBreak?

    /// The mix with nothing happening: the stream heard, no mute, no break.
    package init() {}

    /// Input gains: the stream unless muted or in a break; the mute music while muted (outside
    /// breaks) when there is music; the ad during a break.
    func gains(hasMusic: Bool) -> MixGains {
        if adBreak != nil { return MixGains(stream: 0, music: 0, ad: 1) }
        if streamerMuted { return MixGains(stream: hasMusic ? 0 : 1, music: hasMusic ? 1 : 0, ad: 0) }
        return MixGains(stream: 1, music: 0, ad: 0)
    }
}

struct MixGains: Sendable, Hashable {
    var stream: Double
    var music: Double
    var ad: Double
}

/// The events that shape the mix, on the presentation timeline (ARCHITECTURE.md, "State is a
/// function of media time"). Pure: the mix at presented time `t` is ``state(at:)``, whatever
/// order the events arrived in, so a user delay, a jump or a seek over an event applies it
/// (forward) or undoes it (back) by construction.
struct MixTimeline: Sendable {
    private(set) var events: [TimedEvent] = []
    /// How long a break without a duration or an end cue lasts.
    var defaultAdDuration: Double

    init(defaultAdDuration: Double = 30) {
        self.defaultAdDuration = defaultAdDuration
    }

    /// Adds `event` (kept in time order). An event seen before (same kind, id and time — a
    /// manifest repeats its events on every refresh) is ignored, and so are events that do not
    /// affect the mix. A cancel removes the break with its id. Returns whether anything changed.
    @discardableResult
    mutating func insert(_ event: TimedEvent) -> Bool {
        switch event.kind {
        case .other: return false
        case .adBreakCancel:
            let before = events.count
            events.removeAll { $0.id == event.id && $0.kind.isAdBreak }
            return events.count != before
        default: break
        }
        if events.contains(where: { $0.kind == event.kind && $0.id == event.id && abs($0.time - event.time) < 0.001 }) {
            return false
        }
        let index = events.firstIndex { $0.time > event.time } ?? events.endIndex
        events.insert(event, at: index)
        return true
    }

    /// The mix at presented time `t`.
    func state(at t: Double) -> MixState {
        var state = MixState()
        var muteEnd: Double?
        for e in events {
            if e.time > t { break }
            if let end = muteEnd, end <= e.time {
                state.streamerMuted = false
                state.muteStart = nil
                muteEnd = nil
            }
            if let ad = state.adBreak, ad.end <= e.time { state.adBreak = nil }
            switch e.kind {
            case .streamerMuted:
                if !state.streamerMuted { state.muteStart = e.time }
                state.streamerMuted = true
                muteEnd = e.duration.map { e.time + $0 }
            case .streamerUnmuted:
                state.streamerMuted = false
                state.muteStart = nil
                muteEnd = nil
            case .adBreakStart(let creative):
                state.adBreak = AdBreak(
                    id: e.id, start: e.time, end: e.time + (e.duration ?? defaultAdDuration), creative: creative)
            case .adBreakEnd:
                if var ad = state.adBreak {
                    ad.end = min(ad.end, e.time)
                    state.adBreak = ad.end > t ? ad : nil
                }
            case .adBreakCancel, .other:
                break
            }
        }
        if let end = muteEnd, end <= t {
            state.streamerMuted = false
            state.muteStart = nil
        }
        if let ad = state.adBreak, ad.end <= t { state.adBreak = nil }
        return state
    }

    /// The times in `(after, through]` at which the state may change: event times and the ends
    /// of mutes and breaks given by durations. Sorted, unique.
    func changes(after a: Double, through b: Double) -> [Double] {
        var times: Set<Double> = []
        for e in events {
            if e.time > a && e.time <= b { times.insert(e.time) }
            if let d = e.duration, e.time + d > a && e.time + d <= b { times.insert(e.time + d) }
            if case .adBreakStart = e.kind, e.duration == nil, e.time + defaultAdDuration > a,
                e.time + defaultAdDuration <= b
            {
                times.insert(e.time + defaultAdDuration)
            }
        }
        return times.sorted()
    }

    /// Drops events that can no longer matter for any time at or after `t` (keeps what the state
    /// at `t` depends on), so a box playing for months holds a bounded list.
    mutating func forget(before t: Double) {
        let current = state(at: t)
        events.removeAll { e in
            guard e.time < t else { return false }
            let reach = e.time + (e.duration ?? 0)
            if reach > t { return false }
            switch e.kind {
            case .streamerMuted: return !(current.streamerMuted && current.muteStart == e.time)
            case .adBreakStart: return current.adBreak?.start != e.time
            default: return true
            }
        }
    }
}

extension TimedEvent.Kind {
    var isAdBreak: Bool {
        switch self {
        case .adBreakStart, .adBreakEnd: true
        default: false
        }
    }
}
