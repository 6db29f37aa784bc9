import Foundation
import Logging
import NIOCore

/// The server's wall clock as seen from this box: server Unix time = monotonic seconds + ``offset``.
///
/// Built on the monotonic clock, so a step of the local wall clock changes nothing.
package struct ServerClock: Sendable, Equatable {
    /// Server Unix seconds minus monotonic seconds.
    package var offset: Double
    /// Where the time came from (`http-xsdate http://…`, `Date header`, `local clock`).
    package var source: String
    /// Round trip of the sample used, seconds (`nil` for the local clock).
    package var roundTrip: Double?

    package init(offset: Double, source: String, roundTrip: Double? = nil) {
        self.offset = offset
        self.source = source
        self.roundTrip = roundTrip
    }

    /// Whether this is the local wall clock, not a measurement of the server's.
    package var isLocal: Bool { roundTrip == nil && source == Self.localSource }
    static let localSource = "local clock"

    /// The local wall clock taken as the server's.
    package static func local() -> ServerClock {
        ServerClock(offset: Monotonic.realtime() - Monotonic.now(), source: localSource)
    }

    /// Server time now.
    package func now() -> Date { Date(timeIntervalSince1970: Monotonic.now() + offset) }

    /// The monotonic time at which the server's clock reads `date`.
    package func monotonic(at date: Date) -> Double { date.timeIntervalSince1970 - offset }

    /// Server clock minus local wall clock, in milliseconds (`timeOffset` of the player API).
    package var localClockDifferenceMs: Double {
        (offset - (Monotonic.realtime() - Monotonic.now())) * 1000
    }
}

/// A ``ServerClock`` that re-synchronisation may replace while tasks read it, and the clock of
/// the presentation timeline: the server's clock plus the live edge's ``Lead`` when the edge
/// runs off it (an encoder's drifting clock, `LiveEdgeRate` in Marquee).
package final class SharedServerClock: Sendable {
    /// How far a live edge runs ahead of the server's clock (negative: behind), as a line:
    /// `lead + slope × (t − reference)` seconds at `t` (server seconds since the availability
    /// start).
    package struct Lead: Sendable, Equatable {
        package var reference: Double
        package var lead: Double
        package var slope: Double

        package init(reference: Double, lead: Double, slope: Double) {
            self.reference = reference
            self.lead = lead
            self.slope = slope
        }

        package func at(_ t: Double) -> Double { lead + slope * (t - reference) }
    }

    private let value: Locked<(clock: ServerClock, lead: Lead?, start: Double)>
    package init(_ clock: ServerClock) { value = Locked((clock, nil, 0)) }

    /// The current estimate of the server's clock.
    package var current: ServerClock {
        get { value.withLock { $0.clock } }
        set { value.withLock { $0.clock = newValue } }
    }

    /// The live edge's lead over the server's clock, and the availability start time (Unix
    /// seconds) its times count from; nil: none (the timeline is the server's clock).
    package func setLead(_ lead: Lead?, availabilityStart: Double) {
        value.withLock {
            $0.lead = lead
            $0.start = availabilityStart
        }
    }

    package var lead: Lead? { value.withLock { $0.lead } }

    /// The server's clock, without the edge's lead (HTTP dates, the core's wall clock).
    package var offset: Double { current.offset }
    /// Timeline time now: the server's clock plus the edge's lead.
    package func now() -> Date {
        let mono = Monotonic.now()
        return Date(timeIntervalSince1970: mono + timelineOffset(atMonotonic: mono))
    }
    /// Timeline Unix seconds minus monotonic seconds at monotonic time `mono`: ``offset`` plus
    /// the edge's lead then.
    package func timelineOffset(atMonotonic mono: Double) -> Double {
        value.withLock { v in
            guard let lead = v.lead else { return v.clock.offset }
            return v.clock.offset + lead.at(mono + v.clock.offset - v.start)
        }
    }
    package var localClockDifferenceMs: Double { current.localClockDifferenceMs }
}

