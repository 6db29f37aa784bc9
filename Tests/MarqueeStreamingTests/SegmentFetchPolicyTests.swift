import Foundation
import NIOCore
import Testing

@testable import MarqueeStreaming

/// The segment fetch policy's decisions and a download try's judgement, from measured inputs.
@Suite struct SegmentFetchPolicyTests {
    @Test func theHeadDeadlineFollowsTheBufferAndTheServersUsualAnswer() {
        #expect(SegmentFetchPolicy.firstByteDeadline(buffer: 4, usualHead: 0.05, attempt: 1) == 2)  // half the buffer
        // never under 0.5 s
        #expect(SegmentFetchPolicy.firstByteDeadline(buffer: 0.4, usualHead: 0.05, attempt: 1) == 0.5)
        // 3 × the usual head
        #expect(abs(SegmentFetchPolicy.firstByteDeadline(buffer: 1, usualHead: 0.4, attempt: 2) - 1.2) < 1e-9)
        #expect(SegmentFetchPolicy.firstByteDeadline(buffer: 20, usualHead: 0.05, attempt: 1) == 3)  // never over 3 s
        #expect(SegmentFetchPolicy.firstByteDeadline(buffer: 4, usualHead: 0.05, attempt: 3) == 3)  // a third try
        // a server not heard yet
        #expect(SegmentFetchPolicy.firstByteDeadline(buffer: 4, usualHead: nil, attempt: 1) == 3)
    }

