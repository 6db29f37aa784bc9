import Foundation
import Logging
import MarqueeStreaming
import NIOCore
import Testing

@testable import MarqueeOrigin

/// The scheduler's loader (``SegmentLoader``) over loopback from our origin with the network's
/// faults: what it hands on is each segment exactly as a fault-free origin serves it, or nothing.
@Suite("Segment loader over loopback")
struct SegmentLoaderTests {
    /// Collects what the loader hands on.
    struct Collected: SegmentDeliverySink {
        var bytes: [UInt8] = []
        var tries = 0
        var hasDelivered: Bool { !bytes.isEmpty }
        mutating func deliver(_ chunk: ByteBuffer) throws(FetchError) { bytes += chunk.readableBytesView }
        mutating func startOver() {
            bytes = []
            tries += 1
        }
    }

    /// 8 s of buffer; the segment late (behind the wanted position) `lateAfter` seconds from now.
    static func context(abandon: Bool = false, lateAfter: Double = .infinity) -> SegmentLoadContext {
        let buffer: @Sendable () -> (ahead: Double?, beforeSegment: Double) = { (8, 8) }
        let always: @Sendable (Int, Int, Double, Double) -> Bool = { _, _, _, _ in true }
        let late = Monotonic.now() + lateAfter
        return SegmentLoadContext(
            prepare: { true }, buffer: buffer, isLate: { Monotonic.now() >= late }, firstByte: {},
            shouldAbandon: abandon ? always : nil)
    }

    static func request(_ url: URL, paced: Bool = false) -> SegmentRequest {
        SegmentRequest(
            url: url, timeline: nil, duration: 2, expectedBytes: 700_000, transportStream: false, live: true,
            paced: paced)
    }

    @Test("resets, short bodies, wrong lengths, endless bodies and 503s: every segment whole, byte for byte")
    func networkFaultsNeverReachTheReceiver() async throws {
        let stream = try await PinnedStream()
        let truth = try await stream.truth(rep: "0", count: 12)
        let loader = SegmentLoader(fetcher: HTTPFetcher(), locations: 1, logger: Logger(label: "test.loader"))
        let faults = ["seed_21", "reset_20", "badlength_15", "truncate_15", "endless_15", "status_503-15"]
        var retried = 0
        for n in 0..<12 {
            var sink = Collected()
            let outcome = await loader.load(
                Self.request(stream.segment(n, rep: "0", faults)), into: &sink, context: Self.context())
            guard case .delivered(let bytes, _) = outcome else {
                Issue.record("segment \(n): \(outcome)")
                continue
            }
            #expect(
                sink.bytes == truth[n], "segment \(n): \(sink.bytes.count) bytes handed on, \(truth[n].count) served")
            #expect(bytes >= truth[n].count)
            if sink.tries > 1 { retried += 1 }
        }
        #expect(retried >= 3, "only \(retried) of 12 segments needed a second try: the faults did not strike")
    }

    @Test("a body ABR finds too slow is abandoned, nothing handed on")
    func aSlowBodyIsAbandoned() async throws {
        let stream = try await PinnedStream()
        let loader = SegmentLoader(fetcher: HTTPFetcher(), locations: 1, logger: Logger(label: "test.loader"))
        var sink = Collected()
        let outcome = await loader.load(
            Self.request(stream.segment(3, rep: "0", ["trickle_200-100"])), into: &sink,
            context: Self.context(abandon: true))
        guard case .abandoned(let bytes, let seconds) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(sink.bytes.isEmpty && seconds < 2, "\(bytes) bytes in \(seconds) s, \(sink.bytes.count) handed on")
    }

    @Test("a live segment that is not there (404) is asked for again until it is late, then skipped with its status")
    func aMissingSegmentIsSkippedOnceLate() async throws {
        let stream = try await PinnedStream()
        let loader = SegmentLoader(fetcher: HTTPFetcher(), locations: 1, logger: Logger(label: "test.loader"))
        var sink = Collected()
        let began = Monotonic.now()
        let outcome = await loader.load(
            Self.request(stream.segment(999_999, rep: "0", [])), into: &sink, context: Self.context(lateAfter: 1))
        let seconds = Monotonic.now() - began
        // Asked again (every 0.15–0.3 s) until late at 1 s, then given up: not before, and not
        // much after (a try under way when it became late; beside other suites a 404 on loopback
        // was seen to take 0.5 s).
        #expect(sink.tries >= 2 && seconds >= 1 && seconds < 3, "\(sink.tries) tries in \(seconds) s")
        guard case .skipped(let error, let partial) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        #expect(error.status == 404 && !partial && sink.bytes.isEmpty, "\(error)")
    }

    @Test("a live segment the server does not answer is given up when it becomes late, not at its first-byte deadline")
    func anUnansweredSegmentIsGivenUpOnceLate() async throws {
        let stream = try await PinnedStream()
        let loader = SegmentLoader(fetcher: HTTPFetcher(), locations: 1, logger: Logger(label: "test.loader"))
        var sink = Collected()
        let began = Monotonic.now()
        // `silent_100`: the request accepted, then no answer (not even the head) for 120 s. With
        // 8 s of buffer a try waits up to 3 s for the head; the segment is late after 0.3 s.
        let outcome = await loader.load(
            Self.request(stream.segment(7, rep: "0", ["silent_100"])), into: &sink,
            context: Self.context(lateAfter: 0.3))
        let seconds = Monotonic.now() - began
        guard case .skipped(let error, let partial) = outcome else {
            Issue.record("\(outcome)")
            return
        }
        // Given up by the late check (its reason, which the old code, ending at the first-byte
        // deadline after 3.05 s, never gave), within a tick or so of lateness: alone in
        // 0.35–0.42 s. (The suite runs one test at a time since 2026-11-28: among the parallel
        // suites the starved pool delayed the check's tick by up to 2.35 s.)
        #expect(seconds >= 0.3 && seconds < 2 && sink.tries == 1, "\(sink.tries) tries in \(seconds) s")
        #expect(
            error.code == .timeout && error.message.contains("before it was late") && !partial
                && sink.bytes.isEmpty, "\(error)")
    }
}
