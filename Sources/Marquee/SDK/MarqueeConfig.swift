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
    /// The `advanced` object's analytics and interactive sections (carried for the app).
    package var advanced: Advanced?
    /// The value of each player option the document sets, by its config key
    /// (`advanced.sync.targetLatency`): the option table's rows (``OptionTable``) check and
    /// apply them.
    package var settings: [String: OptionValue] = [:]

    enum CodingKeys: String, CodingKey {
        case sources, autoplay, fit, muted, poster, advanced
    }

    /// The config's `advanced` object's sections carried for the app; the player's own
    /// (`stall`, `sync`, `tls`) are options, read through ``settings``.
    package struct Advanced: Sendable, Equatable, Decodable {
        /// `advanced.analytics`: where the app reports to. Carried for the app; the player
        /// sends nothing.
        package var analytics: Analytics?
        /// `advanced.interactive`: an overlay for the app to show. Carried for the app; the
        /// player shows nothing.
        package var interactive: Interactive?
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
        var checked = config
        checked.settings = Self.settings(in: data)
        try checked.validate()
        return checked
    }

    /// The value at each option's config key in `data` (a document the decoder took).
    static func settings(in data: Data) -> [String: OptionValue] {
        guard let root = try? JSONDecoder().decode(JSONNode.self, from: data) else { return [:] }
        var found: [String: OptionValue] = [:]
        for key in OptionTable.all.compactMap(\.config) {
            var node: JSONNode? = root
            for part in key.split(separator: ".") {
                guard case .object(let members)? = node else {
                    node = nil
                    break
                }
                node = members[String(part)]
            }
            if let node { found[key] = node.value }
        }
        return found
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
        var scratch = PlayerOptions(sources: sources)
        for spec in OptionTable.all {
            guard let key = spec.config, let value = settings[key] else { continue }
            do { try spec.apply(&scratch, value) } catch {
                throw PlayerError(.invalidConfig, "\(key): \(error.message)")
            }
        }
        if case .number(let low)? = settings["advanced.stall.minRecoveryDelay"],
            case .number(let high)? = settings["advanced.stall.maxRecoveryDelay"], low > high
        {
            throw PlayerError(
                .invalidConfig, "advanced.stall: minRecoveryDelay \(low) s is above maxRecoveryDelay \(high) s")
        }
    }

    /// Refuses a config fetched from `document` whose local paths (`poster`,
    /// `advanced.tls.caFile`) are outside `security`'s allowed directories.
    func checkLocalPaths(_ security: DocumentSecurity, document: URL) throws(DocumentRefusal) {
        var caFile: String?
        if case .text(let path)? = settings["advanced.tls.caFile"] { caFile = path }
        for (field, value) in [("poster", poster), ("advanced.tls.caFile", caFile)] {
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
    /// Options from a remote config (its `autoplay` is the app's to act on): its sources and
    /// each option it sets (muted, fit, poster, the latency target, the recovery delays, the CA
    /// file; the option table's config keys), the rest at their defaults. Set outputs, headers
    /// and board afterwards.
    public init(config: MarqueeConfig) {
        self.init(sources: config.sources)
        for spec in OptionTable.all {
            guard let key = spec.config, key != "sources", let value = config.settings[key] else { continue }
            // MarqueeConfig.parse checked every value with these rows.
            try? spec.apply(value, to: &self, as: key)
        }
        if maxRecoveryDelay < minRecoveryDelay { maxRecoveryDelay = minRecoveryDelay }
    }
}

/// A JSON value, to walk a document by key path.
private enum JSONNode: Decodable {
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONNode])
    case object([String: JSONNode])
    case null

    init(from decoder: any Decoder) throws {
        let c = try decoder.singleValueContainer()
        if c.decodeNil() {
            self = .null
        } else if let b = try? c.decode(Bool.self) {
            self = .bool(b)
        } else if let n = try? c.decode(Double.self) {
            self = .number(n)
        } else if let s = try? c.decode(String.self) {
            self = .string(s)
        } else if let a = try? c.decode([JSONNode].self) {
            self = .array(a)
        } else {
            self = .object(try c.decode([String: JSONNode].self))
        }
    }

    /// The node as an option's value.
    var value: OptionValue {
        switch self {
        case .bool(let b): .flag(b)
        case .number(let n): .number(n)
        case .string(let s): .text(s)
        case .array(let items):
            items.allSatisfy { if case .string = $0 { true } else { false } }
                ? .list(items.map { if case .string(let s) = $0 { s } else { "" } }) : .other("an array")
        case .object: .other("an object")
        case .null: .other("null")
        }
    }
}
