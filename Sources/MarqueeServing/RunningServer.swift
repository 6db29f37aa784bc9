import Hummingbird
import HummingbirdCore
import Logging
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// An HTTP/1 server (HummingbirdCore's, driven directly rather than through `Application`, so
/// that a responder sees its connection) running in the background: the origin's and the venue
/// proxy's. ``start(host:port:logger:responder:)`` returns once it listens (or throws why not);
/// ``stop()`` lets answers under way finish for up to 2 s, then closes the connections.
public final class RunningServer: Sendable {
    /// The port it listens on.
    public let port: Int
    private let task: Task<Void, Never>
    private let group: ServiceGroup

    private init(port: Int, task: Task<Void, Never>, group: ServiceGroup) {
        self.port = port
        self.task = task
        self.group = group
    }

    public struct NotListening: Error, CustomStringConvertible {
        public var description: String { "the server stopped before it was listening" }
    }

    /// What one server lets its clients hold: a server on a shared network answers strangers.
    public struct Limits: Sendable {
        /// Connections open at once; more wait in the listen backlog until one closes.
        public var connections: Int
        /// Connections open at once from one address; more are closed as they come.
        public var connectionsPerAddress: Int
        /// Seconds a connection may go without a complete request head (a slowloris sends its
        /// headers a byte at a time) or, between requests, without a request.
        public var idleSeconds: Int64

        public init(connections: Int = 512, connectionsPerAddress: Int = 64, idleSeconds: Int64 = 30) {
            self.connections = connections
            self.connectionsPerAddress = connectionsPerAddress
            self.idleSeconds = idleSeconds
        }
    }

    /// Binds `host`:`port` (0: any free port) and serves each request with `responder`, within
    /// `limits`.
    public static func start(
        host: String, port: Int, logger: Logger, limits: Limits = Limits(),
        responder: @escaping @Sendable (Request, consuming ResponseWriter, any Channel) async throws -> Void
    ) async throws -> RunningServer {
        let (bound, continuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        let perAddress = ConnectionsPerAddress(limit: limits.connectionsPerAddress, logger: logger)
        let channel = HTTP1Channel.Configuration(
            additionalChannelHandlers: [perAddress.handler()], idleTimeout: .seconds(limits.idleSeconds))
        let server = try HTTPServerBuilder.http1(configuration: channel).buildServer(
            configuration: ServerConfiguration(
                address: .hostname(host, port: port), serverName: nil,
                availableConnectionsDelegate: MaximumAvailableConnections(limits.connections)),
            eventLoopGroup: EventLoopGroupProvider.singleton.eventLoopGroup,
            logger: logger,
            responder: responder,
            onServerRunning: { channel in continuation.yield(.success(channel.localAddress?.port ?? 0)) }
        )
        let group = ServiceGroup(configuration: .init(services: [server], logger: logger))
        let task = Task {
            do { try await group.run() } catch {
                logger.warning("server on \(host):\(port) stopped: \(error)")
                continuation.yield(.failure(error))
            }
            continuation.finish()
        }
        var result: Result<Int, any Error> = .failure(NotListening())
        for await first in bound {
            result = first
            break
        }
        return RunningServer(port: try result.get(), task: task, group: group)
    }

    /// Stops listening; answers under way get up to 2 s.
    public func stop() async {
        await group.triggerGracefulShutdown()
        let task = self.task
        let deadline = Task {
            try? await Task.sleep(for: .seconds(2))
            task.cancel()
        }
        await task.value
        deadline.cancel()
    }

    /// Returns when the server has stopped.
    public func wait() async { await task.value }
}

/// Counts each remote address's open connections and closes those over the limit.
final class ConnectionsPerAddress: Sendable {
    let limit: Int
    let logger: Logger
    private let open = NIOLockedValueBox([String: Int]())

    init(limit: Int, logger: Logger) {
        self.limit = limit
        self.logger = logger
    }

    func handler() -> any RemovableChannelHandler { Handler(owner: self) }

    /// Whether one more connection from `address` is allowed (counted when it is).
    fileprivate func admit(_ address: String) -> Bool {
        open.withLockedValue { counts in
            let n = counts[address, default: 0]
            guard n < limit else { return false }
            counts[address] = n + 1
            return true
        }
    }

    fileprivate func release(_ address: String) {
        open.withLockedValue { counts in
            let n = counts[address, default: 1] - 1
            counts[address] = n > 0 ? n : nil
        }
    }

    private final class Handler: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
        typealias InboundIn = NIOAny  // never unwrapped: reads pass through untouched
        let owner: ConnectionsPerAddress
        var address: String?  // set once admitted, on the channel's event loop

        init(owner: ConnectionsPerAddress) { self.owner = owner }

        func handlerAdded(context: ChannelHandlerContext) {
            let remote = context.channel.remoteAddress?.ipAddress ?? "?"
            if owner.admit(remote) {
                address = remote
            } else {
                owner.logger.info(
                    "server: closing a connection from \(remote): over \(owner.limit) open from that address")
                context.close(promise: nil)
            }
        }

        func handlerRemoved(context: ChannelHandlerContext) {
            if let address { owner.release(address) }
            address = nil
        }
    }
}
