import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// Live DASH without a usable `UTCTiming` (none, or only `http-head`: whole seconds): the
/// server's clock is read from its answers' `Date` headers, and one answer leaves a second, so
/// two boxes whose own clocks are not the server's (no NTP in the venue) were up to a second
/// apart, and a box's latency moved by up to a second at each re-measurement. The server's ticks
/// are found instead (``DateTicks``): a request timed so the next tick falls halfway through its
/// round trip halves what is left, a second down to a few milliseconds in about ten requests,
/// then one every re-measurement interval keeps it. A box whose own clock agrees with what the
/// ticks allow keeps its own (NTP: better than a round trip); one that does not follows the
/// server's.
extension PlaybackSession {
    /// The ticks are sought until what is left is narrower than this (seconds) beyond a typical
    /// round trip: the clock then moves by steps of at most half of it.
    static let tickPrecision = 0.002
    /// A clock move smaller than this (seconds) is not applied (the re-measured clock's jitter).
    static let tickStep = 0.001
    /// A box's own clock within this (seconds) of what the ticks allow is kept: NTP holds it
    /// within milliseconds of true time, and a server may stamp its `Date` a little late (from a
    /// time it caches, as nginx does between its events).
    static let localAgreement = 0.010

    /// Whether the server's clock comes from `Date` headers: a live stream placed by its
    /// availability start whose manifest lists no `UTCTiming` measured to better than a second.
    var readsDateTicks: Bool {
        mpd.isLive && liveAnchor == .availabilityStart
            && !mpd.utcTimings.contains { [.httpXSDate, .httpISO, .direct, .ntp, .sntp].contains($0.scheme) }
    }

    /// Finds the server's ticks on the `http-head` timing's URL, else the manifest's, and applies
    /// the clock they give; then re-checks them every re-measurement interval.
    func watchDateTicks(every interval: Double) async {
        let url =
            mpd.utcTimings.first { $0.scheme == .httpHead }.flatMap {
                $0.value.split(separator: " ").first.flatMap { URL(string: String($0)) }
            } ?? manifest.url
        let source = "Date ticks \(url.host ?? "")"
        var ticks = DateTicks()
        var roundTrips: [Double] = []
        var head = true  // HEAD, or GET once a server refused it
        var applied = false
        if let first = await manifest.lastResult, let date = first.date {
            ticks.add(date: date, sent: first.sent, headReceived: first.headReceived)
            roundTrips.append(first.headReceived - first.sent)
        }
        // Seconds from a wake to its request going out, the last few: the wake is set the
        // shortest of them early (a request sent 2–3 ms after its wake, past a tick aimed at
        // the middle of a 1 ms round trip, cuts nothing: the learner of the HLS publication
        // crept the same way).
        var lags: [Double] = []
        while !Task.isCancelled {
            // (A typical round trip, the median of the last five: a server that opens a
            // connection per request, Python's, answers in 1–6 ms, and what is left narrows to
            // about that, not to the shortest.)
            let rtt = roundTrips.isEmpty ? 0.05 : roundTrips.sorted()[roundTrips.count / 2]
            let width = ticks.interval.map { $0.high - $0.low } ?? .infinity
            let narrowing = width > rtt + Self.tickPrecision
            let now = Monotonic.now()
            let lead = min(0.05, lags.min() ?? 0)
            let send = ticks.nextProbe(after: now + lead + (narrowing ? 0.005 : interval), roundTrip: rtt) ?? now
            if send - lead > now { try? await Task.sleep(for: .microseconds(Int((send - lead - now) * 1_000_000))) }
            if Task.isCancelled { return }
            let woke = Monotonic.now()
            guard
                let answer = try? await fetcher.dated(url, head: head),
                (200..<300).contains(answer.status), let date = answer.date
            else {
                // (A server that answers HEAD without a date, or refuses it: GET from now on.)
                if head { head = false } else { try? await Task.sleep(for: .seconds(interval)) }
                continue
            }
            ticks.add(date: date, sent: answer.sent, headReceived: answer.headReceived)
            roundTrips.append(answer.headReceived - answer.sent)
            if roundTrips.count > 5 { roundTrips.removeFirst() }
            lags.append(max(0, answer.sent - woke))
            if lags.count > 5 { lags.removeFirst() }
            let precision = roundTrips.sorted()[roundTrips.count / 2] + Self.tickPrecision
            if applyTicks(ticks, source: source, precision: precision, first: !applied) { applied = true }
        }
    }

    /// Applies the ticks' clock once they are narrower than `precision` (a box's own clock
    /// within them is kept), through the server clock the timeline runs on. The first move (from
    /// a reading good to a second) is one exact re-anchor, announced as a latency jump: steered
    /// at the controller's 3 % it would take a quarter of a minute for 0.37 s. Later ones (the
    /// two clocks' drift, milliseconds) are steered away.
    @discardableResult
    private func applyTicks(_ ticks: DateTicks, source: String, precision: Double, first: Bool) -> Bool {
        guard var fresh = ticks.clock(source: source), let width = fresh.roundTrip, width <= precision,
            let (low, high, _) = ticks.interval
        else { return false }
        let local = ServerClock.local()
        if local.offset >= low - Self.localAgreement && local.offset <= high + Self.localAgreement { fresh = local }
        let old = clock.current
        let moved = fresh.offset - old.offset
        guard abs(moved) >= Self.tickStep || fresh.isLocal != old.isLocal else { return true }
        clock.current = fresh
        try? core.setWallOffset(fresh.offset)
        logger.log(
            level: abs(moved) >= 0.05 ? .notice : .debug, "server clock from its Date ticks",
            metadata: [
                "moved_ms": "\(String(format: "%.2f", moved * 1000))",
                "width_ms": "\(String(format: "%.2f", width * 1000))",
                "local": "\(fresh.isLocal)",
            ])
        events.send(.timeOffsetChanged(seconds: fresh.localClockDifferenceMs / 1000))
        if first, abs(moved) >= 0.02 { timelineMoved(by: moved, segment: mpd.maxSegmentDuration ?? 2, jump: true) }
        return true
    }
}
