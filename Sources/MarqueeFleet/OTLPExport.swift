import AsyncHTTPClient
public import CoreMetrics
import Foundation
import Hummingbird
import Logging
import MarqueeServing
import MarqueeStreaming
import NIOCore
import NIOHTTP1
import OTel
import ServiceLifecycle

/// Where and how a box pushes its metrics as OTLP (OpenTelemetry's protocol, over HTTP with
/// protobuf bodies).
public struct OTLPOptions: Sendable {
    /// The collector's metrics URL, used as given (e.g. `http://collector:4318/v1/metrics`).
    public var endpoint: String
    /// The queue's directory: every export is written there before it is sent, and removed
    /// once the collector has taken it, so what a collector outage (or a restart) holds back
    /// is sent afterwards, oldest first.
    public var queueDirectory: String
    /// How often the metrics are read and exported (OTel's default is 60 s).
    public var interval: Duration
    /// HTTP headers sent with every export (e.g. an `Authorization` the collector wants).
    public var headers: [(name: String, value: String)]
    /// The queue's bound on disk: past it, the oldest exports are dropped.
    public var maxQueueBytes: Int
    /// OTel resource attributes added to `service.name` = `marquee` and the session's
    /// `marquee.session.id` (and `marquee.customer.id` when known).
    public var resourceAttributes: [String: String]

    public init(
        endpoint: String, queueDirectory: String, interval: Duration = .seconds(15),
        headers: [(name: String, value: String)] = [],
        maxQueueBytes: Int = 16 << 20, resourceAttributes: [String: String] = [:]
    ) {
        self.endpoint = endpoint
        self.queueDirectory = queueDirectory
        self.interval = interval
        self.headers = headers
        self.maxQueueBytes = maxQueueBytes
        self.resourceAttributes = resourceAttributes
    }
}

/// The box's metrics pushed as OTLP/HTTP through a queue on disk.
///
/// swift-otel reads the metrics every ``OTLPOptions/interval`` and encodes them. It exports them
/// to a receiver of ours on loopback, which writes each export to a file in the queue's
/// directory before answering (the way an OpenTelemetry Collector's persistent sending queue
/// does). A sender posts the files to the collector, oldest first, one at a time, and removes
/// each once the collector has answered 2xx. It retries the answers OTLP calls retryable
/// (429, 502, 503, 504; their `Retry-After`, up to 5 minutes) and failed connections, backing
/// off from 1 s up to 30 s (the Collector's own exporters' bound), each wait ±20 % at random so
/// that a fleet's boxes do not all come back at one instant. Other answers drop the export,
/// with a warning: the collector will never take it.
///
/// An outage of the collector therefore loses nothing: the exports wait on disk. They survive
/// the player's restart, and are sent once the collector is back, each once (a collector that
/// took an export but whose answer was lost gets it again: OTLP is at-least-once). A queue past
/// ``OTLPOptions/maxQueueBytes`` drops its oldest.
public final class OTLPExport: Sendable {
    /// The swift-metrics factory whose metrics are exported.
    public let factory: any MetricsFactory
    /// The queue on disk.
    public let queue: OTLPQueue
    private let receiver: RunningServer
    private let group: ServiceGroup
    private let reader: Task<Void, Never>
    private let sender: Task<Void, Never>
    private let wake: AsyncStream<Void>.Continuation
    private let client: HTTPClient

    private init(
        factory: any MetricsFactory, queue: OTLPQueue, receiver: RunningServer, group: ServiceGroup,
        reader: Task<Void, Never>,
        sender: Task<Void, Never>, wake: AsyncStream<Void>.Continuation, client: HTTPClient
    ) {
        self.factory = factory
        self.queue = queue
        self.receiver = receiver
        self.group = group
        self.reader = reader
        self.sender = sender
        self.wake = wake
        self.client = client
    }

