import Foundation
import Testing

@testable import MarqueeStreaming

/// Inputs the fuzz targets (scripts/fuzz, README "Fuzzing") found crashing the player, each
/// now a typed error or a sound answer. The raw inputs are also in fuzz/regressions/<target>/,
/// replayed with every fuzz run.
@Suite struct FuzzRegressionTests {
    let url = URL(string: "https://cdn.example/live/index.m3u8")!

    func media(_ text: String) throws -> HLSMediaPlaylist {
        guard case .media(let p) = try HLSPlaylist.parse(text, url: url) else { throw ManifestError(.notAManifest, "not a media playlist") }
        return p
    }

    /// mpd: FoundationXML's parser trapped on an element or attribute name that is not UTF-8.
    @Test(arguments: [
        "<MPD><Se\u{FF}g/></MPD>", "<MPD a\u{FF}b=\"1\"/>", "<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<MPD><Se\u{FF}\u{FF}g/></MPD>",
    ])
    func mpdNameNotUTF8(text: String) {
        // "\u{FF}" stands for the byte 0xFF, not its UTF-8 encoding.
        let bytes = Data(text.unicodeScalars.map { UInt8(truncatingIfNeeded: $0.value) })
        #expect(throws: ManifestError(.malformed, "not well-formed XML at line 0, column 0: the document is not UTF-8 text")) {
            try MPDParser().parse(bytes)
        }
    }

    /// mpd: FoundationXML's parser read a processing instruction without data (`<?x?>`) from a
    /// NULL pointer; such instructions (ignored) no longer reach it.
    @Test func mpdInstructionWithoutData() throws {
        let mpd = try MPDParser().parse(Data("<?x?>\n<MPD type=\"static\"><?a?><Period/></MPD>".utf8))
        #expect(mpd.periods.count == 1)
        #expect(throws: ManifestError.self) { try MPDParser().parse(Data("<?xml?><MPD/>".utf8)) }
    }
}
