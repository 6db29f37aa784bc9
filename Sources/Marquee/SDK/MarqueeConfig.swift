public import Foundation
import MarqueeStreaming

/// A stream's remote configuration: the JSON document
/// ``MarqueeSDK/initialize(streamId:configURL:httpHeaders:security:)`` fetches.
///
/// ```json
/// { "sources": ["https://cdn.example/live/manifest.mpd"], "autoplay": true, "fit": "cover",
///   "muted": false, "poster": "/opt/poster.png",
///   "advanced": { "stall": { "minRecoveryDelay": 10, "maxRecoveryDelay": 90 },
///                 "sync": { "targetLatency": 3 },
///                 "analytics": { "customerId": "c1", "endpoint": "https://stats.example/e" },
///                 "interactive": { "url": "https://app.example/overlay" },
///                 "tls": { "caFile": "/etc/marquee/venue-ca.pem" } } }
/// ```
///
/// Only `sources` is required. Unknown keys are ignored (newer servers, older boxes); a known
/// key with the wrong type or an unusable value is an ``PlayerError/Code-swift.struct/invalidConfig``
/// naming the field's path (`advanced.sync.targetLatency`).
public struct MarqueeConfig: Sendable, Equatable, Decodable {
    /// Manifest URLs, main first, then backups.
    public var sources: [URL]
    /// Whether the app should start playback without a user action (call ``Player/play()`` once
    /// the player is made); nil: not given (false).
    public var autoplay: Bool?
    /// How pictures fit the screen (`"contain"`, `"cover"`, `"fill"`, `"scaledown"`); nil: not
    /// given (contain).
    public var fit: VideoFit?
    /// Whether to start muted (``PlayerOptions/muted``); nil: not given (false).
    public var muted: Bool?
    /// A PNG or JPEG path shown until the first picture (``PlayerOptions/poster``).
    public var poster: String?
    /// The `advanced` object: stall recovery, sync, analytics and interactive settings.
    package var advanced: Advanced?

    /// The config's `advanced` object; every section is optional.
    package struct Advanced: Sendable, Equatable, Decodable {
        /// `advanced.stall`: stall recovery delays.
        package var stall: Stall?
        /// `advanced.sync`: the latency target.
        package var sync: Sync?
        /// `advanced.analytics`: where the app reports to. Carried for the app; the player
        /// sends nothing.
        package var analytics: Analytics?
        /// `advanced.interactive`: an overlay for the app to show. Carried for the app; the
        /// player shows nothing.
        package var interactive: Interactive?
        /// `advanced.tls`: a CA file for the streams' private origins.
        package var tls: TLS?
    }

    /// TLS settings (`advanced.tls`).
    package struct TLS: Sendable, Equatable, Decodable {
        /// A PEM file of CA certificates the player trusts besides the system's for its media
        /// (``DocumentSecurity/caFile``); a local path, so one the operator allowed
        /// (``DocumentSecurity/allowedLocalDirectories``) when the config is fetched.
        package var caFile: String?
    }

    /// Stall recovery: the reload timeout backs off from `minRecoveryDelay` to `maxRecoveryDelay` (s).
    package struct Stall: Sendable, Equatable, Decodable {
        /// The first stall timeout before a reload, seconds, 0 < value ≤ 86400
        /// (``PlayerOptions/minRecoveryDelay``).
        package var minRecoveryDelay: Double?
        /// The longest stall timeout, seconds, at least `minRecoveryDelay` and ≤ 86400
        /// (``PlayerOptions/maxRecoveryDelay``).
        package var maxRecoveryDelay: Double?
    }

    /// Sync between boxes (`advanced.sync`).
    package struct Sync: Sendable, Equatable, Decodable {
        /// Seconds behind live (``PlayerOptions/targetLatency``).
        package var targetLatency: Double?
    }

    /// Analytics settings (`advanced.analytics`), passed through to the app.
    package struct Analytics: Sendable, Equatable, Decodable {
        /// The customer the box's reports are filed under.
        package var customerId: String?
        /// Where reports are sent.
        package var endpoint: URL?
    }

    /// Interactive overlay settings (`advanced.interactive`), passed through to the app.
    package struct Interactive: Sendable, Equatable, Decodable {
        /// The overlay's address.
        package var url: URL?
    }

    /// A bigger document is refused.
    package static let maxBytes = 1 << 20
    /// Arrays and objects nested deeper are refused (the schema is 3 deep; unknown keys may add
    /// some).
    package static let maxDepth = 32
    /// More sources are refused.
    package static let maxSources = 32

    /// Decodes and validates a config document (at most 1 MiB, 32 levels deep).
    public static func parse(_ data: Data) throws(PlayerError) -> MarqueeConfig {
        guard data.count <= maxBytes else {
            throw PlayerError(.invalidConfig, "document of \(data.count) bytes, over \(maxBytes)")
        }
        if let depth = nesting(data, over: maxDepth) {
            throw PlayerError(.invalidConfig, "arrays and objects nested \(depth) deep, over \(maxDepth)")
        }
        let config: MarqueeConfig
        do {
            config = try JSONDecoder().decode(MarqueeConfig.self, from: data)
        } catch let error as DecodingError {
            throw PlayerError(.invalidConfig, Self.describe(error))
        } catch {
            throw PlayerError(.invalidConfig, "\(error)")
        }
        try config.validate()
        return config
    }