    /// Starts exporting; `buckets` are histogram buckets by metric name. Throws when the
    /// queue's directory cannot be made, or the options are not usable.
    public static func start(
        options: OTLPOptions, resource: [String: String] = [:], buckets: [String: [Double]] = [:],
        logger: Logger = Logger(label: "marquee.otlp")
    ) async throws -> OTLPExport {
        guard let url = URL(string: options.endpoint), ["http", "https"].contains(url.scheme ?? ""), url.host != nil
        else {
            throw OTLPError.badEndpoint(options.endpoint)
        }
        let queue = try OTLPQueue(directory: options.queueDirectory, maxBytes: options.maxQueueBytes, logger: logger)
        let (wakes, wake) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let receiver = try await RunningServer.start(host: "127.0.0.1", port: 0, logger: logger) { request, writer, _ in
            guard request.method == .post, request.uri.path == "/v1/metrics" else {
                try await writer.write(response: HTTPResponse(status: .notFound), body: ResponseBody())
                return
            }
            let bytes = try await request.body.collect(upTo: 64 << 20)
            var head = HTTPResponse(status: .ok)
            do {
                try queue.append(Array(buffer: bytes))
                wake.yield()
                head.headerFields[.contentType] = "application/x-protobuf"
            } catch {
                logger.error("OTLP queue: cannot write an export: \(error)")
                head.status = .serviceUnavailable
            }
            head.headerFields[.contentLength] = "0"
            try await writer.write(response: head, body: ResponseBody())
        }

        var configuration = OTel.Configuration.default
        configuration.serviceName = "marquee"
        configuration.resourceAttributes = resource.merging(options.resourceAttributes) { _, given in given }
        configuration.traces.enabled = false
        configuration.logs.enabled = false
        configuration.diagnosticLogger = .custom(logger)
        configuration.diagnosticLogLevel = .warning
        configuration.metrics.exportInterval = options.interval
        configuration.metrics.exportTimeout = .seconds(10)
        configuration.metrics.valueHistogramBuckets = buckets
        configuration.metrics.exporter = .otlp
        configuration.metrics.otlpExporter.protocol = .httpProtobuf
        configuration.metrics.otlpExporter.endpoint = "http://127.0.0.1:\(receiver.port)/v1/metrics"
        let backend: (factory: any MetricsFactory, service: any Service)
        do {
            let made = try OTel.makeMetricsBackend(configuration: configuration)
            backend = (made.factory, made.service)
        } catch {
            await receiver.stop()
            throw error
        }
        let group = ServiceGroup(configuration: .init(services: [backend.service], logger: logger))
        let reader = Task {
            do { try await group.run() } catch { logger.warning("OTLP metrics reader stopped: \(error)") }
        }
        let client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup,
            configuration: .init(timeout: .init(connect: .seconds(5), read: .seconds(10))))
        let sender = Task {
            await OTLPSender(
                url: options.endpoint, headers: options.headers, queue: queue, client: client, logger: logger
            ).run(wakes: wakes)
        }
        logger.info(
            "OTLP metrics to \(options.endpoint) every \(options.interval), queued in \(options.queueDirectory)")
        return OTLPExport(
            factory: backend.factory, queue: queue, receiver: receiver, group: group, reader: reader, sender: sender,
            wake: wake, client: client)
    }

    /// Exports a last time, gives the sender up to `grace` to deliver what is queued, and stops.
    /// What is still queued stays on disk for the next start.
    public func stop(grace: Duration = .seconds(2)) async {
        await group.triggerGracefulShutdown()  // a last read and export into the queue
        await reader.value
        await receiver.stop()
        wake.yield()
        let (seconds, attoseconds) = grace.components
        let deadline = Monotonic.now() + Double(seconds) + Double(attoseconds) * 1e-18
        while queue.count > 0, Monotonic.now() < deadline, !sender.isCancelled {
            await queue.removed.wait(until: deadline)  // each export sent (or dropped) wakes it
        }
        sender.cancel()
        await sender.value
        try? await client.shutdown()
    }
}

/// Why an OTLP export could not start.
public enum OTLPError: Error, CustomStringConvertible {
    case badEndpoint(String)
    case queue(String, String)

    public var description: String {
        switch self {
        case .badEndpoint(let endpoint): "OTLP endpoint \(endpoint): expected an http or https URL"
        case .queue(let path, let why): "OTLP queue \(path): \(why)"
        }
    }
}

/// The exports waiting for the collector: one file each in a directory, named by a sequence
/// number, written whole (a temporary name, then renamed) so a crash leaves no half export.
public final class OTLPQueue: Sendable {
    /// Its directory.
    public let directory: URL
    private let maxBytes: Int
    private let logger: Logger
    private let state: Locked<State>
    /// Signalled as each export leaves the queue (``OTLPExport/stop(grace:)`` waits on it).
    let removed = Wakeup()

    private struct State {
        var files: [(sequence: UInt64, bytes: Int)] = []  // oldest first
        var next: UInt64 = 0
        var dropped = 0
    }

