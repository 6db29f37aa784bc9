import Foundation
import MarqueeStreaming

/// How upstream URLs appear on the proxy: `/u/<scheme>/<authority><path>[?query]`. The path is
/// kept as the upstream wrote it (percent-encoding untouched), so a relative reference in a
/// manifest resolves on the proxy as it would upstream.
enum ProxyPath {
    static let prefix = "/u/"

    /// The proxy path of `url` (nil: not http(s), or no host).
    static func path(for url: URL) -> String? {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let components = URLComponents(url: url, resolvingAgainstBaseURL: true),
            let host = components.percentEncodedHost, !host.isEmpty,
            components.percentEncodedUser == nil, components.percentEncodedPassword == nil
        else { return nil }
        let bracketed = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        let authority = bracketed.lowercased() + (components.port.map { ":\($0)" } ?? "")
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        return prefix + scheme + "/" + authority + path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
    }
}

/// Why the proxy will not fetch what a path names: the status the asker gets and why.
struct ProxyRefusal: Error, Sendable {
    var status: Int
    var reason: String
    static func malformed(_ reason: String) -> ProxyRefusal { ProxyRefusal(status: 400, reason: reason) }
    static func forbidden(_ reason: String) -> ProxyRefusal { ProxyRefusal(status: 403, reason: reason) }
}

/// The host of an upstream: a name (lower case, letters, digits and hyphens in dot-separated
/// labels) or an address.
enum UpstreamHost: Hashable, Sendable, CustomStringConvertible {
    case name(String)
    case address(IPAddress)

    /// Parses `text` strictly: anything the HTTP client or the resolver could read differently
    /// (user-info, escapes, a backslash, an address in a non-canonical form) is refused.
    init(parsing text: Substring) throws(ProxyRefusal) {
        if text.hasPrefix("[") {
            guard text.hasSuffix("]"), let address = IPAddress(String(text)), case .v6 = address else {
                throw .malformed("\"\(text.prefix(80))\" is not an IPv6 address")
            }
            self = .address(address)
            return
        }
        if let address = IPAddress(String(text)) {
            self = .address(address)
            return
        }
        let name = text.lowercased()
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        guard !name.isEmpty, name.utf8.count <= 253,
            labels.allSatisfy({ label in
                (1...63).contains(label.utf8.count) && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.utf8.allSatisfy { (0x61...0x7a).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2d }
            }),
            !IPAddress.isAmbiguous(name), !(labels.last?.allSatisfy(\.isNumber) ?? true)
        else { throw .malformed("\"\(text.prefix(80))\" is not a host name") }
        self = .name(name)
    }

    var description: String {
        switch self {
        case .name(let n): n
        case .address(.v6(let b)): "[\(IPAddress.v6(b))]"
        case .address(let a): a.description
        }
    }
}

/// An upstream URL named by a proxy path, parsed and checked before anything is decided on
/// it: the allowlist compares this, never the path's text.
struct UpstreamTarget: Hashable, Sendable {
    var scheme: String
    var host: UpstreamHost
    /// Explicit: 80 or 443 when the path names none.
    var port: Int
    /// The path and query as given (percent-encoded), starting with "/".
    var pathAndQuery: String
    /// The URL fetched: made from the parts above, not from the path's text.
    var url: URL

    static func defaultPort(_ scheme: String) -> Int { scheme == "https" ? 443 : 80 }

    /// The authority as a proxy path spells it (the port only when it is not the default).
    var authority: String { host.description + (port == Self.defaultPort(scheme) ? "" : ":\(port)") }

