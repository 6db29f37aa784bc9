/// Which of a stream's alternative locations (several DASH `BaseURL`s: CDNs) to fetch from: the
/// first one not excluded, where a location that failed is excluded for ``exclusion`` seconds
/// (ExoPlayer's `BaseUrlExclusionList` excludes one for 5 minutes). When all are excluded, the
/// one whose exclusion ends first.
package struct LocationChoice: Sendable, Equatable {
    /// Seconds a failed location is avoided.
    package static let exclusion = 300.0
    /// Monotonic second until which each location is avoided (0: not).
    package private(set) var excludedUntil: [Double]

    package init(count: Int) {
        excludedUntil = Array(repeating: 0, count: max(1, count))
    }

    package var count: Int { excludedUntil.count }

    /// The location to use at monotonic time `now`.
    package func current(now: Double) -> Int {
        if let free = excludedUntil.firstIndex(where: { $0 <= now }) { return free }
        return excludedUntil.indices.min { excludedUntil[$0] < excludedUntil[$1] } ?? 0
    }

    /// Location `index` failed at `now`: avoided for ``exclusion`` seconds. Returns whether
    /// another location is now current (a retry there makes sense at once).
    @discardableResult
    package mutating func failed(_ index: Int, now: Double) -> Bool {
        guard excludedUntil.indices.contains(index), count > 1 else { return false }
        excludedUntil[index] = now + Self.exclusion
        return current(now: now) != index
    }
}
