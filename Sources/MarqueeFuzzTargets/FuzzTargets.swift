import Foundation
import Marquee
import MarqueeSignage
import MarqueeStreaming
import MarqueeVenue

// The fuzz targets of the parsers that read what a server sends (issue #14): libFuzzer runs them
// (Sources/MarqueeFuzz, scripts/fuzz, docs/testing.md "Fuzzing"), and the test suite's fuzz smoke
// (FuzzSmokeTests) runs them over seeded mutations of the seed corpora in CI.
//
// A parse that throws is an answer; a trap (precondition, overflow, index out of range), an
// ASan report, a time-out or running out of memory is a bug. Each target also does what the
// player does next with a parsed value (segment timelines of a manifest, the events of a cue),
// where hostile numbers reach arithmetic.

/// What the fuzzer feeds.
public enum FuzzTarget: String, CaseIterable, Sendable {
    /// `MPDParser.parse`, then every representation's timeline and the period's events.
    case mpd
    /// `HLSPlaylist.parse`, then the anchor and the presentation (timelines) the player makes of it.
    case hls
    /// `SpliceInfo(bytes:)` and the timed event of the cue.
    case scte35
    /// `EventMessageBox(body:)` and `EventMessageScanner.feed` over the input in chunks.
    case emsg
    /// `MarqueeConfig.parse` and the options made of it.
    case config
    /// `Schedule(json:)`, then a day of its timeline, its hour's chunks and an hour of plays.
    case schedule
    /// The venue proxy's `ManifestRewriter` (first byte `h`: an HLS playlist, else a DASH MPD),
    /// as answered where asked and after a redirect.
    case rewrite
    /// The small readers: ISO 8601 durations, xs:dateTime, HTTP dates, segment shape,
    /// transport stream timestamps, fMP4 decode time, segment template expansion.
    case misc

    /// Feeds `bytes` to the target: parse, then what the player does with what was parsed.
    /// Returns normally for any input; a trap, a sanitizer report or a hang is a bug.
    public func run(_ bytes: [UInt8]) {
        switch self {
        case .mpd: fuzzMPD(bytes)
        case .hls: fuzzHLS(bytes)
        case .scte35: fuzzSCTE35(bytes)
        case .emsg: fuzzEventMessage(bytes)
        case .config: fuzzConfig(bytes)
        case .schedule: fuzzSchedule(bytes)
        case .rewrite: fuzzRewrite(bytes)
        case .misc: fuzzMisc(bytes)
        }
    }
}

/// Some fixed server time, after every date the seeds carry.
private let now = Date(timeIntervalSince1970: 1_800_000_000)
private let manifestURL = URL(string: "https://cdn.example/live/stream/manifest.mpd")!

private func fuzzMPD(_ bytes: [UInt8]) {
    guard let mpd = try? MPDParser().parse(Data(bytes)) else { return }
    walk(mpd)
}

private func fuzzHLS(_ bytes: [UInt8]) {
    let url = URL(string: "https://cdn.example/live/stream/index.m3u8")!
    guard let playlist = try? HLSPlaylist.parse(String(decoding: bytes, as: UTF8.self), url: url) else { return }
    switch playlist {
    case .multivariant(let master):
        _ = HLSPresentation.ladder(master)
    case .media(var media):
        if (try? HLSLiveAnchor.isNeeded(for: media)) == true {
            var anchor = HLSLiveAnchor()
            media = anchor.place(media, answeredAt: now.timeIntervalSince1970)
            _ = anchor.place(media, answeredAt: now.timeIntervalSince1970 + media.targetDuration)
        }
        if let mpd = try? HLSPresentation.mpd(video: media, audio: media, variant: nil) { walk(mpd) }
    }
}

/// What a session does with a manifest: each representation's timeline from the live edge (or
/// the start) for a few segments, and the events of each period.
private func walk(_ mpd: MPD) {
    let edge = mpd.availabilityStartTime.map { now.timeIntervalSince($0) }
    for (index, period) in mpd.periods.prefix(4).enumerated() {
        for stream in period.eventStreams.prefix(4) {
            _ = EventScheme.events(of: stream, periodStart: period.start ?? 0)
        }
        for set in period.adaptationSets.prefix(4) {
            for rep in set.representations.prefix(4) {
                guard
                    let timeline = try? RepresentationTimeline(
                        mpd: mpd, period: index, adaptationSet: set, representation: rep, manifestURL: manifestURL,
                        liveEdge: edge)
                else { continue }
                _ = timeline.initializationURL
                _ = timeline.lastListedSegment
                var segment =
                    mpd.isLive ? timeline.liveEdgeSegment(at: now) : timeline.segment(containing: timeline.periodStart)
                for _ in 0..<3 {
                    guard let s = segment else { break }
                    _ = timeline.availabilityStart(of: s)
                    _ = timeline.segment(following: s.end)
                    segment = timeline.segment(after: s)
                }
            }
        }
    }
}

