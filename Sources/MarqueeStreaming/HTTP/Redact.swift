import Foundation

/// URLs as logs and messages may show them: a query string often carries a token (a CDN's
/// signed URL, `?token=`), and user-info a password, so neither is ever written out.
package enum Redact {
    /// `url` without user-info, its query replaced by `?…`, its fragment dropped.
    package static func url(_ url: URL) -> String {
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: true) else { return "(a URL)" }
        components.user = nil
        components.password = nil
        components.fragment = nil
        let hadQuery = components.percentEncodedQuery != nil
        components.percentEncodedQuery = nil
        return (components.string ?? "(a URL)") + (hadQuery ? "?…" : "")
    }

    /// `text` read as a URL, redacted as ``url(_:)``; text that is not a URL is kept only up to
    /// its first `?`.
    package static func url(_ text: String) -> String {
        if let parsed = URL(string: text), parsed.scheme != nil { return url(parsed) }
        guard let q = text.firstIndex(of: "?") else { return text }
        return String(text[..<q]) + "?…"
    }
}
