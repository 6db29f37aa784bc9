import CoreMetrics
public import Logging
public import Marquee
import Prometheus

/// What a box runs to be seen and steered by its operator: the ``FleetTelemetry`` of its
/// player, and, when asked for, a ``MetricsEndpoint`` for Prometheus, an ``OTLPExport`` pushing
/// the same metrics to an OpenTelemetry collector, and a ``ControlSocket``.
/// `marquee play --metrics … --otlp … --control …` starts one.
public final class Fleet: Sendable {
    /// The QoE record and metrics of the player.
    public let telemetry: FleetTelemetry
    /// The Prometheus endpoint, when one was asked for.
    public let metrics: MetricsEndpoint?
    /// The control socket, when one was asked for.
    public let control: ControlSocket?
    /// The OTLP export, when one was asked for.
    public let otlp: OTLPExport?
    private let sampler: Task<Void, Never>

    private init(telemetry: FleetTelemetry, metrics: MetricsEndpoint?, otlp: OTLPExport?, control: ControlSocket?) {
        self.telemetry = telemetry
        self.metrics = metrics
        self.otlp = otlp
        self.control = control
        sampler = Task { await telemetry.run() }
    }

    /// Starts reporting on `player`: metrics served on `metrics` (host, port) when given,
    /// pushed as OTLP when `otlp` is given, the control socket at `controlPath` when given
    /// (`next`: its `next` command, a playlist's next item). Throws when one cannot start (and
    /// stops the others).
    public static func start(
        player: Player, customerId: String? = nil, metrics address: (host: String, port: Int)? = nil,
        metricsToken: String? = nil,
        otlp otlpOptions: OTLPOptions? = nil, controlPath: String? = nil, next: (@Sendable () -> Void)? = nil,
        logger: Logger = Logger(label: "marquee.fleet")
    ) async throws -> Fleet {
        let registry = address.map { _ in PrometheusCollectorRegistry() }
        var otlp: OTLPExport?
        if let otlpOptions {
            var resource = ["marquee.session.id": player.sessionId]
            resource["marquee.customer.id"] = customerId
            otlp = try await OTLPExport.start(
                options: otlpOptions, resource: resource,
                buckets: ["marquee_latency_distance_seconds": LatencyHistogram.bounds], logger: logger)
        }
        let factories: [any MetricsFactory] = [registry.map { MetricsEndpoint.factory(registry: $0) }, otlp?.factory]
            .compactMap { $0 }
        let factory: (any MetricsFactory)? =
            factories.count > 1 ? MultiplexMetricsHandler(factories: factories) : factories.first
        let telemetry = FleetTelemetry(player: player, customerId: customerId, factory: factory)
        var endpoint: MetricsEndpoint?
        var control: ControlSocket?
        do {
            if let address, let registry {
                endpoint = try await MetricsEndpoint.start(
                    host: address.host, port: address.port, token: metricsToken, registry: registry,
                    telemetry: telemetry, logger: logger)
            }
            if let controlPath {
                control = try await ControlSocket.start(
                    path: controlPath, telemetry: telemetry, next: next, logger: logger)
            }
        } catch {
            await endpoint?.stop()
            await otlp?.stop(grace: .zero)
            throw error
        }
        return Fleet(telemetry: telemetry, metrics: endpoint, otlp: otlp, control: control)
    }

    /// Stops the sampling, the endpoint and the socket; the OTLP export exports a last time
    /// and has up to 2 s to deliver its queue (the rest waits on disk). Returns the final QoE
    /// record.
    @discardableResult
    public func stop() async -> QoERecord {
        sampler.cancel()
        await control?.stop()
        await metrics?.stop()
        let record = telemetry.finish()
        await otlp?.stop()
        return record
    }
}
