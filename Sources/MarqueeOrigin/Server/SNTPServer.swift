import Foundation
import MarqueeStreaming
import NIOCore
import NIOPosix

/// The origin's SNTP server (UDP, SwiftNIO): answers every client request with the origin's
/// clock, for manifests that list `urn:mpeg:dash:utc:ntp:2014` (the `utc_ntp` option).
enum SNTPServer {
    /// Binds `host:port` (0: a free port) and serves until the channel is closed.
    static func start(host: String, port: Int, clock: OriginClock) async throws -> any Channel {
        try await DatagramBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(Responder(clock: clock))
                }
            }
            .bind(host: host, port: port).get()
    }

    private final class Responder: ChannelInboundHandler, @unchecked Sendable {  // used on its event loop only
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        typealias OutboundOut = AddressedEnvelope<ByteBuffer>
        let clock: OriginClock
        init(clock: OriginClock) { self.clock = clock }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let received = clock.now()
            let request = unwrapInboundIn(data)
            guard
                let reply = SNTP.reply(
                    to: Array(request.data.readableBytesView), received: received, transmitted: clock.now())
            else {
                return  // not a client request: ignored, as a server does
            }
            context.writeAndFlush(
                wrapOutboundOut(
                    AddressedEnvelope(remoteAddress: request.remoteAddress, data: ByteBuffer(bytes: reply))),
                promise: nil)
        }
    }
}

/// A port learnt after start, read by the responder.
final class BoundPort: Sendable {
    private let value = Locked<Int?>(nil)
    var port: Int? {
        get { value.withLock { $0 } }
        set { value.withLock { $0 = newValue } }
    }
}
