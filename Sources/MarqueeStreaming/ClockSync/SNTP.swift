import Foundation
import NIOCore
import NIOPosix

/// SNTP (RFC 4330) packets and a one-shot client over SwiftNIO UDP, for the DASH UTCTiming
/// schemes `urn:mpeg:dash:utc:ntp:2014` / `sntp:2014` (value `host[:port]`).
package enum SNTP {
    /// Seconds from 1900-01-01 (NTP era 0) to 1970-01-01.
    static let unixEpoch: Double = 2_208_988_800

    /// A 64-bit NTP timestamp for Unix seconds.
    package static func timestamp(_ unix: Double) -> UInt64 {
        let ntp = unix + unixEpoch
        let seconds = UInt64(ntp.rounded(.down))
        let fraction = UInt64(((ntp - Double(seconds)) * 4_294_967_296).rounded(.down))
        return seconds << 32 | min(fraction, 0xFFFF_FFFF)
    }

    /// Unix seconds of a 64-bit NTP timestamp (era 0).
    package static func unix(_ timestamp: UInt64) -> Double {
        Double(timestamp >> 32) - unixEpoch + Double(timestamp & 0xFFFF_FFFF) / 4_294_967_296
    }

    /// A client request (version 4, mode 3) carrying `transmit` as its transmit timestamp.
    package static func request(transmit: UInt64) -> [UInt8] {
        var packet = [UInt8](repeating: 0, count: 48)
        packet[0] = 0b00_100_011  // LI 0, VN 4, mode 3 (client)
        write(transmit, into: &packet, at: 40)
        return packet
    }

    /// A server reply (mode 4, stratum 1) to `request`: its transmit timestamp echoed as the
    /// originate timestamp; `received` and `transmitted` in Unix seconds on the server's clock.
    package static func reply(to request: [UInt8], received: Double, transmitted: Double) -> [UInt8]? {
        guard request.count >= 48, request[0] & 0x07 == 3 else { return nil }
        var packet = [UInt8](repeating: 0, count: 48)
        packet[0] = 0b00_100_100  // LI 0, VN 4, mode 4 (server)
        packet[1] = 1  // stratum 1: a reference clock
        packet[3] = 0xEC  // precision 2^-20 s
        packet[12...15] = [0x4D, 0x51, 0x52, 0x4B]  // reference id "MQRK"
        write(timestamp(received), into: &packet, at: 16)  // reference
        packet[24..<32] = request[40..<48]  // originate
        write(timestamp(received), into: &packet, at: 32)
        write(timestamp(transmitted), into: &packet, at: 40)
        return packet
    }

    /// Reads a server reply: (receive, transmit) in Unix seconds; nil when it is not a usable
    /// server answer (wrong mode, stratum 0 "kiss of death", no transmit time).
    package static func parseReply(_ packet: [UInt8]) -> (received: Double, transmitted: Double)? {
        guard packet.count >= 48, packet[0] & 0x07 == 4 || packet[0] & 0x07 == 5, packet[1] != 0 else { return nil }
        let received = read(packet, at: 32)
        let transmitted = read(packet, at: 40)
        guard transmitted != 0 else { return nil }
        return (unix(received), unix(transmitted))
    }

    static func write(_ value: UInt64, into packet: inout [UInt8], at offset: Int) {
        for i in 0..<8 { packet[offset + i] = UInt8(truncatingIfNeeded: value >> (56 - 8 * i)) }
    }

    static func read(_ packet: [UInt8], at offset: Int) -> UInt64 {
        (0..<8).reduce(0) { $0 << 8 | UInt64(packet[offset + $1]) }
    }

    /// One exchange with `host:port`. The offset (server Unix seconds − monotonic seconds) is
    /// NTP's `((T2 − t1) + (T3 − t4)) / 2` with t1, t4 on the monotonic clock; the round trip
    /// excludes the server's own processing time.
    package static func sample(host: String, port: Int = 123, timeout: Duration = .seconds(2)) async -> ServerClock? {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let reply = loop.makePromise(of: ([UInt8], Double).self)
        do {
            let remote = try SocketAddress.makeAddressResolvingHost(host, port: port)
            let channel = try await DatagramBootstrap(group: loop)
                .channelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(ReplyHandler(reply))
                    }
                }
                .bind(host: remote.protocol == .inet6 ? "::" : "0.0.0.0", port: 0).get()
            defer { channel.close(promise: nil) }
            let timer = loop.scheduleTask(
                in: .nanoseconds(
                    Int64(timeout.components.seconds) * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000)
            ) {
                reply.fail(ChannelError.connectTimeout(.seconds(2)))
            }
            defer { timer.cancel() }
            let sent = Monotonic.now()
            let request = request(transmit: timestamp(Monotonic.realtime()))
            try await channel.writeAndFlush(AddressedEnvelope(remoteAddress: remote, data: ByteBuffer(bytes: request)))
                .get()
            let (packet, arrived) = try await reply.futureResult.get()
            guard packet.count >= 48, Array(packet[24..<32]) == Array(request[40..<48]),  // answers our request
                let (t2, t3) = parseReply(packet)
            else { return nil }
            let offset = ((t2 - sent) + (t3 - arrived)) / 2
            return ServerClock(
                offset: offset, source: "sntp \(host):\(port)", roundTrip: max(0, (arrived - sent) - (t3 - t2)))
        } catch {
            reply.fail(error)
            return nil
        }
    }

    /// Hands the first datagram (and when it arrived) to the promise.
    private final class ReplyHandler: ChannelInboundHandler, @unchecked Sendable {  // used on its event loop only
        typealias InboundIn = AddressedEnvelope<ByteBuffer>
        let promise: EventLoopPromise<([UInt8], Double)>
        init(_ promise: EventLoopPromise<([UInt8], Double)>) { self.promise = promise }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            let arrived = Monotonic.now()
            let envelope = unwrapInboundIn(data)
            promise.succeed((Array(envelope.data.readableBytesView), arrived))
        }
    }
}
