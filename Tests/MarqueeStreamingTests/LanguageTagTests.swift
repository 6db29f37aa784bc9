import MarqueeStreaming
import Testing

@Suite struct LanguageTagTests {
    @Test(arguments: [
        ("fra", "fr", true), ("fre", "fr", true), ("fr-CA", "fr", true), ("FR", "fra", true), ("eng", "en-GB", true),
        ("ger", "de", true), ("deu", "ger", true), ("es", "en", false), ("eng", "fra", false),
        ("x-klingon", "x-klingon", true),
        ("qaa", "qab", false),
    ])
    func languagesMatch(tag: String, wanted: String, same: Bool) {
        #expect(LanguageTag.matches(tag, wanted) == same, "\(tag) vs \(wanted)")
    }

    @Test func noTagNeverMatches() {
        #expect(!LanguageTag.matches(nil, "en"))
        #expect(!LanguageTag.matches("en", ""))
    }
}
