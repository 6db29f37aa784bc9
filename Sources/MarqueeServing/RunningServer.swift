import Hummingbird
import HummingbirdCore
import Logging
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

    /// Binds `host`:`port` (0: any free port) and serves each request with `responder`.
    public static func start(
        host: String, port: Int, logger: Logger,
        responder: @escaping @Sendable (Request, consuming ResponseWriter, any Channel) async throws -> Void
    ) async throws -> RunningServer {
        let (bound, continuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        let server = try HTTPServerBuilder.http1().buildServer(
            configuration: ServerConfiguration(address: .hostname(host, port: port), serverName: nil),
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
