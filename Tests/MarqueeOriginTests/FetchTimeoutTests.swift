import Foundation
import MarqueeStreaming
import Testing

@testable import MarqueeOrigin

/// The player's fetcher against the origin's network faults: a server that never answers, a body
/// that stops half way, a body that crawls: each request is given up by the deadline meant for
/// it (the first byte, a byte at all, the whole), not minutes later.
@Suite("HTTPFetcher deadlines against stalled, trickled and hung responses")
struct FetchTimeoutTests {
    /// Seconds `body` took, what it threw, and how long this process was held back meanwhile
    /// (``measuringHeldBack``): each deadline's upper bound adds that time, as the fetcher's
    /// timers and the origin are tasks of this process, beside the parallel suites (a 1 s
    /// first-byte deadline was judged after 2.82 s there).
    func timed(_ body: () async throws(FetchError) -> Void) async -> (
        seconds: Double, error: FetchError?, heldBack: Double
    ) {
        let start = Monotonic.now()
        let (error, heldBack) = await measuringHeldBack { () async -> FetchError? in
            do throws(FetchError) {
                try await body()
                return nil
            } catch {
                return error
            }
        }
        return (Monotonic.now() - start, error, heldBack)
    }

    @Test("a body that stops half way: given up after `idle`, or the default client's idle timeout")
    func stalledBody() async throws {
        let stream = try await PinnedStream()
        let fetcher = HTTPFetcher()
        var received = 0
        let withIdle = await timed { () async throws(FetchError) in
            _ = try await fetcher.stream(
                stream.segment(3, rep: "0", ["stall_100"]), timeout: .seconds(30), idle: .seconds(1)
            ) { chunk in
                received += chunk.readableBytes
            }
        }
        #expect(withIdle.error?.code == .timeout, "\(String(describing: withIdle.error))")
        #expect(withIdle.seconds > 0.9 && withIdle.seconds < 3 + withIdle.heldBack, "\(withIdle.seconds) s")
        #expect(received > 0, "the first half came")
        let byDefault = await timed { () async throws(FetchError) in
            _ = try await fetcher.get(stream.segment(4, rep: "0", ["stall_100"]), timeout: .seconds(60))
        }
        #expect(byDefault.error?.code == .timeout, "\(String(describing: byDefault.error))")
        let idle = Double(HTTPFetcher.idleTimeout)
        #expect(
            byDefault.seconds > idle - 0.5 && byDefault.seconds < idle + 3 + byDefault.heldBack,
            "\(byDefault.seconds) s (idle timeout \(idle) s)")
    }

    @Test("a trickling body: given up when the whole deadline passes; ticks let the caller give it up sooner")
    func trickledBody() async throws {
        let stream = try await PinnedStream()
        let fetcher = HTTPFetcher()
        // 680 kB at 40 kB/s would take 17 s.
        let whole = await timed { () async throws(FetchError) in
            _ = try await fetcher.get(stream.segment(5, rep: "0", ["trickle_320-100"]), timeout: .seconds(2))
        }
        #expect(whole.error?.code == .timeout, "\(String(describing: whole.error))")
        #expect(whole.seconds > 1.9 && whole.seconds < 3.5 + whole.heldBack, "\(whole.seconds) s")
        var ticks = 0
        let judged = await timed { () async throws(FetchError) in
            _ = try await fetcher.stream(stream.segment(6, rep: "0", ["trickle_320-100"]), timeout: .seconds(20)) { _ in
            } onTick: { () throws(FetchError) in
                ticks += 1
                if ticks == 4 { throw FetchError(.cancelled, url: "", message: "too slow") }
            }
        }
        #expect(
            judged.error?.code == .cancelled && judged.seconds < 2.5 + judged.heldBack,
            "\(String(describing: judged.error)) after \(judged.seconds) s")
    }

    @Test("a server that never answers: given up at the first-byte deadline; a complete answer is untouched")
    func hungServer() async throws {
        let stream = try await PinnedStream()
        let fetcher = HTTPFetcher()
        let hang = "hang_\(Int(now()) - 5)-\(Int(now()) + 60)"
        let hung = await timed { () async throws(FetchError) in
            _ = try await fetcher.get(stream.manifest([hang]), timeout: .seconds(30), firstByte: .seconds(1))
        }
        #expect(hung.error?.code == .timeout, "\(String(describing: hung.error))")
        #expect(
            hung.seconds > 0.9 && hung.seconds < 2.5 + hung.heldBack, "\(hung.seconds) s (held back \(hung.heldBack) s)"
        )
        let fine = try await fetcher.get(stream.segment(7, rep: "0", []), timeout: .seconds(5), firstByte: .seconds(1))
        #expect(fine.status == 200 && fine.body.readableBytes > 100_000)
    }
}