    /// The nesting depth of `data`'s arrays and objects once it passes `limit` (brackets inside
    /// strings do not count); nil when it never does. One pass, no recursion.
    static func nesting(_ data: Data, over limit: Int) -> Int? {
        var depth = 0
        var inString = false
        var escaped = false
        for byte in data {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: "\""): inString = true
            case UInt8(ascii: "["), UInt8(ascii: "{"):
                depth += 1
                if depth > limit { return depth }
            case UInt8(ascii: "]"), UInt8(ascii: "}"): depth -= 1
            default: break
            }
        }
        return nil
    }

    func validate() throws(PlayerError) {
        guard !sources.isEmpty else { throw PlayerError(.invalidConfig, "sources: at least one URL is required") }
        guard sources.count <= Self.maxSources else {
            throw PlayerError(.invalidConfig, "sources: \(sources.count) URLs, over \(Self.maxSources)")
        }
        for (i, url) in sources.enumerated() where !["http", "https"].contains(url.scheme?.lowercased() ?? "") {
            throw PlayerError(.invalidConfig, "sources[\(i)]: \"\(Redact.url(url))\" is not an http(s) URL")
        }
        if let t = advanced?.sync?.targetLatency, !(t >= 0 && t <= 300) {
            throw PlayerError(.invalidConfig, "advanced.sync.targetLatency: \(t) s is outside 0…300")
        }
        let stall = advanced?.stall
        for (name, value) in [
            ("minRecoveryDelay", stall?.minRecoveryDelay), ("maxRecoveryDelay", stall?.maxRecoveryDelay),
        ] {
            if let v = value, !(v > 0 && v <= 86_400) {
                throw PlayerError(.invalidConfig, "advanced.stall.\(name): \(v) s is outside 0…86400")
            }
        }
        if let low = stall?.minRecoveryDelay, let high = stall?.maxRecoveryDelay, low > high {
            throw PlayerError(
                .invalidConfig, "advanced.stall: minRecoveryDelay \(low) s is above maxRecoveryDelay \(high) s")
        }
    }

    /// Refuses a config fetched from `document` whose local paths (`poster`,
    /// `advanced.tls.caFile`) are outside `security`'s allowed directories.
    func checkLocalPaths(_ security: DocumentSecurity, document: URL) throws(DocumentRefusal) {
        for (field, value) in [("poster", poster), ("advanced.tls.caFile", advanced?.tls?.caFile)] {
            guard let value else { continue }
            if let url = URL(string: value), let scheme = url.scheme?.lowercased(), scheme != "file" {
                guard scheme == "http" || scheme == "https" else {
                    throw DocumentRefusal(
                        .localPath, url: document.absoluteString,
                        "\(field): \"\(value)\" is neither a path nor an http(s) URL")
                }
                continue
            }
            let path = URL(string: value)?.scheme?.lowercased() == "file" ? URL(string: value)!.path : value
            try security.checkLocal(path: path, field: field, document: document)
        }
    }

    /// `path: what was wrong`, from a decoding error's coding path (the config's, a playlist's).
    package static func describe(_ error: DecodingError) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            keys.reduce("") { text, key in
                if let i = key.intValue { return text + "[\(i)]" }
                return text.isEmpty ? key.stringValue : text + "." + key.stringValue
            }
        }
        switch error {
        case .typeMismatch(let type, let context):
            return "\(path(context.codingPath)): expected \(Self.jsonName(type))"
        case .valueNotFound(let type, let context):
            return "\(path(context.codingPath)): expected \(Self.jsonName(type)), found null"
        case .keyNotFound(let key, let context):
            return "\(path(context.codingPath + [key])): missing"
        case .dataCorrupted(let context):
            let at = path(context.codingPath)
            return at.isEmpty ? "not a JSON object: \(context.debugDescription)" : "\(at): \(context.debugDescription)"
        @unknown default:
            return "\(error)"
        }
    }

    private static func jsonName(_ type: Any.Type) -> String {
        switch type {
        case is Bool.Type: "a boolean"
        case is Double.Type, is Int.Type: "a number"
        case is String.Type, is URL.Type, is VideoFit.Type: "a string"
        case is [URL].Type: "an array of URL strings"
        default: "\(type)".hasPrefix("Array") ? "an array" : "an object"
        }
    }
}

extension VideoFit: Decodable {
    /// Decodes `"contain"`, `"cover"`, `"fill"` or `"scaledown"`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        guard let fit = VideoFit(name: name) else {
            throw DecodingError.dataCorruptedError(
                in: container, debugDescription: "\"\(name)\" is not contain, cover, fill or scaledown")
        }
        self = fit
    }
}

extension PlayerOptions {
    /// Options from a remote config (its `autoplay` is the app's to act on): its sources, muted,
    /// fit, poster, latency target, recovery delays and CA file, the rest at their defaults. Set
    /// outputs, headers and board afterwards.
    public init(config: MarqueeConfig) {
        self.init(
            sources: config.sources, muted: config.muted ?? false,
            targetLatency: config.advanced?.sync?.targetLatency ?? PlayerOptions.defaultTargetLatency,
            fit: config.fit ?? .contain, poster: config.poster)
        if let low = config.advanced?.stall?.minRecoveryDelay { minRecoveryDelay = low }
        if let high = config.advanced?.stall?.maxRecoveryDelay { maxRecoveryDelay = high }
        if maxRecoveryDelay < minRecoveryDelay { maxRecoveryDelay = minRecoveryDelay }
        if let caFile = config.advanced?.tls?.caFile { documentSecurity.caFile = caFile }
    }
}
