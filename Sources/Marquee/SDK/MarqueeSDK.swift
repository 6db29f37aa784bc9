public import Foundation
import Logging
import MarqueeStreaming
import NIOCore

/// A failure of ``MarqueeSDK``: which kind, and a sentence for people.
public struct MarqueeSDKError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kind of failure: one of the constants below, compared with `==`.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// The stream id or the URL template does not make a usable http(s) URL.
        public static let invalidURL = Code("invalidURL")
        /// The config server's response carries no usable `Date` (its clock cannot be read).
        public static let invalidServerTime = Code("invalidServerTime")
        /// The config could not be downloaded (status, timeout, connection); see ``httpStatus``.
        public static let downloadError = Code("downloadError")
        /// An argument is out of range (the message says which).
        public static let invalidArgument = Code("invalidArgument")
        /// The response is empty.
        public static let missingData = Code("missingData")
        /// The document is not a valid config; the message names the bad field's path.
        public static let invalidConfig = Code("invalidConfig")
        /// The config was refused by its ``DocumentSecurity`` (``MarqueeSDKError/refusal`` says
        /// why: unsigned, wrongly signed, tampered with, older, expired, a local path, plain http).
        public static let untrustedDocument = Code("untrustedDocument")
        /// The code's name, as spelled above (`downloadError`, `invalidConfig`).
        public var description: String { name }
    }

    /// What kind of failure.
    public var code: Code
    /// What exactly failed, one English sentence (for ``Code-swift.struct/invalidConfig`` it
    /// starts with the bad field's path).
    public var message: String
    /// For ``Code-swift.struct/downloadError``: the HTTP status the config server answered
    /// with; nil when it did not answer (timeout, connection refused or reset).
    public var httpStatus: Int?
    /// For ``Code-swift.struct/untrustedDocument``: why the config was refused.
    public var refusal: DocumentRefusal?

    /// A ``Code-swift.struct/untrustedDocument`` error for `refusal`.
    package init(_ refusal: DocumentRefusal) {
        self.init(.untrustedDocument, refusal.description)
        self.refusal = refusal
    }

    /// An error of kind `code` with `message`; `httpStatus` is the config server's answer
    /// for a ``Code-swift.struct/downloadError``.
    package init(_ code: Code, _ message: String, httpStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
    }

    /// `code: message`, e.g. `invalidConfig: advanced.sync.targetLatency: expected a number`.
    public var description: String { "\(code): \(message)" }
}

/// The entry point for firmware that configures players remotely: a stream id names a JSON
/// config (``MarqueeConfig``) on the config server, fetched once by
/// ``initialize(streamId:configURL:httpHeaders:security:)`` and kept fresh by a ``RemoteConfig``.
public enum MarqueeSDK {
    /// Where configs live unless told otherwise; `{streamId}` is replaced by the
    /// percent-encoded stream id.
    public static let defaultConfigURLTemplate = "https://config.marquee.live/streams/{streamId}.json"

    /// The config URL for `streamId` under `template` (a template without `{streamId}` is
    /// used as it is).
    public static func configURL(streamId: String, template: String = defaultConfigURLTemplate) throws(MarqueeSDKError)
        -> URL
    {
        guard !streamId.isEmpty, streamId.count <= 256,
            let id = streamId.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
        else { throw MarqueeSDKError(.invalidURL, "stream id \"\(streamId)\" is empty or too long") }
        let text = template.replacingOccurrences(of: "{streamId}", with: id)
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false
        else {
            throw MarqueeSDKError(.invalidURL, "\"\(text)\" is not an http(s) URL")
        }
        return url
    }

    /// Fetches and validates the config of `streamId` under `security` (by default: https
    /// only, no local path, not authenticated).
    public static func initialize(
        streamId: String, configURL template: String = defaultConfigURLTemplate, httpHeaders: [String: String] = [:],
        security: DocumentSecurity = DocumentSecurity()
    ) async throws(MarqueeSDKError) -> MarqueeConfig {
        let url = try configURL(streamId: streamId, template: template)
        let source = try RemoteConfig.source(url, httpHeaders: httpHeaders, security: security)
        return try await RemoteConfig.fetchFirst(source).config
    }
}

