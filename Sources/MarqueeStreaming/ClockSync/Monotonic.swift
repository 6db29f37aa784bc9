#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `CLOCK_MONOTONIC` in seconds — the same clock the C core's `mq_clock_now()` reads, so times
/// measured here and there compare directly. Steps of the local wall clock do not move it.
package enum Monotonic {
    package static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    /// Local wall clock (`CLOCK_REALTIME`), Unix seconds.
    package static func realtime() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
