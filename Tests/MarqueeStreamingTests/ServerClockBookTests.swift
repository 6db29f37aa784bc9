import MarqueeStreaming
import Testing

/// A player's best reading of each server clock (``ServerClockBook``): a fresh measurement with
/// a long round trip (a loaded box) does not replace a better one that is still good.
struct ServerClockBookTests {
    let url = "http-time http://origin/time"

    @Test func aWorseReadingGivesTheKeptOne() {
        let book = ServerClockBook()
        let good = ServerClock(offset: 100.000, source: url, roundTrip: 0.002)
        #expect(book.settle(good, now: 10) == good)
        // 40 s later, measured with a 25 ms round trip and 9 ms off: the kept reading's bound is
        // 1 ms + 2 ms of drift, the fresh one's 12.5 ms.
        let loaded = ServerClock(offset: 100.009, source: url, roundTrip: 0.025)
        #expect(book.settle(loaded, now: 50) == good)
        // A better one replaces it.
        let better = ServerClock(offset: 100.0004, source: url, roundTrip: 0.001)
        #expect(book.settle(better, now: 60) == better)
        #expect(book.settle(loaded, now: 61) == better)
    }

    @Test func aReadingAgesUntilAFreshOneIsBetter() {
        let book = ServerClockBook()
        let old = ServerClock(offset: 100.000, source: url, roundTrip: 0.002)
        _ = book.settle(old, now: 0)
        let fresh = ServerClock(offset: 100.003, source: url, roundTrip: 0.010)
        // Bound 1 ms + 50 ppm × age against 5 ms: kept until 80 s, replaced after.
        #expect(book.settle(fresh, now: 79) == old)
        #expect(book.settle(fresh, now: 81) == fresh)
        let worse = ServerClock(offset: 100.006, source: url, roundTrip: 0.020)
        #expect(book.settle(worse, now: 82) == fresh, "the fresh one is kept now")
    }

    @Test func aClockThatWasSteppedIsTakenAtOnce() {
        let book = ServerClockBook()
        let old = ServerClock(offset: 100.000, source: url, roundTrip: 0.001)
        _ = book.settle(old, now: 0)
        // The server's clock stepped by 1 s (or another server answers there): the two readings
        // cannot both be right, so the fresh one, worse as it is, is taken and kept.
        let stepped = ServerClock(offset: 101.000, source: url, roundTrip: 0.030)
        #expect(book.settle(stepped, now: 1) == stepped)
        #expect(book.settle(ServerClock(offset: 101.010, source: url, roundTrip: 0.040), now: 2) == stepped)
    }

    @Test func sourcesAreKeptApartAndTheLocalClockIsNotKept() {
        let book = ServerClockBook()
        let a = ServerClock(offset: 100.000, source: url, roundTrip: 0.001)
        let b = ServerClock(offset: 100.020, source: "http-time http://other/time", roundTrip: 0.030)
        _ = book.settle(a, now: 0)
        #expect(book.settle(b, now: 1) == b, "another server's reading is its own")
        let local = ServerClock.local()
        #expect(book.settle(local, now: 2) == local)
    }

    @Test func aSourceNamedAnewOnEveryReloadKeepsTheBookBounded() {
        let book = ServerClockBook()
        let first = ServerClock(offset: 100, source: "http-time http://origin/time?0", roundTrip: 0.001)
        _ = book.settle(first, now: 0)
        for i in 1...1000 {
            _ = book.settle(
                ServerClock(offset: 100, source: "http-time http://origin/time?\(i)", roundTrip: 0.001), now: Double(i))
        }
        // The first (oldest) reading is gone: a worse fresh one of its source is taken as it is.
        let worse = ServerClock(offset: 100.01, source: first.source, roundTrip: 0.030)
        #expect(book.settle(worse, now: 1001) == worse)
        // A recent one is still kept.
        let recent = ServerClock(offset: 100.01, source: "http-time http://origin/time?1000", roundTrip: 0.030)
        #expect(book.settle(recent, now: 1001) != recent)
    }
}
