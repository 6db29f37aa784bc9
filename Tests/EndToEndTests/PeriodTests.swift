import Foundation
import Marquee
import TestSupport
import Testing

/// Live DASH with a new Period every few seconds (the origin's `periods_`, as the DASH-IF live
/// simulator's: each period lists its own SegmentTemplate with a presentationTimeOffset and a
/// startNumber, and is listed only once it has begun, as after an encoder restart or a splice).
/// Before, the feeders stayed on the period they started in: its template (`$Number$`) went on
/// computing segments past its end, or (SegmentTimeline) they stopped at its end until a reload.
/// The SegmentTimeline case is also a server that lists each segment 1.2 s late (`late_1.2`) but
/// opens each Period on time: the old Period's last segment is listed after the new Period, and
/// was skipped for it (2 s of pictures and 4 s of sound lost at every boundary).
extension LivePlaybackTests {
    @Test(arguments: [["periods_6"], ["periods_6", "segtimeline_1", "late_1.2"]])
    func aNewPeriodEveryFewSecondsPlaysOn(_ options: [String]) async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let late = options.contains("late_1.2")
        let run = try await Self.play(
            origin.manifestURL(asset: "generated", options: options), seconds: 22, audio: { .wav("\($0.path)/out.wav") }
        )
        let frames = run.frames
        // (The late server's start, its raises of the target while the first arrivals are
        // measured, is judged by the late-server tests: here its pictures from 4 s on. A CI
        // lane once lost 0.53 s of them in the first second.)
        let (share, inOrder) = Self.presentedShare(
            late ? frames.filter { $0.wallTime > frames[0].wallTime + 4 } : frames)
        try #require(frames.count > 450, "\(frames.count) pictures")
        // The periods begin at multiples of 6 s of presentation time (the origin's tfdt is it).
        let crossed = Set(frames.map { Int($0.pts / 6) }).count - 1
        #expect(crossed >= 2, "\(crossed) period boundaries crossed")
        let holes = zip(frames, frames.dropFirst()).filter { $1.pts - $0.pts > 0.05 }.map {
            (wall: $0.wallTime, pts: $0.pts, lost: $1.pts - $0.pts)
        }
        #expect(share >= 0.99 && inOrder, "\(share * 100) % of the pictures, in order: \(inOrder); holes \(holes)")
        let pauses = zip(frames, frames.dropFirst()).filter { $1.wallTime - $0.wallTime > 0.1 }.map {
            (from: $0.wallTime, to: $1.wallTime)
        }
        // Only at the start: a raise of the latency target (the feasible latency) jumps, once,
        // or twice for the late server (its first arrivals, then its listing measured).
        let moves = run.timed.compactMap { timed -> String? in
            let at = String(format: "%.2f", timed.time - frames[0].wallTime)
            switch timed.event {
            case .latencyJump(let error): return "\(at) s: jump \(error)"
            case .targetLatencyChanged(let seconds, _): return "\(at) s: target \(seconds)"
            default: return nil
            }
        }
        #expect(
            pauses.count <= (late ? 2 : 1) && pauses.allSatisfy { $0.from < frames[0].wallTime + 3 },
            "pictures paused \(pauses.map { ($0.from - frames[0].wallTime, $0.to - $0.from) }); \(moves)")
        // Latency = wall time of a picture − its presentation time (the origin's AST is 0).
        let settled = frames.filter { $0.wallTime > frames[0].wallTime + 4 }.map { $0.wallTime - $0.pts }
        let spread = (settled.max() ?? 0) - (settled.min() ?? 0)
        #expect(spread < 0.05, "latency \(settled.min() ?? 0)…\(settled.max() ?? 0) s")
        // The sound goes on across the boundaries: no quiet stretch of 20 ms or more but the one
        // of a jump, while the pictures paused too (the wav's sample i is heard at the first
        // picture's wall time + (i − its first sound) / 48 kHz).
        let pcm = try PCM.wav(run.dir.appendingPathComponent("out.wav"))
        let left = pcm.channel(0)
        let start = try #require(pcm.firstSound())
        var quiet: [(from: Double, to: Double)] = []
        var run0 = 0
        for (i, v) in left[start...].enumerated() {
            if abs(v) < 100 {
                run0 += 1
                continue
            }
            if run0 >= 48 * 20 {
                let end = frames[0].wallTime + Double(i) / 48000
                quiet.append((end - Double(run0) / 48000, end))
            }
            run0 = 0
        }
        // (The late server's start: its raises of the target come while the first arrivals are
        // measured, and their sound is judged by the late-server tests; here, from 4 s on.)
        let judged = late ? quiet.filter { $0.from > frames[0].wallTime + 4 } : quiet
        let unexplained = judged.filter { q in !pauses.contains { q.from > $0.from - 0.05 && q.to < $0.to + 0.05 } }
        #expect(unexplained.isEmpty, "quiet stretches (wall time) \(unexplained), the pictures paused \(pauses)")
        #expect(
            !run.events.contains(.stateChanged(.ended))
                && !run.events.contains { if case .error(_, true) = $0 { true } else { false } })
        print(
            String(
                format: """
                    %@: %d pictures, %.1f %% of those due, %d boundaries, latency spread %.1f ms, %d \
                    quiet stretches over 20 ms (%d in a jump)
                    """,
                options.joined(separator: "/"), frames.count, share * 100, crossed, spread * 1000,
                quiet.count, quiet.count - unexplained.count) + "; moves \(moves)")
    }
}

extension LivePlaybackTests {
    /// A packager that restarts and republishes its MPD with a new availabilityStartTime (the
    /// origin's `restart_15`: every 15 s, numbers and times start again). The player reloads the
    /// source when a reloaded MPD's start moves, and holds its latency on the new one; each
    /// restart costs one gap (what the tracks held of the old timeline goes).
    @Test func aPackagerRestartWithANewAvailabilityStartTimeIsFollowed() async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        // Following a restart takes the latency (3 s) plus up to a reload period and the reload:
        // 38 s hold two restarts followed whatever the phase of the first (34 s did not, when
        // the second came 18 s in and was followed 4.1 s later).
        let run = try await Self.play(
            origin.manifestURL(asset: "generated", options: ["restart_15"]), seconds: 38, audio: { _ in .null })
        let frames = run.frames
        try #require(frames.count > 600, "\(frames.count) pictures")
        // wall − pts = the restart's availabilityStartTime (a multiple of 15) + the latency.
        let latency = frames.filter { $0.wallTime > frames[0].wallTime + 3 }.map {
            ($0.wallTime - $0.pts).truncatingRemainder(dividingBy: 15)
        }
        #expect(latency.allSatisfy { abs($0 - 3) < 0.05 }, "latency \(latency.min() ?? 0)…\(latency.max() ?? 0) s")
        let restarts = Set(frames.map { Int(($0.wallTime - $0.pts) / 15) }).count - 1
        #expect(restarts >= 2, "\(restarts) restarts followed")
        let gaps = zip(frames, frames.dropFirst()).map { $1.wallTime - $0.wallTime }.filter { $0 > 0.1 }
        #expect(gaps.count <= restarts && gaps.allSatisfy { $0 < 3.5 }, "gaps \(gaps)")
        #expect(
            !run.events.contains(.stateChanged(.ended))
                && !run.events.contains { if case .error(_, true) = $0 { true } else { false } })
        print(
            String(
                format: "restart_15: %d pictures, %d restarts, gaps %@", frames.count, restarts,
                gaps.map { String(format: "%.2f s", $0) }.joined(separator: ", ")))
    }
}
