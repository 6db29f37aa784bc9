import Foundation
import MarqueeStreaming

/// Live HLS without program date-times through the proxy: when the packager publishes each
/// playlist's segments, learned from every upstream answer the proxy receives for all its
/// boxes (an ``HLSLiveAnchor`` a playlist, on the proxy's monotonic clock), and handed to each
/// box with the playlist as the newest listed segment's age (``HLSPublicationAge``). The boxes
/// behind one proxy then place the publication at one instant from their first answers (their
/// probes are the proxy's too), instead of each learning it alone within a few milliseconds.
///
/// Bounded: at most ``capacity`` playlists (the least recently answered forgotten first), each
/// answer's text at most ``HLSPlaylist/maxBytes`` (read by the caller).
final class PublicationBook: Sendable {
    private struct Entry {
        var anchor = HLSLiveAnchor()
        var numbering = HLSRangeNumbering()
        var used: Double
        /// When a box last asked for the playlist (monotonic seconds).
        var asked = -Double.infinity
        /// Probes of the proxy's own pending.
        var probing = 0
        /// The phase last told, on the anchor's placement, and the newest segment listed then.
        var told: (told: HLSPublicationAge.Told, sequence: UInt64)?
        /// The anchor's placement the phase told is measured against: its origin and how far it
        /// had nudged then (``HLSLiveAnchor/nudged``). A nudge moves the new segments' ends, not
        /// the publications: the phase told stays, against the ends it was told on.
        var toldOn: (origin: UInt32, nudged: Double)?
    }
    private let entries = Locked([String: Entry]())

    /// The phase told moves when the estimate has moved more than this from it (seconds): as
    /// wide as an interval a box first applies (its middle 10 ms off at most), so the phase a
    /// box first takes from the proxy is the one it keeps. The boxes behind the proxy agree with
    /// each other by the phase told, whatever its error; its error is only their latency's, a
    /// few milliseconds off the target. A move sets them apart: each follows it at its own next
    /// answer and trims onto it over seconds, while a box joining then takes it at once (0.5 ms:
    /// a box 9–13 ms off the joining one for 5 s, as ffmpeg's publications refined the estimate).
    static let toldStick = 0.020

    /// Playlists followed at most.
    static let capacity = 64
    /// The proxy probes a playlist itself while its phase is wider than this (seconds).
    static let settled = 0.001
    /// ... and a box asked for it within this many seconds.
    static let followedFor = 10.0
    /// While the phase is wider than this (seconds), probes spread over it, ``spread`` a segment
    /// (the next publication falls between two of them: the interval an eighth as wide after
    /// one segment); narrower, ``narrowSpread``.
    static let spreadAbove = 0.032
    static let spread = 7
    /// Probes a segment once the phase is narrower than ``spreadAbove``: a quarter as wide after
    /// each (one in its middle, halving it, left the proxy 3–5 ms unsure when a second box
    /// joined 7.3 s after the first).
    static let narrowSpread = 3

    /// The upstream answer to `url`, `text`, asked for at `sent` and its head received at
    /// `received` (monotonic seconds): placed by the playlist's anchor when it is a live media
    /// playlist without dates (anything else is ignored).
    func learn(_ url: URL, text: String, sent: Double, received: Double) {
        guard let listed = Self.playlist(text, url: url) else { return }
        let key = url.absoluteString
        entries.withLock { entries in
            var entry = entries[key] ?? Entry(used: received)
            let playlist = HLSRangeNumbering.applies(to: listed) ? entry.numbering.renumber(listed) : listed
            _ = entry.anchor.place(playlist, answeredAt: (sent + received) / 2, askedAt: sent, receivedAt: received)
            entry.used = received
            entries[key] = entry
            if entries.count > Self.capacity, let oldest = entries.min(by: { $0.value.used < $1.value.used })?.key {
                entries[oldest] = nil
            }
        }
    }

