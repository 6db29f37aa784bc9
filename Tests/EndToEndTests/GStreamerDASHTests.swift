import Foundation
import Marquee
import MarqueeStreaming
import TestSupport
import Testing

/// Live DASH from GStreamer's `dashsink` (gst-plugins-bad), in its default muxer: MPEG-TS
/// segments (`mimeType="video/mp2t"`), one adaptation set a track, a `SegmentTemplate` of
/// `$Number$` with `duration` in whole seconds and no `timescale`, an `availabilityStartTime`
/// rounded down to the second, and — on a dynamic MPD — a `mediaPresentationDuration` that grows
/// and no `minimumUpdatePeriod`. Started live by the test, served as files by our origin.
extension LivePlaybackTests {
    @Test func gstreamersLiveDASHInTransportStreamSegments() async throws {
        try #require(
            FileManager.default.isExecutableFile(atPath: "/usr/bin/gst-launch-1.0"), "run scripts/setup (GStreamer)")
        let dir = try Tools.tempDirectory("gstdash")
        let origin = try await Self.origin(staticRoot: dir.path)
        defer { Task { await origin.stop() } }
        let pipeline = """
            dashsink name=dash mpd-filename=live.mpd target-duration=2 dynamic=true mpd-root-path=\(dir.path) \
            videotestsrc is-live=true ! video/x-raw,format=I420,width=640,height=360,framerate=30/1 \
            ! x264enc tune=zerolatency speed-preset=ultrafast key-int-max=60 ! h264parse ! queue ! dash.video_0 \
            audiotestsrc is-live=true freq=440 ! audioconvert ! audioresample ! audio/x-raw,rate=48000,channels=2 \
            ! voaacenc ! aacparse ! queue ! dash.audio_0
            """
        let encoder = try Tools.spawn(
            "gst-launch-1.0", ["-q"] + pipeline.split(separator: " ").map(String.init), cwd: dir)
        defer { Tools.stop(encoder) }
        let mpd = dir.appendingPathComponent("live.mpd")
        for _ in 0..<100 where !FileManager.default.fileExists(atPath: dir.appendingPathComponent("video_0_3.ts").path)
        {
            try await Task.sleep(for: .milliseconds(100))
        }
        let text = try String(contentsOf: mpd, encoding: .utf8)
        try #require(text.contains("video/mp2t") && text.contains("type=\"dynamic\""), "\(text)")
        let run = try await Self.play(
            origin.baseURL.appendingPathComponent("static/live.mpd"), seconds: 20,
            audio: { .wav("\($0.path)/out.wav") })

        // Segment n starts (n − 1) × 2 s after the availabilityStartTime (the MPD's, as the
        // player reads it): the picture of PTS p was due then plus p − the first segment's first
        // PTS. Every picture in order, none missing, on that timeline at the target.
        let ast = try #require(MPDParser().parse(Data(text.utf8)).availabilityStartTime).timeIntervalSince1970
        let first = try #require(
            TransportStreamTimestamps.firstPTS(try Data(contentsOf: dir.appendingPathComponent("video_0_1.ts"))))
        let latency = try Self.expectSteadyPlayback(
            run.frames.filter { !$0.still }, made: { ast + $0.pts - Double(first) / 90_000 }, target: 3, segment: 2,
            box: "GStreamer DASH")
        Self.expectHeard440(run.dir.appendingPathComponent("out.wav"))
        #expect(!run.events.contains { if case .error = $0 { true } else { false } }, "\(run.events)")
        print(
            String(
                format:
                    "GStreamer dashsink (MPEG-TS): %d pictures, latency %.3f s on the MPD's timeline (%.1f ms spread)",
                run.frames.count, Stats.median(latency), (latency.max()! - latency.min()!) * 1000))
    }
}
