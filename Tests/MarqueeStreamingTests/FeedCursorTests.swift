import Foundation
import MarqueeStreaming
import Testing

/// A feeder's cursor on a live timeline (2 s segments, 100…120 s listed, then 120…130 s): what it
/// feeds next and what it learns of the listing, transition by transition, without a server.
@Suite struct FeedCursorTests {
    /// A live SegmentTimeline of `segments` 2 s segments from 100 s (also ``SegmentChoiceTests``').
    static func timeline(segments: Int) throws -> RepresentationTimeline {
        let text = """
            <MPD type="dynamic" availabilityStartTime="2026-01-01T00:00:00Z" minimumUpdatePeriod="PT2S"><Period \
            id="p0" start="PT0S">
            <AdaptationSet contentType="video" mimeType="video/mp4"><Representation id="v" bandwidth="1000000">
            <SegmentTemplate timescale="1000" initialization="init.mp4" media="$Time$.m4s">
            <SegmentTimeline><S t="100000" d="2000" r="\(segments - 1)"/></SegmentTimeline></SegmentTemplate>
            </Representation></AdaptationSet></Period></MPD>
            """
        let mpd = try MPDParser().parse(Data(text.utf8))
        let set = mpd.periods[0].adaptationSets[0]
        return try RepresentationTimeline(
            mpd: mpd, period: 0, adaptationSet: set, representation: set.representations[0],
            manifestURL: URL(string: "http://o/live.mpd")!)
    }

    @Test func itFeedsInOrderThenWaitsForTheListingAndLearnsHowLateItIs() throws {
        var cursor = FeedCursor(timeline: try Self.timeline(segments: 10), from: 116.5, now: 0)
        #expect(cursor.next?.start == 116)
        #expect(!cursor.refreshDue(now: 5, minimumUpdatePeriod: 2), "nothing fed yet")
        for start in [116.0, 118.0] {
            let segment = try #require(cursor.next)
            #expect(segment.start == start)
            cursor.feeding()
            cursor.fed(segment)
        }
        #expect(cursor.next == nil && cursor.lastEnd == 120 && !cursor.awaited)
        // The listing has nothing after 120 s: a reload of the same timeline finds nothing.
        cursor.reloaded(nil, now: 1, wanted: 117, isLive: true)
        #expect(cursor.next == nil)
        // The next (120…122 s) is expected listed at its end, 122 s, none late: at server second
        // 120 that is 2 s away; it waits 2 s at most.
        let start = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z
        let expected = try #require(cursor.expectedListing(now: start.addingTimeInterval(120)))
        #expect(abs(expected - 2) < 1e-9)
        let wait = cursor.missed(expectedIn: expected, serverNow: 120)
        #expect(wait <= 2 && cursor.misses == 1 && cursor.awaited && cursor.missedAt == nil)
        cursor.waited(now: 3)
        #expect(cursor.reloadSince == 3)
        _ = cursor.missed(expectedIn: 0, serverNow: 124.5)
        #expect(cursor.misses == 2 && cursor.missedAt == 124.5)
        // The next reload lists 120…130 s; found at server second 125.5.
        cursor.reloaded(try Self.timeline(segments: 15), now: 4, wanted: 121, isLive: true)
        #expect(cursor.next?.start == 120 && cursor.reloadSince == nil)
        cursor.found(serverNow: 125.5) { _, _ in 0 }
        // Listed between 124.5 (missed) and 125.5 (found), 122 s its end: 2.5…3.5 s late.
        #expect(cursor.misses == 0 && cursor.missedAt == nil)
        #expect(cursor.listingLate > 0 && cursor.listingLate <= 3.5, "\(cursor.listingLate)")
        #expect(abs(cursor.listedBefore - 0.5) < 1e-9, "measured from the middle of the two reloads")
        cursor.measured()
        #expect(cursor.listedBefore == 0)
        // Time the player was not running is not the server's lateness.
        var frozen = cursor
        frozen.found(serverNow: 125.5) { _, _ in 0 }  // (no misses: nothing learned)
        #expect(frozen.listingLate == cursor.listingLate)
    }

