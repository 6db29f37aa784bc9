public import Logging
public import Marquee
import Prometheus

/// What a box runs to be seen and steered by its operator: the ``FleetTelemetry`` of its
/// player, and, when asked for, a ``MetricsEndpoint`` for Prometheus and a ``ControlSocket``.
/// `marquee play --metrics … --control …` starts one.
public final class Fleet: Sendable {
    /// The QoE record and metrics of the player.
    public let telemetry: FleetTelemetry
    /// The Prometheus endpoint, when one was asked for.
    public let metrics: MetricsEndpoint?
    /// The control socket, when one was asked for.
    public let control: ControlSocket?
    private let sampler: Task<Void, Never>

    private init(telemetry: FleetTelemetry, metrics: MetricsEndpoint?, control: ControlSocket?) {
        self.telemetry = telemetry
        self.metrics = metrics
        self.control = control
        sampler = Task { await telemetry.run() }
    }

    /// Starts reporting on `player`: metrics served on `metrics` (host, port) when given, the
    /// control socket at `controlPath` when given. Throws when either cannot listen.
    public static func start(
        player: Player, customerId: String? = nil, metrics address: (host: String, port: Int)? = nil, controlPath: String? = nil,
        logger: Logger = Logger(label: "marquee.fleet")
    ) async throws -> Fleet {
        let registry = address.map { _ in PrometheusCollectorRegistry() }
        let telemetry = FleetTelemetry(player: player, customerId: customerId, factory: registry.map { MetricsEndpoint.factory(registry: $0) })
        var endpoint: MetricsEndpoint?
        if let address, let registry {
            endpoint = try await MetricsEndpoint.start(host: address.host, port: address.port, registry: registry, telemetry: telemetry, logger: logger)
        }
        var control: ControlSocket?
        if let controlPath {
            do {
                control = try await ControlSocket.start(path: controlPath, telemetry: telemetry, logger: logger)
            } catch {
                await endpoint?.stop()
                throw error
            }
        }
        return Fleet(telemetry: telemetry, metrics: endpoint, control: control)
    }

    /// Stops the sampling, the endpoint and the socket; returns the final QoE record.
    @discardableResult
    public func stop() async -> QoERecord {
        sampler.cancel()
        await control?.stop()
        await metrics?.stop()
        return telemetry.finish()
    }
}