private func fuzzSCTE35(_ bytes: [UInt8]) {
    _ = try? SpliceInfo(bytes: bytes)
    _ = try? EventScheme.event(
        scheme: EventScheme.scte35Binary, value: nil, time: 10, duration: nil, id: nil, message: bytes, origin: .inband)
}

private func fuzzEventMessage(_ bytes: [UInt8]) {
    if let box = try? EventMessageBox(body: bytes) { _ = try? box.timedEvent(segmentStart: 100, ptsOffset: -5) }
    // The same bytes as a segment streaming in, in chunks whose sizes the first byte picks.
    var scanner = EventMessageScanner()
    let step = 1 + Int(bytes.first ?? 0) % 64
    var bodies: [[UInt8]] = []
    bytes.withUnsafeBytes { raw in
        var at = 0
        while at < raw.count {
            let end = min(raw.count, at + step)
            bodies += scanner.feed(UnsafeRawBufferPointer(rebasing: raw[at..<end]))
            at = end
        }
    }
    for body in bodies {
        if let box = try? EventMessageBox(body: body) { _ = try? box.timedEvent(segmentStart: 0, ptsOffset: 0) }
    }
}

private func fuzzConfig(_ bytes: [UInt8]) {
    guard let config = try? MarqueeConfig.parse(Data(bytes)) else { return }
    _ = PlayerOptions(config: config)
}

private func fuzzRewrite(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let text = String(decoding: bytes.dropFirst(), as: UTF8.self)
    let requested = URL(string: "http://cdn.example:8080/live/ch1/master.m3u8")!
    for answered in [requested, URL(string: "https://edge.example/x/y/master.m3u8")!] {
        _ = ManifestRewriter(
            requested: requested, answered: answered, allows: { ($0.host ?? "").hasSuffix(".example") }
        )
        .rewrite(text, kind: first == UInt8(ascii: "h") ? .hls : .dash)
    }
}

private func fuzzSchedule(_ bytes: [UInt8]) {
    guard let schedule = try? Schedule(json: Data(bytes)) else { return }
    _ = schedule.hourChunks
    _ = schedule.timeline(from: now, to: now.addingTimeInterval(86_400))
    _ = schedule.entry(at: now)
    _ = schedule.plays(from: now, to: now.addingTimeInterval(3600))
}

private func fuzzMisc(_ bytes: [UInt8]) {
    guard let selector = bytes.first else { return }
    let rest = Array(bytes.dropFirst())
    let text = String(decoding: rest, as: UTF8.self)
    switch selector % 8 {
    case 0:
        if let seconds = ISO8601Duration.seconds(text), seconds.magnitude < 1e15 { _ = ISO8601Duration.string(seconds) }
    case 1:
        if let date = XSDateTime.date(text) { _ = XSDateTime.string(date) }
    case 2:
        if let date = HTTPDate.parse(text) { _ = HTTPDate.string(date) }
    case 3:
        _ = SegmentShape.problem(rest, transportStream: false)
        _ = SegmentShape.problem(rest, transportStream: true)
    case 4:
        _ = TransportStreamTimestamps.firstPTS(rest)
        let delta = rest.prefix(8).reduce(Int64(0)) { $0 << 8 | Int64($1) }
        _ = TransportStreamTimestamps.shifted(rest, by: delta)
    case 5:
        // init segment, then the media segment: the first two bytes say where the split is
        let split = rest.count < 2 ? 0 : min(rest.count, 2 + (Int(rest[0]) << 8 | Int(rest[1])))
        _ = FragmentTime.firstDecodeTime(segment: rest[split...], initSegment: rest[min(2, split)..<split])
    case 6:
        _ = SegmentTemplateExpander.expand(
            text, representationID: "v1", bandwidth: 2_000_000, number: 12_345, time: 90_000)
    default:
        _ = try? SpliceInfo(bytes: rest)
    }
}
