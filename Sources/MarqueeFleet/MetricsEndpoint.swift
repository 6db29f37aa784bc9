import Hummingbird
import Logging
import MarqueeServing
import MarqueeStreaming
import NIOCore
public import Prometheus

/// The box's metrics for a Prometheus scrape: `GET /metrics` answers the registry in
/// Prometheus' text format, sampling the player first (``FleetTelemetry/sample()``) so the
/// counters are those of the moment of the scrape. Prometheus pulls: nothing is pushed, and
/// the endpoint listens on loopback unless another address is given (`marquee play --metrics`).
/// With a token, a scrape must carry `Authorization: Bearer <token>` (Prometheus'
/// `authorization: {credentials: …}`) or gets 401; an address other than loopback needs one.
public final class MetricsEndpoint: Sendable {
    /// The registry served: pass `PrometheusMetricsFactory(registry:)` of it to
    /// ``FleetTelemetry/init(player:customerId:factory:)``, or bootstrap swift-metrics with it.
    public let registry: PrometheusCollectorRegistry
    private let server: RunningServer

    /// The port it listens on.
    public var port: Int { server.port }

    private init(registry: PrometheusCollectorRegistry, server: RunningServer) {
        self.registry = registry
        self.server = server
    }

    /// A metrics factory over `registry` whose `marquee_latency_distance_seconds` histogram has
    /// ``LatencyHistogram/bounds`` as its buckets.
    public static func factory(registry: PrometheusCollectorRegistry) -> PrometheusMetricsFactory {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.valueHistogramBuckets["marquee_latency_distance_seconds"] = LatencyHistogram.bounds
        return factory
    }

    /// Serves `registry` on `host`:`port` (0: any free port); `telemetry`, when given, is
    /// sampled before each answer. Throws ``MetricsEndpointError/tokenNeeded(_:)`` for an
    /// address other than loopback without a `token`.
    public static func start(
        host: String = "127.0.0.1", port: Int, token: String? = nil, registry: PrometheusCollectorRegistry,
        telemetry: FleetTelemetry?,
        logger: Logger = Logger(label: "marquee.metrics")
    ) async throws -> MetricsEndpoint {
        if token?.isEmpty ?? true, !isLoopback(host) { throw MetricsEndpointError.tokenNeeded(host) }
        let expected = token.map { "Bearer \($0)" }
        let server = try await RunningServer.start(host: host, port: port, logger: logger) { request, writer, _ in
            guard request.uri.path == "/metrics" else {
                try await writer.write(response: HTTPResponse(status: .notFound), body: ResponseBody())
                return
            }
            if let expected, !Secrets.equal(request.headers[.authorization] ?? "", expected) {
                var head = HTTPResponse(status: .unauthorized)
                head.headerFields[.wwwAuthenticate] = "Bearer"
                head.headerFields[.contentLength] = "0"
                try await writer.write(response: head, body: ResponseBody())
                return
            }
            telemetry?.sample()
            let text = registry.emitToBuffer()
            var head = HTTPResponse(status: .ok)
            head.headerFields[.contentType] = "text/plain; version=0.0.4; charset=utf-8"
            head.headerFields[.contentLength] = String(text.count)
            try await writer.write(response: head, body: ResponseBody(byteBuffer: ByteBuffer(bytes: text)))
        }
        logger.info("metrics on http://\(host):\(server.port)/metrics")
        return MetricsEndpoint(registry: registry, server: server)
    }

    /// Stops listening.
    public func stop() async { await server.stop() }

    /// Whether `host` names the loopback interface only: a loopback address, parsed, or
    /// `localhost` (`127.evil.example` is a name like any other).
    public static func isLoopback(_ host: String) -> Bool {
        IPAddress(host)?.isLoopback ?? (host.lowercased() == "localhost")
    }
}

/// Why the metrics endpoint would not start.
public enum MetricsEndpointError: Error, CustomStringConvertible {
    /// Listening beyond loopback without a token.
    case tokenNeeded(String)

    public var description: String {
        switch self {
        case .tokenNeeded(let host):
            """
            metrics on \(host): an address other than loopback needs a token (--metrics-token-file, or the \
            metrics-token credential)
            """
        }
    }
}
