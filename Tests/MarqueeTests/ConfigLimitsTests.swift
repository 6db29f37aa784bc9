import Foundation
import Testing

@testable import Marquee

/// A remote config is untrusted input: hostile sizes and nesting are typed errors, found before
/// the JSON decoder recurses into them.
@Suite struct ConfigLimitsTests {
    func refusal(_ json: String) -> String? {
        do {
            _ = try MarqueeConfig.parse(Data(json.utf8))
            return nil
        } catch {
            return error.code == .invalidConfig ? error.message : "wrong code \(error.code): \(error.message)"
        }
    }

    @Test func hostileDocumentsAreTypedErrors() {
        let deep =
            "{\"sources\":[\"http://a.test/m.mpd\"],\"x\":" + String(repeating: "[", count: 100_000)
            + String(repeating: "]", count: 100_000) + "}"
        #expect(refusal(deep)?.contains("nested") == true, "\(refusal(deep) ?? "accepted")")
        let big = "{\"sources\":[\"http://a.test/m.mpd\"],\"pad\":\"" + String(repeating: "x", count: 1 << 20) + "\"}"
        #expect(refusal(big)?.contains("bytes") == true, "\(refusal(big) ?? "accepted")")
        let many = "{\"sources\":[" + (0..<40).map { "\"http://a\($0).test/m.mpd\"" }.joined(separator: ",") + "]}"
        #expect(refusal(many)?.contains("sources") == true, "\(refusal(many) ?? "accepted")")
    }

    @Test func bracketsInsideStringsAndModestNestingPass() throws {
        let json = """
            {"sources": ["http://a.test/m.mpd"], "poster": "[[[{{{\\"]]]", "advanced": {"sync": {"targetLatency": 2.5}},
             "future": {"a": {"b": {"c": [[[[[[1]]]]]]}}}}
            """
        let config = try MarqueeConfig.parse(Data(json.utf8))
        #expect(config.settings["advanced.sync.targetLatency"] == .number(2.5) && config.sources.count == 1)
        #expect(MarqueeConfig.nesting(Data(json.utf8), over: 32) == nil)
        #expect(MarqueeConfig.nesting(Data(json.utf8), over: 5) == 6)
    }
}
