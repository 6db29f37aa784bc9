public import Foundation
public import Logging
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

    /// An error of kind `code` with `message`; `httpStatus` is the config server's answer
    /// for a ``Code-swift.struct/downloadError``.
    public init(_ code: Code, _ message: String, httpStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.httpStatus = httpStatus
    }

    /// `code: message`, e.g. `invalidConfig: advanced.sync.targetLatency: expected a number`.
    public var description: String { "\(code): \(message)" }
}

/// The entry point for firmware that configures players remotely: a stream id names a JSON
/// config (``MarqueeConfig``) on the config server, fetched once by ``initialize(streamId:configURL:httpHeaders:)``
/// and kept fresh by a ``RemoteConfig``.
public enum MarqueeSDK {
    /// Creates a player: the SDK's spelling of ``Player/init(options:logger:)``. Throws
    /// ``PlayerError/Code-swift.struct/invalidPlayerOptions`` or
    /// ``PlayerError/Code-swift.struct/invalidPlayerOptionsSources`` for options that cannot be used.
    public static func createPlayer(options: PlayerOptions, logger: Logger = Logger(label: "marquee.player")) throws(PlayerError) -> Player {
        try Player(options: options, logger: logger)
    }

    /// Where configs live unless told otherwise; `{streamId}` is replaced by the
    /// percent-encoded stream id.
    public static let defaultConfigURLTemplate = "https://config.marquee.live/streams/{streamId}.json"

    /// The config URL for `streamId` under `template` (a template without `{streamId}` is
    /// used as it is).
    public static func configURL(streamId: String, template: String = defaultConfigURLTemplate) throws(MarqueeSDKError) -> URL {
        guard !streamId.isEmpty, streamId.count <= 256,
              let id = streamId.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
        else { throw MarqueeSDKError(.invalidURL, "stream id \"\(streamId)\" is empty or too long") }
        let text = template.replacingOccurrences(of: "{streamId}", with: id)
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), url.host?.isEmpty == false else {
            throw MarqueeSDKError(.invalidURL, "\"\(text)\" is not an http(s) URL")
        }
        return url
    }

    /// Fetches and validates the config of `streamId`.
    public static func initialize(
        streamId: String, configURL template: String = defaultConfigURLTemplate, httpHeaders: [String: String] = [:]
    ) async throws(MarqueeSDKError) -> MarqueeConfig {
        let url = try configURL(streamId: streamId, template: template)
        return try await RemoteConfig.fetchFirst(url, fetcher: RemoteConfig.fetcher(httpHeaders)).config
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
    /// ``MarqueeSDKError/Code-swift.struct/invalidArgument``.
    public init(
        streamId: String, configURL template: String = MarqueeSDK.defaultConfigURLTemplate, httpHeaders: [String: String] = [:],
        interval: Double = 60
    ) async throws(MarqueeSDKError) {
        guard interval.isFinite, interval >= 1, interval <= 86_400 else {
            throw MarqueeSDKError(.invalidArgument, "refresh interval \(interval) s is outside 1…86400")
        }
        let url = try MarqueeSDK.configURL(streamId: streamId, template: template)
        self.url = url
        self.interval = interval
        let fetcher = Self.fetcher(httpHeaders)
        let (config, validators) = try await Self.fetchFirst(url, fetcher: fetcher)
        refresher = DocumentRefresher(first: config, validators: validators, interval: interval) { (validators) throws(MarqueeSDKError) in
            try await Self.fetch(url, fetcher: fetcher, validators: validators)
        }
    }

    /// The last good config.
    public var current: MarqueeConfig { refresher.current }

    /// Refetches now (conditionally); returns whether the config changed.
    @discardableResult
    public func refresh() async -> Bool { await refresher.refresh() }

    /// Stops refreshing.
    public func stop() { refresher.stop() }

    static func fetcher(_ httpHeaders: [String: String]) -> HTTPFetcher {
        HTTPFetcher(headers: httpHeaders.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
    }

    /// The unconditional first fetch.
    static func fetchFirst(_ url: URL, fetcher: HTTPFetcher) async throws(MarqueeSDKError) -> (config: MarqueeConfig, validators: DocumentValidators) {
        guard let (config, validators) = try await fetch(url, fetcher: fetcher, validators: nil) else {
            throw MarqueeSDKError(.missingData, "\(Redact.url(url)) answered 304 to an unconditional request")
        }
        return (config, validators)
    }

    /// The config at `url` (nil: not modified since `validators`).
    static func fetch(_ url: URL, fetcher: HTTPFetcher, validators: DocumentValidators?) async throws(MarqueeSDKError) -> (MarqueeConfig, DocumentValidators)? {
        let result: FetchResult
        do {
            guard let answered = try await DocumentValidators.get(url, fetcher: fetcher, validators: validators, maxBytes: MarqueeConfig.maxBytes) else {
                return nil
            }
            result = answered
        } catch {
            throw MarqueeSDKError(.downloadError, error.description, httpStatus: error.status > 0 ? error.status : nil)
        }
        guard result.date != nil else {
            throw MarqueeSDKError(.invalidServerTime, "\(Redact.url(url)) sent no usable Date header")
        }
        guard result.body.readableBytes > 0 else { throw MarqueeSDKError(.missingData, "\(Redact.url(url)) sent an empty body") }
        let config = try MarqueeConfig.parse(Data(result.body.readableBytesView))
        return (config, DocumentValidators(result))
    }
}
