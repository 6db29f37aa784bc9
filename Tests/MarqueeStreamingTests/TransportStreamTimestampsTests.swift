import Foundation
import MarqueeStreaming
import Testing

/// A transport stream segment is placed on the timeline by its first PTS, read from its first
/// bytes as they arrive: the pictures', not the sound's, which ffmpeg's muxer starts up to an
/// AAC frame (21 ms) away from them, a different amount in each segment. (Two boxes behind one
/// venue proxy, one of which read a first chunk holding only the sound's PES, showed every
/// picture 3.25 ms apart for a whole run.)
@Suite struct TransportStreamTimestampsTests {
    /// ffmpeg's MPEG-TS of `inputs` (lavfi sources, 1 s), its 188-byte packets.
    private func packets(_ inputs: [String], _ codecs: [String]) throws -> [[UInt8]] {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ts-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let out = dir.appendingPathComponent("out.ts")
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/ffmpeg")
        ffmpeg.arguments =
            ["-v", "error", "-nostdin"] + inputs.flatMap { ["-f", "lavfi", "-i", $0] } + codecs + [
                "-t", "1", "-f", "mpegts", out.path,
            ]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)
        let bytes = [UInt8](try Data(contentsOf: out))
        return stride(from: 0, to: bytes.count - 187, by: 188).map { Array(bytes[$0..<$0 + 188]) }
    }

    /// The stream id of the PES a packet starts (nil: none starts in it).
    private func pesStart(_ p: [UInt8]) -> UInt8? {
        guard p[1] & 0x40 != 0, p[3] & 0x10 != 0 else { return nil }
        let start = p[3] & 0x20 != 0 ? 5 + Int(p[4]) : 4
        guard start + 4 <= 188, p[start] == 0, p[start + 1] == 0, p[start + 2] == 1 else { return nil }
        return p[start + 3]
    }

    @Test func theFirstBytesArePlacedByThePicturesNotTheSound() throws {
        let ts = try packets(
            ["testsrc2=size=320x180:rate=30", "sine=frequency=440:sample_rate=48000"],
            ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"])
        let tables = Array(ts.prefix { pesStart($0) == nil })  // PAT, PMT (and ffmpeg's SDT)
        let audio = try #require(ts.first { pesStart($0).map { (0xC0...0xDF).contains($0) } ?? false })
        let video = try #require(ts.first { pesStart($0).map { (0xE0...0xEF).contains($0) } ?? false })
        let soundFirst = (tables + [audio]).flatMap { $0 }
        let videoPTS = try #require(TransportStreamTimestamps.firstPTS(ts.flatMap { $0 }))
        let audioPTS = try #require(TransportStreamTimestamps.firstPTS(soundFirst))
        try #require(audioPTS != videoPTS)
        // First bytes with the sound's PES only: the program has pictures, so not yet; the
        // pictures' PES then: theirs. Whole (the segment's end), the sound's is taken.
        #expect(TransportStreamTimestamps.firstPTS(soundFirst, partial: true) == nil)
        #expect(TransportStreamTimestamps.firstPTS(soundFirst + video, partial: true) == videoPTS)
        // Before the program map, nothing is known of the program: not yet either.
        #expect(TransportStreamTimestamps.firstPTS(audio, partial: true) == nil)
    }

    @Test func aProgramOfSoundAloneIsPlacedByItsFirstBytes() throws {
        let ts = try packets(["sine=frequency=440:sample_rate=48000"], ["-c:a", "aac"])
        let tables = Array(ts.prefix { pesStart($0) == nil })
        let audio = try #require(ts.first { pesStart($0).map { (0xC0...0xDF).contains($0) } ?? false })
        let pts = try #require(TransportStreamTimestamps.firstPTS(ts.flatMap { $0 }))
        #expect(TransportStreamTimestamps.firstPTS((tables + [audio]).flatMap { $0 }, partial: true) == pts)
    }
}