    @Test func failuresAreRetriedAsTheirKindDeserves() {
        let url = "http://edge/seg.m4s"
        let reset = FetchError(.network, url: url, message: "reset")
        let unavailable = FetchError(.status, url: url, status: 503, message: "503")
        let notYet = FetchError(.status, url: url, status: 404, message: "404")
        let forbidden = FetchError(.status, url: url, status: 403, message: "403")
        #expect(
            SegmentFetchPolicy.next(after: reset, attempt: 1, live: true, late: false, slow: false) == .retry(after: 0))
        // A 503 at a live edge: again after 0.1 s, 0.4 s, 1.6 s (a second of slack is not spent waiting).
        #expect(
            SegmentFetchPolicy.next(after: unavailable, attempt: 1, live: true, late: false, slow: false)
                == .retry(after: 0.1))
        #expect(
            SegmentFetchPolicy.next(after: unavailable, attempt: 2, live: true, late: false, slow: false)
                == .retry(after: 0.4))
        #expect(
            SegmentFetchPolicy.next(after: unavailable, attempt: 3, live: true, late: false, slow: false)
                == .retry(after: 1.6))
        #expect(SegmentFetchPolicy.next(after: unavailable, attempt: 4, live: true, late: false, slow: false) == .skip)
        #expect(
            SegmentFetchPolicy.next(after: notYet, attempt: 5, live: true, late: false, slow: false)
                == .retry(after: 0.3))
        #expect(SegmentFetchPolicy.next(after: notYet, attempt: 40, live: true, late: false, slow: false) == .skip)
        #expect(SegmentFetchPolicy.next(after: notYet, attempt: 4, live: false, late: false, slow: false) == .skip)
        #expect(SegmentFetchPolicy.next(after: forbidden, attempt: 1, live: true, late: false, slow: false) == .skip)
        #expect(SegmentFetchPolicy.next(after: reset, attempt: 1, live: true, late: true, slow: false) == .skip)
        #expect(SegmentFetchPolicy.nextEncrypted(after: forbidden, attempt: 1, late: false) == .skip)
        #expect(SegmentFetchPolicy.nextEncrypted(after: unavailable, attempt: 1, late: false) == .retry(after: 0.4))
    }

    @Test func theUsualHeadIsTheMedianOfTheLast16() {
        var heads = HeadTimes()
        #expect(heads.usual == nil)
        for _ in 0..<20 { heads.note(0.02) }
        heads.note(5)  // one slow answer does not move it
        #expect(heads.usual == 0.02)
        for _ in 0..<9 { heads.note(0.5) }  // most of the last 16 slow: it does
        #expect(heads.usual == 0.5)
    }

    /// An fMP4 segment (a `moof`, an `mdat`) followed by filler that no box header starts.
    private func segmentThenJunk() -> (ByteBuffer, segmentBytes: Int) {
        var b = ByteBuffer()
        for (type, size) in [("moof", 24), ("mdat", 40)] {
            b.writeInteger(UInt32(size))
            b.writeString(type)
            b.writeBytes([UInt8](repeating: 7, count: size - 8))
        }
        let length = b.readableBytes
        b.writeBytes([UInt8](repeating: 0xff, count: 100))
        return (b, length)
    }

    @Test func aWholeSegmentThenJunkIsKeptAndCut() {
        var attempt = SegmentAttempt(began: 0, keepWhole: true, transportStream: false)
        let (body, length) = segmentThenJunk()
        var verdict: SegmentAttempt.Verdict?
        for chunk in stride(from: 0, to: body.readableBytes, by: 30) {
            let part = body.getSlice(at: chunk, length: min(30, body.readableBytes - chunk))!
            #expect(attempt.take(part) == nil, "a body complete on the server is kept until whole")
            verdict = attempt.verdict(
                now: 0.1, expected: 0, bufferAtStart: 5, duration: 2, judgesPace: true,
                shouldAbandon: { _, _, _, _ in false })
            if verdict != nil { break }
        }
        #expect(verdict == .wholeThenJunk)
        #expect(attempt.keptBody()?.readableBytes == length)
    }

    /// A body handed on as it comes (a segment still being produced) that goes on past its
    /// segment: what is handed on is the segment, byte for byte, however the chunks fall (a box
    /// header across two chunks is held back until judged), and the try ends there.
    @Test func aStreamedBodyIsCutWhereItsSegmentEnds() {
        let (fmp4, fmp4Length) = segmentThenJunk()
        var ts = ByteBuffer()
        for _ in 0..<3 { ts.writeBytes([0x47] + [UInt8](repeating: 1, count: 187)) }
        let tsLength = ts.readableBytes
        ts.writeBytes([UInt8](repeating: 0, count: 100))
        for (body, length, transportStream) in [(fmp4, fmp4Length, false), (ts, tsLength, true)] {
            for size in [1, 7, 30, 200, 1000] {
                var attempt = SegmentAttempt(began: 0, keepWhole: false, transportStream: transportStream)
                var out: [UInt8] = []
                var verdict: SegmentAttempt.Verdict?
                for chunk in stride(from: 0, to: body.readableBytes, by: size) where verdict == nil {
                    let part = body.getSlice(at: chunk, length: min(size, body.readableBytes - chunk))!
                    out += attempt.take(part)?.readableBytesView ?? []
                    verdict = attempt.verdict(
                        now: 0.1, expected: 0, bufferAtStart: 5, duration: 2, judgesPace: true,
                        shouldAbandon: { _, _, _, _ in false })
                }
                #expect(verdict == .wholeThenJunk, "TS \(transportStream), chunks of \(size)")
                #expect(
                    out == Array(body.readableBytesView.prefix(length)),
                    "TS \(transportStream), chunks of \(size): \(out.count) bytes handed on")
                #expect(attempt.received == length && attempt.rest() == nil)
            }
        }
        // A whole segment with no junk after it: every byte handed on, none held at the end.
        var whole = SegmentAttempt(began: 0, keepWhole: false, transportStream: false)
        var out: [UInt8] = []
        for chunk in stride(from: 0, to: fmp4Length, by: 7) {
            out += whole.take(fmp4.getSlice(at: chunk, length: min(7, fmp4Length - chunk))!)?.readableBytesView ?? []
        }
        out += whole.rest()?.readableBytesView ?? []
        #expect(out == Array(fmp4.readableBytesView.prefix(fmp4Length)))
    }

    /// A body that never ends and looks like more segment (an `mdat` that says it goes on for
    /// 1 GB): past the largest body its segment may have it is a failed download, kept or
    /// streamed, and the bytes kept meanwhile are bounded by that.
    @Test func aBodyThatNeverEndsIsAFailedDownloadAtItsBound() {
        #expect(SegmentFetchPolicy.largestBody(expected: 680_000) == SegmentFetchPolicy.bodyFloor)
        #expect(SegmentFetchPolicy.largestBody(expected: 10_000_000) == 40_000_000)
        #expect(SegmentFetchPolicy.largestBody(expected: .max) == SegmentFetchPolicy.bodyCeiling)
        for keepWhole in [true, false] {
            var attempt = SegmentAttempt(began: 0, keepWhole: keepWhole, transportStream: false, largest: 100_000)
            var header = ByteBuffer()
            header.writeInteger(UInt32(1_000_000_000))
            header.writeString("mdat")
            _ = attempt.take(header)
            var chunks = 0
            while !attempt.overflowed, chunks < 100 {
                _ = attempt.take(ByteBuffer(bytes: [UInt8](repeating: 0, count: 16_384)))
                chunks += 1
            }
            #expect(attempt.overflowed && chunks == 7, "kept \(keepWhole): \(chunks) chunks")
            #expect(
                attempt.verdict(
                    now: 0.1, expected: 0, bufferAtStart: 5, duration: 2, judgesPace: true,
                    shouldAbandon: { _, _, _, _ in false }) == nil)
        }
    }

    @Test func aTrickleTooSlowForTheBufferIsStuckAndAStreamedBodyIsNotJudged() {
        var attempt = SegmentAttempt(began: 10, keepWhole: true, transportStream: false)
        var header = ByteBuffer()
        header.writeInteger(UInt32(100_000))
        header.writeString("mdat")
        _ = attempt.take(header)
        // 8 bytes of 100 kB after 2 s of a 2 s segment, 1.5 s of buffer left: stuck.
        let stuck = attempt.verdict(
            now: 12, expected: 100_000, bufferAtStart: 3.5, duration: 2, judgesPace: true,
            shouldAbandon: { _, _, _, _ in false })
        #expect(stuck == .stuck)
        let secondTry = attempt.verdict(
            now: 12, expected: 100_000, bufferAtStart: 3.5, duration: 2, judgesPace: false,
            shouldAbandon: { _, _, _, _ in false })
        #expect(secondTry == nil, "a second try is not given up as slow")
        #expect(
            attempt.verdict(
                now: 12, expected: 100_000, bufferAtStart: 3.5, duration: 2, judgesPace: true,
                shouldAbandon: { _, _, _, _ in true }) == .abandon)
        // A body that came fast, then stopped: stuck once it has been silent for half of what
        // is left of the buffer (never under 0.4 s), though its pace so far was ample.
        var stalled = SegmentAttempt(began: 10, keepWhole: true, transportStream: false)
        _ = stalled.take(ByteBuffer(bytes: [UInt8](repeating: 0, count: 50_000)), at: 10.05)
        let judge = { (a: inout SegmentAttempt, now: Double) in
            a.verdict(
                now: now, expected: 100_000, bufferAtStart: 1.5, duration: 2, judgesPace: true,
                shouldAbandon: { _, _, _, _ in false })
        }
        #expect(judge(&stalled, 10.4) == nil, "0.35 s of silence")
        #expect(judge(&stalled, 10.6) == .stuck, "0.55 s of silence with 0.9 s of buffer left")
        var paused = SegmentAttempt(began: 10, keepWhole: true, transportStream: false)
        _ = paused.take(ByteBuffer(bytes: [UInt8](repeating: 0, count: 50_000)), at: 10.05)
        #expect(
            paused.verdict(
                now: 11, expected: 100_000, bufferAtStart: 8, duration: 2, judgesPace: true,
                shouldAbandon: { _, _, _, _ in false }) == nil,
            "a pause of 0.95 s with 7 s of buffer left is waited out")
        // A body whose head waited 0.55 s (a venue proxy checking a peer's bytes before it
        // answers), then comes at the link's pace: judged by that pace, not by the wait.
        var waited = SegmentAttempt(began: 10, keepWhole: true, transportStream: false)
        _ = waited.take(ByteBuffer(bytes: [UInt8](repeating: 0, count: 65_536)), at: 10.55)
        let waitedVerdict = waited.verdict(
            now: 10.57, expected: 680_000, bufferAtStart: 1.5, duration: 2, judgesPace: true,
            shouldAbandon: { _, _, _, _ in false })
        #expect(waitedVerdict == nil, "64 KiB in the 0.02 s since its first byte")
        // The same bytes trickling since an early first byte: stuck.
        var trickled = SegmentAttempt(began: 10, keepWhole: true, transportStream: false)
        _ = trickled.take(ByteBuffer(bytes: [UInt8](repeating: 0, count: 1_000)), at: 10.02)
        _ = trickled.take(ByteBuffer(bytes: [UInt8](repeating: 0, count: 64_536)), at: 10.55)
        let trickledVerdict = trickled.verdict(
            now: 10.57, expected: 680_000, bufferAtStart: 1.5, duration: 2, judgesPace: true,
            shouldAbandon: { _, _, _, _ in false })
        #expect(trickledVerdict == .stuck, "64 KiB in the 0.55 s since its first byte")
        var streamed = SegmentAttempt(began: 10, keepWhole: false, transportStream: false)
        #expect(streamed.take(header)?.readableBytes == 8, "a body being produced is handed on as it comes")
        #expect(
            streamed.verdict(
                now: 30, expected: 100_000, bufferAtStart: 0, duration: 2, judgesPace: true,
                shouldAbandon: { _, _, _, _ in true }) == nil)
    }
}

