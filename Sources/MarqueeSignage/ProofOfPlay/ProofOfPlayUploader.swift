public import Foundation
public import Logging
public import Marquee
import MarqueeStreaming

/// Sends a ``ProofOfPlayJournal``'s records to an endpoint, oldest first, in batches, and
/// notes each delivered batch in the journal (``ProofOfPlayJournal/markUploaded(through:)``):
/// after an outage the backlog goes out in order, and what was delivered is not sent again.
///
/// A batch is a POST of `{"box": …, "records": [PlayRecord…]}` (JSON) with an
/// `Idempotency-Key: <box>-<epoch>-<first>-<last>` header (and the `headers` given, e.g. the
/// receiver's `Authorization: Bearer …`); any 2xx answer delivers it. A batch whose
/// answer was lost (the box went down between the server's answer and the note) is sent
/// again: the receiver keys on the records' ids (``PlayRecord/id``) and on the header, so a
/// repeat changes nothing there.
public final class ProofOfPlayUploader: Sendable {
    public let journal: ProofOfPlayJournal
    public let endpoint: URL
    /// Records per POST at most.
    public let batch: Int
    private let fetcher: HTTPFetcher
    private let logger: Logger
    private let runner = Locked<Task<Void, Never>?>(nil)
    private let nudges: AsyncStream<Void>.Continuation
    private let nudged: AsyncStream<Void>

    /// Seconds between looks at the journal while nothing fails, and the longest wait after
    /// failures (doubling from `retryDelay`).
    package static let interval = 30.0
    package static let retryDelay = 2.0
    package static let maxRetryDelay = 300.0

    public init(
        journal: ProofOfPlayJournal, endpoint: URL, batch: Int = 500, headers: [String: String] = [:],
        logger: Logger = Logger(label: "marquee.pop")
    ) {
        self.journal = journal
        self.endpoint = endpoint
        self.batch = max(1, batch)
        self.fetcher = HTTPFetcher(headers: headers.map { ($0.key, $0.value) })
        self.logger = logger
        (nudged, nudges) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// Sends what is waiting now, batch by batch, until all is delivered or a batch fails.
    /// Returns the records delivered; throws the failure (the rest waits for the next try).
    @discardableResult
    public func upload() async throws(PlayerError) -> Int {
        var delivered = 0
        while true {
            let from = journal.uploadedThrough
            let waiting = journal.records(after: from, limit: batch)
            guard let first = waiting.first, let last = waiting.last else { return delivered }
            struct Batch: Encodable {
                var box: String
                var records: [PlayRecord]
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard let body = try? encoder.encode(Batch(box: journal.box, records: waiting)) else {
                throw PlayerError(.output, "proof of play: records that cannot be encoded")
            }
            let key = "\(journal.box)-\(journal.epoch)-\(first.sequence)-\(last.sequence)"
            let status: Int
            do {
                status = try await fetcher.post(endpoint, body: Array(body), headers: [("Idempotency-Key", key)]).status
            } catch {
                throw PlayerError(.network, "proof of play upload: \(error)")
            }
            guard (200..<300).contains(status) else {
                throw PlayerError(.network, "proof of play upload: HTTP \(status) from \(Redact.url(endpoint))")
            }
            try journal.markUploaded(through: last.sequence)
            delivered += waiting.count
        }
    }

    /// Uploads every `interval` (and at once after ``nudge()``), retrying failures after
    /// `retryDelay` doubling to `maxRetryDelay`, until ``stop()``.
    public func start() {
        runner.withLock { task in
            guard task == nil else { return }
            task = Task { [weak self] in await self?.run() }
        }
    }

    /// Asks for an upload now (a play was recorded).
    public func nudge() { nudges.yield() }

    public func stop() {
        runner.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    private func run() async {
        var delay = Self.retryDelay
        var wait = 0.0
        while !Task.isCancelled {
            if wait > 0 {
                // Until the wait is over or a nudge (a nudge does not cut a retry's wait short).
                let (milliseconds, retrying) = (Int(wait * 1000), delay != Self.retryDelay)
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { try? await Task.sleep(for: .milliseconds(milliseconds)) }
                    if !retrying {
                        let nudged = self.nudged
                        group.addTask { for await _ in nudged { return } }
                    }
                    await group.next()
                    group.cancelAll()
                }
            }
            if Task.isCancelled { return }
            do throws(PlayerError) {
                let sent = try await upload()
                if sent > 0 {
                    logger.info(
                        "proof of play uploaded",
                        metadata: ["records": "\(sent)", "through": "\(journal.uploadedThrough)"])
                }
                delay = Self.retryDelay
                wait = Self.interval
            } catch {
                logger.warning(
                    "proof of play upload failed: retried", metadata: ["error": "\(error)", "in": "\(delay)"])
                wait = delay
                delay = min(delay * 2, Self.maxRetryDelay)
            }
        }
    }
}