    init(directory path: String, maxBytes: Int, logger: Logger) throws {
        directory = URL(fileURLWithPath: path, isDirectory: true)
        self.maxBytes = maxBytes
        self.logger = logger
        let manager = FileManager.default
        do {
            try manager.createDirectory(
                at: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw OTLPError.queue(path, "cannot be made: \(error.localizedDescription)")
        }
        var state = State()
        for name in (try? manager.contentsOfDirectory(atPath: path)) ?? [] {
            let file = directory.appendingPathComponent(name)
            if name.hasSuffix(".tmp") {
                try? manager.removeItem(at: file)  // a write a crash interrupted
            } else if name.hasSuffix(".pb"), let sequence = UInt64(name.dropLast(3)) {
                let size = (try? manager.attributesOfItem(atPath: file.path))?[.size] as? Int
                state.files.append((sequence, size ?? 0))
            }
        }
        state.files.sort { $0.sequence < $1.sequence }
        state.next = (state.files.last?.sequence ?? 0) + 1
        self.state = Locked(state)
        if !state.files.isEmpty { logger.info("OTLP queue: \(state.files.count) exports waiting from before") }
    }

    /// The exports waiting.
    public var count: Int { state.withLock { $0.files.count } }
    /// Their bytes.
    public var bytes: Int { state.withLock { $0.files.reduce(0) { $0 + $1.bytes } } }
    /// Exports dropped, past the bound or refused by the collector, since the start.
    public var dropped: Int { state.withLock { $0.dropped } }

    private func file(_ sequence: UInt64) -> URL {
        directory.appendingPathComponent(String(format: "%020llu.pb", sequence))
    }

    /// Adds one export (its protobuf body).
    func append(_ body: [UInt8]) throws {
        let sequence = state.withLock { s in
            defer { s.next += 1 }
            return s.next
        }
        let final = file(sequence)
        let temporary = final.appendingPathExtension("tmp")
        let data = Data(body)
        try data.write(to: temporary)
        let handle = try FileHandle(forWritingTo: temporary)
        try handle.synchronize()
        try handle.close()
        try FileManager.default.moveItem(at: temporary, to: final)
        let over = state.withLock { s -> [UInt64] in
            s.files.append((sequence, body.count))
            var total = s.files.reduce(0) { $0 + $1.bytes }
            var over = [UInt64]()
            while total > maxBytes, s.files.count > 1 {
                let oldest = s.files.removeFirst()
                total -= oldest.bytes
                over.append(oldest.sequence)
                s.dropped += 1
            }
            return over
        }
        for sequence in over { try? FileManager.default.removeItem(at: file(sequence)) }
        if !over.isEmpty {
            logger.warning("OTLP queue over \(maxBytes) bytes: the oldest \(over.count) exports dropped")
        }
    }

    /// The oldest export waiting, with its sequence number.
    func oldest() -> (sequence: UInt64, body: Data)? {
        while let first = state.withLock({ $0.files.first?.sequence }) {
            if let body = try? Data(contentsOf: file(first)) { return (first, body) }
            remove(first)  // gone from under us: skip it
        }
        return nil
    }

    /// Removes export `sequence` (sent, or refused: `dropped`).
    func remove(_ sequence: UInt64, dropped: Bool = false) {
        state.withLock { s in
            s.files.removeAll { $0.sequence == sequence }
            if dropped { s.dropped += 1 }
        }
        try? FileManager.default.removeItem(at: file(sequence))
        removed.signal()
    }
}

/// Posts the queue's exports to the collector, oldest first.
struct OTLPSender {
    let url: String
    let headers: [(name: String, value: String)]
    let queue: OTLPQueue
    let client: HTTPClient
    let logger: Logger

    enum Outcome {
        case sent
        case refused(String)
        case retry(Duration?, String)
    }

    func run(wakes: AsyncStream<Void>) async {
        var backoff = Duration.seconds(1)
        var failing = false
        var wakeups = wakes.makeAsyncIterator()
        while !Task.isCancelled {
            guard let (sequence, body) = queue.oldest() else {
                _ = await wakeups.next()  // an export was queued (or the stop)
                continue
            }
            switch await send(body) {
            case .sent:
                queue.remove(sequence)
                if failing { logger.info("OTLP collector reached again; \(queue.count) exports still queued") }
                failing = false
                backoff = .seconds(1)
            case .refused(let why):
                queue.remove(sequence, dropped: true)
                logger.warning("OTLP collector refused an export (dropped): \(why)")
            case .retry(let after, let why):
                if !failing { logger.warning("OTLP collector not reached (exports queued, retrying): \(why)") }
                failing = true
                try? await Task.sleep(
                    for: after.map { min($0, .seconds(300)) } ?? backoff * Double.random(in: 0.8...1.2))
                backoff = min(backoff * 2, .seconds(30))
            }
        }
    }

    func send(_ body: Data) async -> Outcome {
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-protobuf")
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        do {
            let response = try await client.execute(request, timeout: .seconds(10))
            _ = try? await response.body.collect(upTo: 1 << 20)
            switch response.status.code {
            case 200..<300: return .sent
            case 429, 502, 503, 504:
                let after = response.headers.first(name: "Retry-After").flatMap(Int.init).map { Duration.seconds($0) }
                return .retry(after, "HTTP \(response.status.code)")
            default: return .refused("HTTP \(response.status.code)")
            }
        } catch {
            return .retry(nil, "\(error)")
        }
    }
}
