import Foundation

/// Rewrites the URLs of an HLS playlist or a DASH MPD that came through the proxy so that a
/// player follows them through it too: absolute URLs to served upstream hosts and root-relative
/// ones become proxy paths; relative ones are left alone (the proxy path mirrors the upstream's),
/// but for an answer that came from elsewhere after a redirect, where they are anchored to the
/// place it came from. URLs to hosts not served are left as they are (the player goes there
/// directly). `UTCTiming` values are never rewritten: a clock is read where the packager says.
public struct ManifestRewriter {
    /// The URL asked for, and where the answer came from.
    public var requested: URL
    public var answered: URL
    /// Whether an upstream URL is served.
    public var allows: (URL) -> Bool

    public init(requested: URL, answered: URL, allows: @escaping (URL) -> Bool) {
        self.requested = requested
        self.answered = answered
        self.allows = allows
    }

    public enum Kind: Sendable { case hls, dash }

    static func kind(path: String, contentType: String?) -> Kind? {
        let type = (contentType ?? "").lowercased()
        let p = path.lowercased()
        if type.contains("mpegurl") || p.hasSuffix(".m3u8") || p.hasSuffix(".m3u") { return .hls }
        if type.contains("dash+xml") || p.hasSuffix(".mpd") { return .dash }
        return nil
    }

    private var redirected: Bool {
        directory(of: requested) != directory(of: answered)
    }

    private func directory(of url: URL) -> String {
        guard let path = ProxyPath.path(for: url) else { return "" }
        let noQuery = path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? path
        return String(noQuery[...(noQuery.lastIndex(of: "/") ?? noQuery.startIndex)])
    }

    /// What `reference` becomes (nil: unchanged).
    func map(_ reference: String, anchorRelative: Bool) -> String? {
        let r = reference.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !r.isEmpty, !r.hasPrefix(ProxyPath.prefix) else { return nil }
        let lower = r.lowercased()
        if lower.hasPrefix("http://") || lower.hasPrefix("https://") || r.hasPrefix("//") || r.hasPrefix("/") {
            guard let url = URL(string: r, relativeTo: answered)?.absoluteURL, allows(url) else { return nil }
            return ProxyPath.path(for: url)
        }
        if r.contains(":") && !r.contains("/") && r.firstIndex(of: ":")! < (r.firstIndex(of: "?") ?? r.endIndex) {
            return nil
        }  // another scheme (data:, skd:)
        guard anchorRelative, redirected, allows(answered) else { return nil }
        return directory(of: answered) + r
    }

    static func authority(_ url: URL) -> String? {
        guard let host = url.host else { return nil }
        return host.lowercased() + (url.port.map { ":\($0)" } ?? "")
    }

    /// `text` with its URLs leading through the proxy.
    public func rewrite(_ text: String, kind: Kind) -> String {
        switch kind {
        case .hls: rewriteHLS(text)
        case .dash: rewriteDASH(text)
        }
    }

    private func rewriteHLS(_ text: String) -> String {
        var out: [Substring] = []
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        out.reserveCapacity(lines.count)
        for line in lines {
            let trimmed = line.hasSuffix("\r") ? line.dropLast() : line
            if trimmed.hasPrefix("#") {
                guard trimmed.contains("URI=\"") else {
                    out.append(line)
                    continue
                }
                var result = ""
                var rest = Substring(trimmed)
                while let range = rest.range(of: "URI=\"") {
                    result += rest[..<range.upperBound]
                    rest = rest[range.upperBound...]
                    guard let close = rest.firstIndex(of: "\"") else { break }
                    let value = String(rest[..<close])
                    result += map(value, anchorRelative: true) ?? value
                    rest = rest[close...]
                }
                result += rest
                out.append(Substring(result + (line.hasSuffix("\r") ? "\r" : "")))
            } else if let mapped = map(String(trimmed), anchorRelative: true) {
                out.append(Substring(mapped + (line.hasSuffix("\r") ? "\r" : "")))
            } else {
                out.append(line)
            }
        }
        return out.joined(separator: "\n")
    }

    private func rewriteDASH(_ text: String) -> String {
        var result = text
        // Element texts: <BaseURL ...>u</BaseURL>, <Location>u</Location>, <PatchLocation ...>u</PatchLocation>.
        let firstPeriod = text.range(of: "<Period")?.lowerBound ?? text.endIndex
        var mpdLevelBase = false
        for element in ["BaseURL", "Location", "PatchLocation"] {
            result = replaceElementTexts(result, element: element) { value, offset in
                let mpdLevel = element == "BaseURL" && offset < text.distance(from: text.startIndex, to: firstPeriod)
                if mpdLevel { mpdLevelBase = true }
                return map(value, anchorRelative: mpdLevel || element != "BaseURL")
            }
        }
        for attribute in ["media", "initialization", "sourceURL", "index"] {
            result = replaceAttributes(result, attribute: attribute) { map($0, anchorRelative: false) }
        }
        if redirected, !mpdLevelBase, allows(answered),
            let open = result.range(of: "<MPD"), let end = result[open.upperBound...].firstIndex(of: ">")
        {
            result.insert(contentsOf: "<BaseURL>\(directory(of: answered))</BaseURL>", at: result.index(after: end))
        }
        return result
    }

    /// Replaces the text of each `<element ...>text</element>` with `transform(text, offset)` when it returns one.
    private func replaceElementTexts(_ text: String, element: String, _ transform: (String, Int) -> String?) -> String {
        var out = ""
        var rest = Substring(text)
        var consumed = 0
        while let open = rest.range(of: "<\(element)") {
            let after = rest[open.upperBound...]
            guard let first = after.first,
                first == ">" || first == " " || first == "\t" || first == "\n" || first == "\r",
                let gt = after.firstIndex(of: ">"), gt == after.startIndex || after[after.index(before: gt)] != "/",
                let close = rest[gt...].range(of: "</\(element)>")
            else {
                out += rest[..<open.upperBound]
                consumed += rest.distance(from: rest.startIndex, to: open.upperBound)
                rest = rest[open.upperBound...]
                continue
            }
            let valueStart = rest.index(after: gt)
            out += rest[..<valueStart]
            let value = String(rest[valueStart..<close.lowerBound])
            out += transform(value, consumed + rest.distance(from: rest.startIndex, to: open.lowerBound)) ?? value
            out += rest[close.lowerBound..<close.upperBound]
            consumed += rest.distance(from: rest.startIndex, to: close.upperBound)
            rest = rest[close.upperBound...]
        }
        return out + rest
    }

    /// Replaces each ` attribute="value"` (or single-quoted) with `transform(value)` when it returns one.
    private func replaceAttributes(_ text: String, attribute: String, _ transform: (String) -> String?) -> String {
        var out = ""
        var rest = Substring(text)
        while let at = rest.range(of: "\(attribute)=") {
            let before = at.lowerBound == rest.startIndex ? Character(" ") : rest[rest.index(before: at.lowerBound)]
            let after = rest[at.upperBound...]
            guard before.isWhitespace, let quote = after.first, quote == "\"" || quote == "'",
                let close = after.dropFirst().firstIndex(of: quote)
            else {
                out += rest[..<at.upperBound]
                rest = rest[at.upperBound...]
                continue
            }
            let valueStart = after.index(after: after.startIndex)
            out += rest[..<valueStart]
            let value = String(rest[valueStart..<close])
            out += transform(value) ?? value
            rest = rest[close...]
        }
        return out + rest
    }
}