/// A config kept fresh: refetched every ``interval`` with conditional requests (`ETag` /
/// `Last-Modified`); a changed config is published on ``changes``, and a failed or invalid
/// refresh keeps the last good one (and is published on ``failures``).
public final class RemoteConfig: Sendable {
    /// The config's URL: the stream id put into the URL template.
    public let url: URL
    /// Seconds between refreshes (1…86400).
    public let interval: Double
    /// Every new config, in order (the first is the initial one).
    public var changes: AsyncStream<MarqueeConfig> { refresher.changes }
    /// Every refresh that failed (the last good config stays).
    public var failures: AsyncStream<MarqueeSDKError> { refresher.failures }
    private let refresher: DocumentRefresher<MarqueeConfig, MarqueeSDKError>

    /// Fetches the config of `streamId` now and refreshes it every `interval` seconds (1…86400,
    /// 60 by default) until ``stop()``; an interval out of range throws
    /// ``MarqueeSDKError/Code-swift.struct/invalidArgument``. Each fetch is checked under
    /// `security` (a refused one: ``MarqueeSDKError/Code-swift.struct/untrustedDocument``).
    public init(
        streamId: String, configURL template: String = MarqueeSDK.defaultConfigURLTemplate,
        httpHeaders: [String: String] = [:],
        interval: Double = 60, security: DocumentSecurity = DocumentSecurity()
    ) async throws(MarqueeSDKError) {
        guard interval.isFinite, interval >= 1, interval <= 86_400 else {
            throw MarqueeSDKError(.invalidArgument, "refresh interval \(interval) s is outside 1…86400")
        }
        let url = try MarqueeSDK.configURL(streamId: streamId, template: template)
        self.url = url
        self.interval = interval
        let source = try Self.source(url, httpHeaders: httpHeaders, security: security)
        let (config, validators) = try await Self.fetchFirst(source)
        refresher = DocumentRefresher(first: config, validators: validators, interval: interval) {
            (validators) throws(MarqueeSDKError) in
            try await Self.fetch(source, validators: validators)
        }
    }

    /// The last good config.
    public var current: MarqueeConfig { refresher.current }

    /// Refetches now (conditionally); returns whether the config changed.
    @discardableResult
    public func refresh() async -> Bool { await refresher.refresh() }

    /// Stops refreshing.
    public func stop() { refresher.stop() }

    /// The config's document at `url` under `security`.
    static func source(_ url: URL, httpHeaders: [String: String], security: DocumentSecurity) throws(MarqueeSDKError)
        -> DocumentSource
    {
        do {
            return try DocumentSource(url: url, kind: .config, security: security, headers: httpHeaders)
        } catch {
            throw Self.error(error)
        }
    }

    private static func error(_ failure: DocumentFailure) -> MarqueeSDKError {
        switch failure {
        case .refused(let refusal): MarqueeSDKError(refusal)
        case .fetch(let error):
            MarqueeSDKError(.downloadError, error.description, httpStatus: error.status > 0 ? error.status : nil)
        }
    }

    /// The unconditional first fetch.
    static func fetchFirst(_ source: DocumentSource) async throws(MarqueeSDKError) -> (
        config: MarqueeConfig, validators: DocumentValidators
    ) {
        guard let (config, validators) = try await fetch(source, validators: nil) else {
            throw MarqueeSDKError(.missingData, "\(Redact.url(source.url)) answered 304 to an unconditional request")
        }
        return (config, validators)
    }

    /// The config of `source` (nil: not modified since `validators`): signed as its security
    /// asks, and naming no local file outside the allowed directories.
    static func fetch(
        _ source: DocumentSource, validators: DocumentValidators?
    ) async throws(MarqueeSDKError) -> (MarqueeConfig, DocumentValidators)? {
        let url = source.url
        let result: FetchResult
        let version: Int?
        do {
            guard let answered = try await source.fetch(validators: validators, maxBytes: MarqueeConfig.maxBytes) else {
                return nil
            }
            (result, version) = answered
        } catch {
            throw Self.error(error)
        }
        guard result.date != nil else {
            throw MarqueeSDKError(.invalidServerTime, "\(Redact.url(url)) sent no usable Date header")
        }
        guard result.body.readableBytes > 0 else {
            throw MarqueeSDKError(.missingData, "\(Redact.url(url)) sent an empty body")
        }
        let config = try MarqueeConfig.parse(Data(result.body.readableBytesView))
        do { try config.checkLocalPaths(source.security, document: url) } catch { throw MarqueeSDKError(error) }
        source.accept(version)
        return (config, DocumentValidators(result))
    }
}