/// What to fetch next on a live timeline (a SegmentTimeline of 2 s segments, 10 listed).
@Suite struct SegmentChoiceTests {
    private func timeline() throws -> RepresentationTimeline { try FeedCursorTests.timeline(segments: 10) }

    @Test func behindLiveItSkipsToTheWantedSegmentAndStartsAtTheListedEdge() throws {
        let t = try timeline()  // segments 100…120 s
        #expect(SegmentChoice.segmentDuration(t) == 2)
        let first = try #require(t.segment(containing: 100.5))
        #expect(SegmentChoice.catchUp(from: first, wanted: 103.5, on: t) == nil, "one segment behind is on time")
        #expect(SegmentChoice.catchUp(from: first, wanted: 111, on: t)?.start == 110)
        #expect(SegmentChoice.catchUp(from: first, wanted: 125, on: t) == nil, "not listed: no jump into nothing")
        // The listing ends at 120 s; the wanted position is later.
        #expect(SegmentChoice.edgeStart(on: t, wanted: 121, misses: 1) == nil, "one miss is not yet a late server")
        #expect(SegmentChoice.edgeStart(on: t, wanted: 121, misses: 2)?.start == 118)
        #expect(SegmentChoice.edgeStart(on: t, wanted: 119, misses: 5) == nil, "the wanted segment is listed")
    }