    /// The target of `/u/<scheme>/<authority><path>` (`rest` is what follows `/u/`).
    init(proxyPath rest: Substring, query: String?) throws(ProxyRefusal) {
        let parts = rest.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, parts[0] == "http" || parts[0] == "https", !parts[1].isEmpty else {
            throw .malformed("not a proxy path (try /u/<scheme>/<host[:port]>/<path>)")
        }
        scheme = String(parts[0])
        let authority = parts[1]
        // user-info, escapes, fragments and backslashes are how one authority is read as another
        guard authority.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && !"@%#\\?/ ".utf8.contains($0) }) else {
            throw .malformed("the authority \"\(authority.prefix(80))\" holds a character that is not allowed there")
        }
        var hostText = authority
        var portValue: Int?
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            let digits = authority[authority.index(after: colon)...]
            guard !digits.isEmpty, digits.count <= 5, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                let p = Int(digits), (1...65535).contains(p)
            else {
                throw .malformed("the port in \"\(authority.prefix(80))\" is not a number from 1 to 65535")
            }
            hostText = authority[..<colon]
            portValue = p
        }
        host = try UpstreamHost(parsing: hostText)
        port = portValue ?? Self.defaultPort(scheme)
        let path = parts.count == 3 ? "/" + parts[2] : "/"
        try Self.check(path, what: "path", allowing: "/")
        for segment in path.split(separator: "/") {
            let decoded = segment.replacingOccurrences(of: "%2e", with: ".", options: .caseInsensitive)
            guard decoded != ".", decoded != ".." else { throw .malformed("a path with a dot segment") }
        }
        if let query { try Self.check(query, what: "query", allowing: "/?") }
        pathAndQuery = path + (query.map { "?" + $0 } ?? "")
        var components = URLComponents()
        components.scheme = scheme
        switch host {
        case .name(let n): components.host = n
        case .address(.v6(let b)): components.percentEncodedHost = "[\(IPAddress.v6(b))]"
        case .address(let a): components.host = a.description
        }
        components.port = portValue
        components.percentEncodedPath = path
        components.percentEncodedQuery = query
        // The URL read back must name the same host and port, or the client would connect
        // elsewhere than what was checked.
        guard let url = components.url, let back = URLComponents(url: url, resolvingAgainstBaseURL: false),
            back.port == portValue, back.user == nil, let backHost = back.percentEncodedHost,
            (try? UpstreamHost(parsing: Substring(backHost))) == host
        else { throw .malformed("the URL of \"\(rest.prefix(120))\" does not read back as it was checked") }
        self.url = url
    }

    /// The target of an absolute upstream URL (nil: not http(s) or not a valid target).
    init?(url: URL) {
        guard let path = ProxyPath.path(for: url) else { return nil }
        let split = path.dropFirst(ProxyPath.prefix.count).split(
            separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        guard let target = try? UpstreamTarget(proxyPath: split[0], query: split.count > 1 ? String(split[1]) : nil)
        else { return nil }
        self = target
    }

    /// The proxy path of this target.
    var proxyPath: String { ProxyPath.prefix + scheme + "/" + authority + pathAndQuery }

    /// Only RFC 3986's unreserved, sub-delims, ":", "@", `extra` and well-formed %XX.
    private static func check(_ text: String, what: String, allowing extra: String) throws(ProxyRefusal) {
        let bytes = Array(text.utf8)
        var i = 0
        let allowed = Set("-._~!$&'()*+,;=:@".utf8).union(extra.utf8)
        while i < bytes.count {
            let c = bytes[i]
            if c == 0x25 {
                guard i + 2 < bytes.count, bytes[i + 1].isHexDigit, bytes[i + 2].isHexDigit else {
                    throw .malformed("a bad escape in the \(what)")
                }
                i += 3
                continue
            }
            guard
                (0x30...0x39).contains(c) || (0x41...0x5a).contains(c) || (0x61...0x7a).contains(c)
                    || allowed.contains(c)
            else {
                throw .malformed("the \(what) holds a character that is not allowed in a URL (byte \(c))")
            }
            i += 1
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (0x30...0x39).contains(self) || (0x41...0x46).contains(self) || (0x61...0x66).contains(self)
    }
}

/// One entry of the proxy's allowlist: `host`, `host:port`, `[v6]:port`, `*.domain[:port]`.
/// A host without a port allows the schemes' default ports (80 for http, 443 for https) only.
struct UpstreamEntry: Hashable, Sendable {
    enum Match: Hashable, Sendable {
        case exact(UpstreamHost)
        /// `*.example.com`: any name ending in `.example.com` (never an address).
        case subdomains(of: String)
    }
    var match: Match
    var port: Int?
    /// Added for a source the player on this box plays (``VenueProxy/addUpstream(_:)``): its
    /// name may resolve to a local address (the box fetched it anyway). A configured name must
    /// resolve to public addresses: a venue's private origin is listed by its address.
    var ownSource = false

    init(exact host: UpstreamHost, port: Int?) {
        match = .exact(host)
        self.port = port
    }

    init(parsing text: String) throws(ProxyRefusal) {
        var t = Substring(text.trimmingCharacters(in: .whitespaces).lowercased())
        var wildcard = false
        if t.hasPrefix("*.") {
            wildcard = true
            t = t.dropFirst(2)
        }
        guard !t.isEmpty, t.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7f && !"@%#\\?/*".utf8.contains($0) }) else {
            throw .malformed("\"\(text)\" is not a host or host:port (a \"*.\" prefix may take subdomains)")
        }
        var hostText = t
        if let colon = t.lastIndex(of: ":"), !t.hasSuffix("]"), t.hasPrefix("[") || t.firstIndex(of: ":") == colon {
            guard let p = Int(t[t.index(after: colon)...]), (1...65535).contains(p) else {
                throw .malformed("\"\(text)\" has a bad port")
            }
            port = p
            hostText = t[..<colon]
        }
        let host = try UpstreamHost(parsing: hostText)
        if wildcard {
            guard case .name(let n) = host, n.contains(".") else {
                throw .malformed("\"\(text)\": a \"*.\" prefix takes a domain with a dot")
            }
            match = .subdomains(of: n)
        } else {
            match = .exact(host)
        }
    }

    func matches(_ target: UpstreamTarget) -> Bool {
        guard target.port == (port ?? UpstreamTarget.defaultPort(target.scheme)) else { return false }
        switch (match, target.host) {
        case (.exact(let h), let t): return h == t
        case (.subdomains(let domain), .name(let n)): return n.hasSuffix("." + domain)
        case (.subdomains, .address): return false
        }
    }
}