    /// The age of the newest segment `text` lists (an answer to `url`), for an answer made
    /// `now` to a request that `arrived` then (monotonic seconds); nil when the proxy has not
    /// learned its publication.
    func age(_ url: URL, text: String, now: Double, arrived: Double) -> HLSPublicationAge? {
        guard let listed = Self.playlist(text, url: url) else { return nil }
        return entries.withLock { entries -> HLSPublicationAge? in
            guard var entry = entries[url.absoluteString] else { return nil }
            let playlist = HLSRangeNumbering.applies(to: listed) ? entry.numbering.renumber(listed) : listed
            entry.asked = now
            defer { entries[url.absoluteString] = entry }
            guard let published = entry.anchor.publication(ofNewestIn: playlist), let best = entry.anchor.phase.best
            else { return nil }
            // The phase told: the estimate, kept while it has moved less than its own error (or
            // ``toldStick``) from it: each box follows a move at its own next answer, apart from
            // the others meanwhile, and a median of scattered publications steps back and forth
            // by about its error (±2 ms on ffmpeg's 2 s segments) as answers come.
            // Nor within a segment's cycle: boxes reload as a segment is published and read the
            // phase told then until the next, so one that joins in between reads the same (told
            // what the proxy's probes had learned since, it started up to 5 ms off its neighbours).
            // (Another placement, an encoder restarted on lower sequence numbers, starts anew.)
            // (A nudge of the anchor keeps the phase told, on the ends it was told against: each
            // nudge started it anew at the estimate, a move every box followed at its own answer.)
            var kept: (told: HLSPublicationAge.Told, since: Double)?  // `since`: how far the ends moved
            var sequence = playlist.segments.last?.sequence ?? 0
            let error = entry.anchor.phase.estimate(precision: .infinity)?.error ?? 0
            if let (last, lastSequence) = entry.told, let on = entry.toldOn, on.origin == entry.anchor.origin {
                let moved = entry.anchor.nudged - on.nudged
                if sequence <= lastSequence || abs(best - (last.phase - moved)) <= max(Self.toldStick, error) {
                    kept = (last, moved)
                }
                sequence = max(sequence, lastSequence)
            }
            if kept == nil { entry.toldOn = (entry.anchor.origin, entry.anchor.nudged) }  // (on the ends as they are)
            let (told, since) = kept ?? (HLSPublicationAge.Told(phase: best, placement: entry.anchor.placement), 0)
            entry.told = (told, sequence)
            let phase = told.phase - since  // against the newest ends
            // Published by the time the proxy had the answer, never after `now`: an interval
            // that reaches past it is narrowed about its middle, which every box reads as the
            // phase (cut at `now` instead, the answers made near the publication, the boxes'
            // settled probes, told each box a middle up to half the interval early, and two
            // boxes moved apart and back by 1–3 ms in pairs).
            let age = now - ((published.low + published.high) / 2 - best + phase)
            // Once the estimate is within half of ``toldStick`` the age is told exact: the
            // publication is the phase told by convention, and a box needs only to place the
            // proxy's clock against its own (its round trips). Wider, the box waits for it
            // narrower, as it would for its own (the half-width ages as the phase is unsure).
            let wide = (published.high - published.low) / 2
            let half = wide > Self.toldStick / 2 ? min(wide, max(0, age)) : 0
            return HLSPublicationAge(
                least: max(0, age - half), most: max(0, age + half), held: max(0, now - arrived),
                told: told)
        }
    }

    /// When the proxy should ask for `url` itself (monotonic seconds): inside the interval when
    /// the next segment's publication is expected (spread over it, ``spread`` while wider than
    /// ``spreadAbove``, then ``narrowSpread``), while that is known less well than ``settled``
    /// and a box asked within ``followedFor``; none otherwise, or while probes are pending (the
    /// caller then owns them and ends each with ``probed(_:)``).
    func probeTimes(_ url: URL, now: Double) -> [Double] {
        entries.withLock { entries -> [Double] in
            guard var entry = entries[url.absoluteString], entry.probing == 0, now - entry.asked < Self.followedFor,
                let nextEnd = entry.anchor.nextEnd, let duration = entry.anchor.nextDuration,
                let interval = entry.anchor.phase.interval, interval.high - interval.low > Self.settled
            else { return [] }
            let width = interval.high - interval.low
            let count = width > Self.spreadAbove ? Self.spread : Self.narrowSpread
            var times = (1...count).map { nextEnd + interval.low + width * Double($0) / Double(count + 1) }
            // (Past already: the same instants of the next segment's cycle.)
            if let first = times.first, first < now {
                let cycles = ((now - first) / duration).rounded(.up)
                times = times.map { $0 + cycles * duration }
            }
            entry.probing = times.count
            entries[url.absoluteString] = entry
            return times
        }
    }

    /// A probe of `url` was made (or given up).
    func probed(_ url: URL) {
        entries.withLock { entries in
            if let probing = entries[url.absoluteString]?.probing, probing > 0 {
                entries[url.absoluteString]?.probing = probing - 1
            }
        }
    }

    /// `text` as a live media playlist without program date-times; nil for anything else.
    private static func playlist(_ text: String, url: URL) -> HLSMediaPlaylist? {
        guard case .media(let playlist) = try? HLSPlaylist.parse(text, url: url),
            (try? HLSLiveAnchor.isNeeded(for: playlist)) == true
        else { return nil }
        return playlist
    }
}
