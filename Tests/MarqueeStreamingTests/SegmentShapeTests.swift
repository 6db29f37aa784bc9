import Foundation
import Testing

@testable import MarqueeStreaming

/// `SegmentShape` on the generated asset's real segments (ffmpeg's fMP4 and MPEG-TS): whole ones
/// pass, the same cut short or replaced by garbage do not, bit errors in the payload pass.
@Suite struct SegmentShapeTests {
    static let assets = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("assets/generated")

    func bytes(_ name: String) throws -> [UInt8] {
        let url = Self.assets.appendingPathComponent(name)
        try #require(FileManager.default.fileExists(atPath: url.path), "run scripts/make-assets")
        return Array(try Data(contentsOf: url))
    }

    @Test(arguments: [("seg-0-3.m4s", false), ("seg-1-3.m4s", false), ("ts/seg-3.ts", true)])
    func wholeCutAndGarbage(name: String, ts: Bool) throws {
        let whole = try bytes(name)
        #expect(SegmentShape.problem(whole, transportStream: ts) == nil)
        let cut = SegmentShape.problem(whole.prefix(whole.count / 2), transportStream: ts)
        #expect(cut?.contains("cut short") == true || (ts && cut != nil), "\(cut ?? "nil")")
        var random = SystemRandomNumberGenerator()
        let garbage = (0..<whole.count).map { _ in UInt8.random(in: 0...255, using: &random) }
        #expect(SegmentShape.problem(garbage, transportStream: ts) != nil)
        var flipped = whole
        flipped[flipped.count - 100] ^= 0x10  // inside the payload (the last mdat / packet)
        #expect(SegmentShape.problem(flipped, transportStream: ts) == nil)
        #expect(SegmentShape.problem([], transportStream: ts) == "empty segment")
    }
}
