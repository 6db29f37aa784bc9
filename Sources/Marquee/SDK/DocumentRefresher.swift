package import Foundation
import MarqueeStreaming
import NIOCore

/// A server's validators of a document (`ETag`, `Last-Modified`), sent back on the next request
/// so that an unchanged document costs a `304`.
struct DocumentValidators: Sendable, Equatable {
    var etag: String?
    var lastModified: String?

    init(etag: String?, lastModified: String?) {
        (self.etag, self.lastModified) = (etag, lastModified)
    }

    init(_ result: FetchResult) {
        self.init(etag: result.header("ETag"), lastModified: result.header("Last-Modified"))
    }

    /// `url` fetched with these validators as `If-None-Match` / `If-Modified-Since` (none: an
    /// unconditional request): nil when the server answers 304 (not modified).
    static func get(
        _ url: URL, fetcher: HTTPFetcher, validators: DocumentValidators?, maxBytes: Int, allowHTTP: Bool
    ) async throws(FetchError) -> FetchResult? {
        var conditional = fetcher
        if let etag = validators?.etag { conditional.headers.append(("If-None-Match", etag)) }
        if let modified = validators?.lastModified { conditional.headers.append(("If-Modified-Since", modified)) }
        do {
            return try await conditional.getDocument(
                url, allowHTTP: allowHTTP, timeout: .seconds(10), maxBytes: maxBytes)
        } catch {
            if error.code == .status, error.status == 304, validators != nil { return nil }
            throw error
        }
    }
}

/// A document kept fresh (the remote config, a content feed): fetched again every `interval`
/// seconds by `fetch` with the last validators; a changed value is published on ``changes``, a
/// failed fetch on ``failures`` while the last good value stays.
package final class DocumentRefresher<Value: Sendable & Equatable, Failure: Error & Sendable>: Sendable {
    /// Fetches with the last validators: the value and its validators, or nil when not modified.
    typealias Fetch = @Sendable (DocumentValidators?) async throws(Failure) -> (Value, DocumentValidators)?

    /// Every new value, in order (the first is the initial one).
    package let changes: AsyncStream<Value>
    /// Every refresh that failed.
    package let failures: AsyncStream<Failure>
    private let changesSink: AsyncStream<Value>.Continuation
    private let failuresSink: AsyncStream<Failure>.Continuation
    private let fetch: Fetch
    private let state: Locked<State>

    private struct State {
        var value: Value
        var validators: DocumentValidators?
        var task: Task<Void, Never>?
    }

    /// Starts from `first` (published at once) and refreshes every `interval` seconds until ``stop()``.
    init(first: Value, validators: DocumentValidators?, interval: Double, fetch: @escaping Fetch) {
        self.fetch = fetch
        state = Locked(State(value: first, validators: validators))
        (changes, changesSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(16))
        (failures, failuresSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(16))
        changesSink.yield(first)
        let task = Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
                guard let self, !Task.isCancelled else { return }
                await self.refresh()
            }
        }
        state.withLock { $0.task = task }
    }

    deinit { stop() }

    /// The last good value.
    package var current: Value { state.withLock { $0.value } }

    /// Fetches now (conditionally); returns whether the value changed.
    @discardableResult
    package func refresh() async -> Bool {
        let validators = state.withLock { $0.validators }
        do {
            guard let (value, newValidators) = try await fetch(validators) else { return false }
            let changed = state.withLock { s -> Bool in
                defer { (s.value, s.validators) = (value, newValidators) }
                return s.value != value
            }
            if changed { changesSink.yield(value) }
            return changed
        } catch {
            failuresSink.yield(error)
            return false
        }
    }

    /// Stops refreshing; the streams end.
    package func stop() {
        state.withLock { $0.task?.cancel() }
        changesSink.finish()
        failuresSink.finish()
    }
}

extension DocumentRefresher where Failure == PlayerError {
    /// A document at an http(s) `url`, fetched now (unconditionally) and refreshed every
    /// `interval` seconds (1…86400) with conditional requests, each fetch checked under
    /// `security` as a `kind`: the content feed's and the schedule feed's. `what` names it in
    /// errors (`feed`, `schedule`); `parse` reads a body into the value (its error is the
    /// document's) and `check` refuses what it names (local files). A network failure is
    /// ``PlayerError/Code-swift.struct/network``, a refused document
    /// ``PlayerError/Code-swift.struct/untrustedDocument``, a bad interval or URL
    /// ``PlayerError/Code-swift.struct/invalidArgument``.
    package static func following(
        _ url: URL, what: String, kind: DocumentKind, interval: Double, httpHeaders: [String: String],
        security: DocumentSecurity, maxBytes: Int,
        parse: @escaping @Sendable (Data) throws(PlayerError) -> Value,
        check: @escaping @Sendable (Value) throws(DocumentRefusal) -> Void
    ) async throws(PlayerError) -> DocumentRefresher {
        guard interval.isFinite, interval >= 1, interval <= 86_400 else {
            throw PlayerError(.invalidArgument, "\(what) refresh interval \(interval) s is outside 1…86400")
        }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw PlayerError(.invalidArgument, "\(what) \(Redact.url(url)): only http and https are fetched")
        }
        @Sendable func playerError(_ failure: DocumentFailure) -> PlayerError {
            switch failure {
            case .refused(let refusal): PlayerError(refusal)
            case .fetch(let error): PlayerError(.network, "\(what) \(error.description)")
            }
        }
        let source: DocumentSource
        do { source = try DocumentSource(url: url, kind: kind, security: security, headers: httpHeaders) } catch {
            throw playerError(error)
        }
        let fetch: Fetch = { (validators) throws(PlayerError) in
            let result: FetchResult
            let version: Int?
            do throws(DocumentFailure) {
                guard let answered = try await source.fetch(validators: validators, maxBytes: maxBytes) else {
                    return nil
                }
                (result, version) = answered
            } catch {
                throw playerError(error)
            }
            let value = try parse(Data(result.body.readableBytesView))
            do throws(DocumentRefusal) { try check(value) } catch { throw PlayerError(error) }
            source.accept(version)
            return (value, DocumentValidators(result))
        }
        guard let (first, validators) = try await fetch(nil) else {
            throw PlayerError(.network, "\(Redact.url(url)) answered 304 to an unconditional request")
        }
        return DocumentRefresher(first: first, validators: validators, interval: interval, fetch: fetch)
    }
}
