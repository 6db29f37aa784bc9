import Foundation

/// The box's best reading of each server clock it has measured, by source (the timing URL),
/// shared by every session of one player: a live session that starts (or is made ready for a
/// playlist's or a schedule's next entry) and each re-synchronisation take the kept reading
/// when it is still the better one, rather than a fresh one measured on a loaded box.
///
/// A reading is as good as half its round trip (the server's time lies somewhere in it), and
/// worsens with its age as the two clocks drift apart (``driftRate``). Before, every session
/// measured anew: on a loaded two-core machine five samples' best round trip can be 25 ms, and
/// two boxes on one schedule cut back to a live stream 10.7 ms apart on the same frame.
package final class ServerClockBook: Sendable {
    private struct Entry {
        var clock: ServerClock
        var at: Double
    }
    private let entries = Locked<[String: Entry]>([:])

    /// How fast a reading's error grows with its age, seconds per second: the box's monotonic
    /// clock and the server's wall clock drift apart (50 ppm: an undisciplined crystal; clocks
    /// that NTP disciplines, far less). After 10 minutes a reading has lost 30 ms.
    package static let driftRate = 50e-6

    /// Readings kept at most (one per server clock a box plays from: a handful).
    package static let capacity = 16

    package init() {}

    /// How far `clock`, read `age` seconds ago, may be from the server's: half its round trip
    /// and its drift since (infinite without a round trip: not a measurement).
    package static func bound(_ clock: ServerClock, age: Double) -> Double {
        (clock.roundTrip ?? .infinity) / 2 + driftRate * max(0, age)
    }

    /// `fresh`, measured at monotonic `now`, or the kept reading of the same source when its
    /// bound (aged) is still the smaller; the better one is kept. Two readings that cannot both
    /// be right (their offsets further apart than their bounds together: the server's clock
    /// was stepped, or the server changed) leave the fresh one. A clock without a round trip
    /// (the local clock, a `direct` timing) is returned as it is, not kept.
    package func settle(_ fresh: ServerClock, now: Double = Monotonic.now()) -> ServerClock {
        guard fresh.roundTrip != nil else { return fresh }
        return entries.withLock { entries in
            if let kept = entries[fresh.source] {
                let keptBound = Self.bound(kept.clock, age: now - kept.at)
                let freshBound = Self.bound(fresh, age: 0)
                if keptBound < freshBound, abs(kept.clock.offset - fresh.offset) <= keptBound + freshBound {
                    return kept.clock
                }
            }
            entries[fresh.source] = Entry(clock: fresh, at: now)
            // Sources come from manifests (their UTCTiming URLs): bounded, the oldest reading
            // dropped, so a packager that names a new one on every reload grows nothing.
            if entries.count > Self.capacity, let oldest = entries.min(by: { $0.value.at < $1.value.at })?.key {
                entries[oldest] = nil
            }
            return fresh
        }
    }
}
