public import Foundation
import Logging
import MarqueeStreaming
import NIOCore

/// The entry point for firmware that configures players remotely: a stream id names a JSON
/// config (``MarqueeConfig``) on the config server, fetched once by
/// ``initialize(streamId:configURL:httpHeaders:security:)`` and kept fresh by a ``RemoteConfig``.
public enum MarqueeSDK {
    /// Where configs live unless told otherwise; `{streamId}` is replaced by the
    /// percent-encoded stream id.
    public static let defaultConfigURLTemplate = "https://config.marquee.live/streams/{streamId}.json"

    /// The config URL for `streamId` under `template` (a template without `{streamId}` is
    /// used as it is).
    package static func configURL(streamId: String, template: String = defaultConfigURLTemplate) throws(PlayerError)
        -> URL
    {
        guard !streamId.isEmpty, streamId.count <= 256,
            let id = streamId.addingPercentEncoding(
                withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))
        else { throw PlayerError(.invalidArgument, "stream id \"\(streamId)\" is empty or too long") }
        let text = template.replacingOccurrences(of: "{streamId}", with: id)
        guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false
        else {
            throw PlayerError(.invalidArgument, "\"\(text)\" is not an http(s) URL")
        }
        return url
    }

    /// Fetches and validates the config of `streamId` under `security` (by default: https
    /// only, no local path, not authenticated).
    public static func initialize(
        streamId: String, configURL template: String = defaultConfigURLTemplate, httpHeaders: [String: String] = [:],
        security: DocumentSecurity = DocumentSecurity()
    ) async throws(PlayerError) -> MarqueeConfig {
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
    public var failures: AsyncStream<PlayerError> { refresher.failures }
    private let refresher: DocumentRefresher<MarqueeConfig, PlayerError>

    /// Fetches the config of `streamId` now and refreshes it every `interval` seconds (1…86400,
    /// 60 by default) until ``stop()``; an interval out of range throws
    /// ``PlayerError/Code-swift.struct/invalidArgument``. Each fetch is checked under
    /// `security` (a refused one: ``PlayerError/Code-swift.struct/untrustedDocument``).
    public init(
        streamId: String, configURL template: String = MarqueeSDK.defaultConfigURLTemplate,
        httpHeaders: [String: String] = [:],
        interval: Double = 60, security: DocumentSecurity = DocumentSecurity()
    ) async throws(PlayerError) {
        guard interval.isFinite, interval >= 1, interval <= 86_400 else {
            throw PlayerError(.invalidArgument, "refresh interval \(interval) s is outside 1…86400")
        }
        let url = try MarqueeSDK.configURL(streamId: streamId, template: template)
        self.url = url
        self.interval = interval
        let source = try Self.source(url, httpHeaders: httpHeaders, security: security)
        let (config, validators) = try await Self.fetchFirst(source)
        refresher = DocumentRefresher(first: config, validators: validators, interval: interval) {
            (validators) throws(PlayerError) in
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
    static func source(_ url: URL, httpHeaders: [String: String], security: DocumentSecurity) throws(PlayerError)
        -> DocumentSource
    {
        do {
            return try DocumentSource(url: url, kind: .config, security: security, headers: httpHeaders)
        } catch {
            throw Self.error(error)
        }
    }

    private static func error(_ failure: DocumentFailure) -> PlayerError {
        switch failure {
        case .refused(let refusal): PlayerError(refusal)
        case .fetch(let error):
            PlayerError(.network, error.description, httpStatus: error.status > 0 ? error.status : nil)
        }
    }

    /// The unconditional first fetch.
    static func fetchFirst(_ source: DocumentSource) async throws(PlayerError) -> (
        config: MarqueeConfig, validators: DocumentValidators
    ) {
        guard let (config, validators) = try await fetch(source, validators: nil) else {
            throw PlayerError(.network, "\(Redact.url(source.url)) answered 304 to an unconditional request")
        }
        return (config, validators)
    }

    /// The config of `source` (nil: not modified since `validators`): signed as its security
    /// asks, and naming no local file outside the allowed directories.
    static func fetch(
        _ source: DocumentSource, validators: DocumentValidators?
    ) async throws(PlayerError) -> (MarqueeConfig, DocumentValidators)? {
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
            throw PlayerError(.network, "\(Redact.url(url)) sent no usable Date header")
        }
        guard result.body.readableBytes > 0 else {
            throw PlayerError(.network, "\(Redact.url(url)) sent an empty body")
        }
        let config = try MarqueeConfig.parse(Data(result.body.readableBytesView))
        do { try config.checkLocalPaths(source.security, document: url) } catch { throw PlayerError(error) }
        source.accept(version)
        return (config, DocumentValidators(result))
    }
}