    @Test func theListingIsReloadedJustAfterTheNextSegmentShouldBeListed() {
        #expect(abs(SegmentChoice.listingWait(expectedIn: 1.2, segmentDuration: 2, misses: 0) - 1.23) < 1e-9)
        #expect(SegmentChoice.listingWait(expectedIn: 9, segmentDuration: 2, misses: 0) == 2)  // at most 2 s
        // Due already and not there: 50 ms four times, then 100, 200, 400, 800, then half a segment.
        let waits = (0..<10).map { SegmentChoice.listingWait(expectedIn: 0, segmentDuration: 2, misses: $0) }
        #expect(waits == [0.05, 0.05, 0.05, 0.05, 0.1, 0.2, 0.4, 0.8, 1, 1])
        #expect(SegmentChoice.listingWait(expectedIn: nil, segmentDuration: 6, misses: 0) == 2)
        #expect(SegmentChoice.isOverdue(after: 100, now: 102.9, segmentDuration: 2, listingLate: 0) == false)
        #expect(SegmentChoice.isOverdue(after: 100, now: 103, segmentDuration: 2, listingLate: 0))
        // A server seen listing 1.2 s late: its next segment is not overdue before 104.2.
        #expect(SegmentChoice.isOverdue(after: 100, now: 104.1, segmentDuration: 2, listingLate: 1.2) == false)
        #expect(SegmentChoice.isOverdue(after: 100, now: 104.2, segmentDuration: 2, listingLate: 1.2))
        #expect(SegmentChoice.storeLead(segmentDuration: 1) == 3 && SegmentChoice.storeLead(segmentDuration: 4) == 8)
    }

    /// A server that lists each segment 1.2 s after its end: the reloads learn it and come just
    /// before the listing, so each arrival is found within the backoff's first steps (here
    /// simulated: a reload at the scheduled time, then the backoff) instead of the last doubling.
    @Test func theReloadLearnsHowLateTheServerLists() {
        // Seconds after the segment's end it is found, and the last reload that missed it.
        func found(late: Double, learned: Double) -> (at: Double, missed: Double?) {
            var t = learned + 0.03  // listingWait: the expected listing + 30 ms
            var missed: Double? = nil
            var misses = 0
            while t < late {
                missed = t
                t += SegmentChoice.listingWait(expectedIn: 0, segmentDuration: 2, misses: misses)
                misses += 1
            }
            return (t, missed)
        }
        var learned = 0.0
        var observed: [Double] = []
        for late in [1.2, 1.2, 1.2, 1.2, 1.25, 1.15, 1.2, 1.2, 0.9, 0.9, 0.9, 0.9] {
            let f = found(late: late, learned: learned)
            observed.append(f.at - late)
            learned = SegmentChoice.listingLateness(observed: f.at, missed: f.missed, segmentDuration: 2)
        }
        #expect(found(late: 1.2, learned: 0).at - 1.2 > 0.3, "without learning: the last doubling")
        // From the second on: each found within 0.1 s of its listing (it varies by ±0.05 s); a
        // server that lists earlier again (0.9 s) is followed down, 0.07 s a segment.
        #expect(observed[1..<8].allSatisfy { $0 >= 0 && $0 < 0.1 }, "found after the listing by \(observed)")
        #expect(
            zip(observed[8...], observed[9...]).allSatisfy { $1 <= $0 - 0.05 }, "found after the listing by \(observed)"
        )
        #expect(SegmentChoice.listingLateness(observed: 0.02, missed: nil, segmentDuration: 2) == 0)
        #expect(SegmentChoice.listingLateness(observed: 60, missed: 59, segmentDuration: 2) == 3)
    }
}