/// Measures the server's clock with the manifest's `UTCTiming` schemes (http-xsdate, http-iso,
/// http-head, direct, ntp/sntp over UDP, and a URL answering Unix milliseconds), falling back to
/// the manifest response's `Date` header, then to the local clock.
///
/// Each HTTP scheme is sampled a few times (5 by default); each sample takes the server time at
/// the midpoint of its round trip (NTP-style correction) and ``combine(_:)`` rejects the slow,
/// unreliable ones. Everything is on the monotonic clock: a step of the local clock changes nothing.
package struct ClockSync: Sendable {
    package var fetcher: HTTPFetcher
    package var samples: Int
    package var logger: Logger
    /// The player's best readings: a measurement is settled against it
    /// (``ServerClockBook/settle(_:now:)``), nil: each measurement stands alone.
    package var book: ServerClockBook?

    package init(fetcher: HTTPFetcher, samples: Int = 5, logger: Logger, book: ServerClockBook? = nil) {
        self.fetcher = fetcher
        self.samples = samples
        self.logger = logger
        self.book = book
    }

    package func synchronize(timings: [UTCTiming], fallback: FetchResult? = nil) async -> ServerClock {
        for timing in timings {
            if let measured = await measure(timing) {
                let clock = book?.settle(measured) ?? measured
                logger.debug(
                    "server clock",
                    metadata: [
                        "source": "\(clock.source)", "rtt": "\(measured.roundTrip ?? 0)",
                        "kept": "\(clock != measured)",
                    ])
                return clock
            }
        }
        return fallback.flatMap(Self.clock(answering:)) ?? .local()
    }

    /// The server clock as an answer's `Date` header tells it, nil without one. One-second
    /// resolution: the server's second started somewhere in the round trip. A local clock that
    /// agrees with the header to within that is the better measure (NTP-synced boxes:
    /// milliseconds, not ±0.5 s), and is returned instead; one that does not is off.
    package static func clock(answering result: FetchResult) -> ServerClock? {
        guard let date = result.date else { return nil }
        let header = ServerClock(
            offset: date.timeIntervalSince1970 + 0.5 - result.answered, source: "Date header",
            roundTrip: result.headReceived - result.sent)
        let local = ServerClock.local()
        return abs(header.offset - local.offset) <= 1.0 + (header.roundTrip ?? 0) / 2 ? local : header
    }

    func measure(_ timing: UTCTiming) async -> ServerClock? {
        switch timing.scheme {
        case .direct:
            guard let date = XSDateTime.date(timing.value) else { return nil }
            return ServerClock(offset: date.timeIntervalSince1970 - Monotonic.now(), source: "direct")
        case .httpXSDate, .httpISO, .httpHead:
            return await sampleHTTP(timing)
        case .ntp, .sntp:
            // `value`: one or more `host[:port]`, space-separated.
            for server in timing.value.split(separator: " ") {
                let parts = server.split(separator: ":")
                let host = String(parts.first ?? "")
                let port = parts.count > 1 ? Int(parts[1]) ?? 123 : 123
                guard !host.isEmpty else { continue }
                if let clock = await sampled({ await SNTP.sample(host: host, port: port) }) { return clock }
            }
            return nil
        case .httpNTP, .unknown:
            return nil
        }
    }

    private func sampleHTTP(_ timing: UTCTiming) async -> ServerClock? {
        // `value` may list several URLs separated by spaces.
        for text in timing.value.split(separator: " ") {
            guard let url = URL(string: String(text)) else { continue }
            if let best = await sampled({ await sampleOnce(url, head: timing.scheme == .httpHead) }) { return best }
        }
        return nil
    }

    /// ``samples`` exchanges (stopping at the first that fails), ``combine(_:)``d.
    private func sampled(_ once: () async -> ServerClock?) async -> ServerClock? {
        var taken: [ServerClock] = []
        for _ in 0..<max(1, samples) {
            guard let sample = await once() else { break }
            taken.append(sample)
        }
        return Self.combine(taken)
    }

    /// The estimate from several samples: those whose round trip is within twice the shortest
    /// (+ 2 ms) are kept — a slow answer's midpoint can be off by half its round trip — and the
    /// median of their offsets is taken, so one odd answer cannot move the clock.
    package static func combine(_ samples: [ServerClock]) -> ServerClock? {
        guard let shortest = samples.compactMap(\.roundTrip).min() else { return samples.first }
        let kept = samples.filter { ($0.roundTrip ?? .infinity) <= 2 * shortest + 0.002 }.sorted {
            $0.offset < $1.offset
        }
        guard !kept.isEmpty else { return nil }
        var best = kept[kept.count / 2]
        best.roundTrip = kept.compactMap(\.roundTrip).min()
        return best
    }

    /// One request: server time against the midpoint of send and response head.
    package func sampleOnce(_ url: URL, head: Bool = false) async -> ServerClock? {
        guard
            let result = try? await fetcher.get(url, method: head ? .HEAD : .GET, timeout: .seconds(5), maxBytes: 4096)
        else {
            return nil
        }
        let mid = result.answered
        let rtt = result.headReceived - result.sent
        if head {
            guard let date = result.date else { return nil }
            return ServerClock(
                offset: date.timeIntervalSince1970 + 0.5 - mid, source: "http-head \(url)", roundTrip: rtt)
        }
        let body = String(buffer: result.body).trimmingCharacters(in: .whitespacesAndNewlines)
        if let ms = Double(body), ms > 1e11 {
            return ServerClock(offset: ms / 1000 - mid, source: "unix-ms \(url)", roundTrip: rtt)
        }
        guard let date = XSDateTime.date(body) ?? ISO8601Lenient.date(body) else { return nil }
        return ServerClock(offset: date.timeIntervalSince1970 - mid, source: "http-time \(url)", roundTrip: rtt)
    }
}

/// http-iso answers may use a basic ISO 8601 form (`20261122T032000.123Z`).
enum ISO8601Lenient {
    static func date(_ text: String) -> Date? {
        var t = text
        if t.count >= 15, t[t.index(t.startIndex, offsetBy: 4)] != "-" {
            // basic format → extended
            let c = Array(t)
            guard c.count >= 15 else { return nil }
            t =
                String(c[0..<4]) + "-" + String(c[4..<6]) + "-" + String(c[6..<8]) + "T" + String(c[9..<11]) + ":"
                + String(c[11..<13]) + ":" + String(c[13...])
        }
        return XSDateTime.date(t)
    }
}