    /// A copy another reload brought is taken only when it lists what comes next; a timeline
    /// that moved while the feeder waited forgets what it learned of the listing's lateness.
    @Test func aNewerCopyServesWhenItListsTheNextAndAMoveForgetsTheLateness() throws {
        var cursor = FeedCursor(timeline: try Self.timeline(segments: 10), from: 118.5, now: 0)
        let segment = try #require(cursor.next)
        cursor.feeding()
        cursor.fed(segment)
        #expect(cursor.next == nil && cursor.lastEnd == 120)
        #expect(!cursor.lists(on: try Self.timeline(segments: 10), wanted: 119), "the same listing: nothing new")
        #expect(cursor.lists(on: try Self.timeline(segments: 11), wanted: 119), "120…122 s listed")
        // Learned late (misses, then found), then the timeline moves: forgotten.
        cursor.reloaded(nil, now: 1, wanted: 119, isLive: true)
        _ = cursor.missed(expectedIn: 2, serverNow: 120)
        _ = cursor.missed(expectedIn: 0, serverNow: 123.5)
        cursor.reloaded(try Self.timeline(segments: 11), now: 2, wanted: 119, isLive: true)
        cursor.found(serverNow: 124) { _, _ in 0 }
        #expect(cursor.listingLate > 1, "\(cursor.listingLate)")
        let learned = cursor.listingLate
        var moved = cursor
        moved.timelineMoved()
        #expect(moved.listingLate == 0 && moved.misses == 0 && moved.missedAt == nil && moved.listedBefore == 0)
        #expect(cursor.listingLate == learned)
        // A miss measured across the move teaches nothing: found with no misses counted.
        _ = moved.missed(expectedIn: 2, serverNow: 122)
        moved.timelineMoved()
        moved.found(serverNow: 125) { _, _ in 0 }
        #expect(moved.listingLate == 0)
    }

    @Test func aLiveStartBeyondTheListingTakesItsEdgeAfterTwoMisses() throws {
        var cursor = FeedCursor(timeline: try Self.timeline(segments: 10), from: 125, now: 0)
        #expect(cursor.next == nil, "125 s is not listed")
        cursor.reloaded(nil, now: 1, wanted: 125, isLive: true)
        #expect(cursor.next == nil)
        _ = cursor.missed(expectedIn: nil, serverNow: 127)
        _ = cursor.missed(expectedIn: nil, serverNow: 128)
        cursor.reloaded(nil, now: 2, wanted: 125, isLive: true)
        #expect(cursor.next?.start == 118, "the listed edge")
        // On demand it would not guess an edge.
        var onDemand = FeedCursor(timeline: try Self.timeline(segments: 10), from: 125, now: 0)
        _ = onDemand.missed(expectedIn: nil, serverNow: nil)
        _ = onDemand.missed(expectedIn: nil, serverNow: nil)
        onDemand.reloaded(nil, now: 1, wanted: 125, isLive: false)
        #expect(onDemand.next == nil)
    }

    @Test func catchUpRefreshAndANewStreamAreMarkedOnce() throws {
        var cursor = FeedCursor(timeline: try Self.timeline(segments: 10), from: 100, now: 0)
        let first = try #require(cursor.next)
        let jump = try #require(SegmentChoice.catchUp(from: first, wanted: 111, on: cursor.timeline))
        _ = cursor.missed(expectedIn: nil, serverNow: nil)
        cursor.catchUp(to: jump)
        #expect(cursor.next?.start == 110 && !cursor.awaited)
        cursor.feeding()
        cursor.fed(jump)
        #expect(cursor.refreshDue(now: 0.5, minimumUpdatePeriod: 0.2) == false, "at least 1 s between reloads")
        #expect(cursor.refreshDue(now: 1, minimumUpdatePeriod: 0.2))
        #expect(!cursor.refreshDue(now: 1, minimumUpdatePeriod: nil), "a manifest that does not change")
        cursor.refreshed(try Self.timeline(segments: 15), now: 1)
        #expect(cursor.loadedAt == 1 && cursor.next?.start == 112)
        cursor.refreshed(nil, now: 2)
        #expect(cursor.loadedAt == 2 && cursor.next?.start == 112, "a failed reload keeps the timeline")
        // A segment of a new period begins a new stream: marked as it is entered (after the last
        // fed, 112 s, later than the wanted 111 s), not again.
        cursor.enter(try Self.timeline(segments: 15), wanted: 111)
        #expect(cursor.next?.start == 112 && !cursor.pushedAny && cursor.marked?.start == 112)
        let entered = try #require(cursor.next)
        let begins = cursor.beginsStream(entered)
        #expect(!begins, "nothing pushed of it yet")
    }
}
