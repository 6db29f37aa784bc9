import Foundation
import Logging
import Marquee
import MarqueeStreaming
import NIOCore
import NIOExtras
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The box's local control: a Unix socket speaking JSON lines, as mpv's IPC does — nothing
/// listens on a network interface. The socket file is mode 0600 and each connection's peer
/// uid (`SO_PEERCRED`) must be this process's own (or root's); anyone else gets one refusal
/// line and is closed.
///
/// Requests, one JSON object a line, with an optional `id` echoed in the answer:
/// - `{"command": "get", "property": P}` → `{"ok": true, "data": …}`; properties: `state`,
///   `latency`, `targetLatency`, `buffer`, `position`, `rate`, `volume`, `muted`,
///   `framesPresented`, `framesDropped`, `width`, `height`, `timeOffset`, `delay`, `source`,
///   `displayOff`, `output` (what the display output last reported: connected, mode, lost),
///   `audioUnderrun` (seconds of silence played for want of stream audio), `fit`, `captions`,
///   `selectedQuality`, `qoe`,
///   `venue`, `status` (all the status' figures);
/// - `{"command": "set", "property": P, "value": V}` for `volume` (0…1), `delay` (seconds),
///   `displayOff`, `paused`, and the player options that change while playing (the option
///   table's `set` column: `targetLatency` in seconds, `selectedQuality` (a rendition id or
///   `auto`), `fit` (`contain|cover|fill|scaledown`), `muted`), checked by their rows;
/// - commands `pause`, `play` (resume), `displayOff`, `displayOn`, `next` (a playlist's next
///   item; an error when no playlist plays);
/// - `{"command": "screenshot", "maxWidth": W, "path": F}`: the picture presented last as a
///   PNG (``Player/snapshot(maxWidth:)``; both fields optional), written to `F` when given,
///   else sent base64 in `data.png`; `data` also has `width`, `height` and `mediaTime`. It is
///   made off the socket's event loop, so its answer may come after later requests' (match
///   it by `id`);
/// - `{"command": "observe", "property": P}`: a line `{"event": "propertyChange", "name": P,
///   "data": …}` now and each time the value changes (checked 4 times a second);
///   `{"command": "observe", "property": "events"}`: each player event as a line
///   `{"event": <type>, …}` (``EventJSON``).
///
/// A bad request gets `{"ok": false, "error": …}`; the connection stays open.
public final class ControlSocket: Sendable {
    /// The socket file's path.
    public let path: String
    private let channel: any Channel
    private let connections: Locked<[ObjectIdentifier: any Channel]>

    private init(path: String, channel: any Channel, connections: Locked<[ObjectIdentifier: any Channel]>) {
        self.path = path
        self.channel = channel
        self.connections = connections
    }

    /// Where `marquee ctl` looks by default: `$XDG_RUNTIME_DIR/marquee.sock`, else
    /// `/tmp/marquee-<uid>.sock`.
    public static var defaultPath: String {
        if let dir = ProcessInfo.processInfo.environment["XDG_RUNTIME_DIR"], !dir.isEmpty {
            return dir + "/marquee.sock"
        }
        return "/tmp/marquee-\(getuid()).sock"
    }

    /// Listens on `path` (a stale socket file there is replaced) for `telemetry`'s player;
    /// `next` moves a playlist on (nil: no playlist). Turns on the player's
    /// ``Player/keepLastPicture(_:)`` for screenshots.
    public static func start(
        path: String, telemetry: FleetTelemetry, next: (@Sendable () -> Void)? = nil,
        logger: Logger = Logger(label: "marquee.control")
    ) async throws -> ControlSocket {
        telemetry.player.keepLastPicture(true)
        let connections = Locked<[ObjectIdentifier: any Channel]>([:])
        let ownUid = getuid()
        // Made 0600 once bound (the process' umask is left alone: other threads create files);
        // a connection in between is still held to the uid check.
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.backlog, value: 16)
            .childChannelInitializer { child in
                Self.peerUid(child).flatMapThrowing { uid in
                    let handler = Connection(
                        telemetry: telemetry, next: next, allowed: uid == ownUid || uid == 0, uid: uid, logger: logger)
                    // One request a line; a line over 64 KiB ends the connection.
                    try child.pipeline.syncOperations.addHandler(
                        ByteToMessageHandler(LineBasedFrameDecoder(), maximumBufferSize: 65_536))
                    try child.pipeline.syncOperations.addHandler(handler)
                    connections.withLock { $0[ObjectIdentifier(child)] = child }
                    child.closeFuture.whenComplete { _ in
                        _ = connections.withLock { $0.removeValue(forKey: ObjectIdentifier(child)) }
                    }
                }
            }
        let channel: any Channel
        do {
            channel = try await bootstrap.bind(unixDomainSocketPath: path, cleanupExistingSocketFile: true).get()
        } catch {
            throw ControlError("cannot listen on \(path): \(error)")
        }
        chmod(path, 0o600)
        logger.info("control socket on \(path)")
        return ControlSocket(path: path, channel: channel, connections: connections)
    }

    /// Stops listening, closes the connections and removes the socket file.
    public func stop() async {
        try? await channel.close()
        for c in connections.withLock({ Array($0.values) }) { try? await c.close() }
        unlink(path)
    }

    /// The connecting process' uid (`SO_PEERCRED`); nil when it cannot be read.
    private static func peerUid(_ channel: any Channel) -> EventLoopFuture<uid_t?> {
        struct PeerCredentials: Sendable { var pid: Int32 = 0, uid: UInt32 = 0, gid: UInt32 = 0 }  // struct ucred
        guard let provider = channel as? any SocketOptionProvider else {
            return channel.eventLoop.makeSucceededFuture(nil)
        }
        let future: EventLoopFuture<PeerCredentials> = provider.unsafeGetSocketOption(
            level: SocketOptionLevel(SOL_SOCKET), name: SocketOptionName(SO_PEERCRED))
        return future.map { Optional($0.uid) }.recover { _ in nil }
    }
}

/// A request's `id` (a JSON value) carried to the thread that answers.
private struct SendableJSON: @unchecked Sendable {  // a JSONSerialization value: immutable
    let value: Any
    init(_ value: Any) { self.value = value }
}

/// Why the control socket could not start, or what a request got wrong.
public struct ControlError: Error, CustomStringConvertible, Sendable {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// One connection: lines in, answers and observed values out.
private final class Connection: ChannelInboundHandler, @unchecked Sendable {  // confined to its channel's event loop
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    let telemetry: FleetTelemetry
    let next: (@Sendable () -> Void)?
    let allowed: Bool
    let uid: uid_t?
    let logger: Logger
    var observers: [Task<Void, Never>] = []
    /// Screenshots are converted and encoded here, off the event loop, one at a time.
    static let screenshots = DispatchQueue(label: "marquee.control.screenshot")

    init(telemetry: FleetTelemetry, next: (@Sendable () -> Void)?, allowed: Bool, uid: uid_t?, logger: Logger) {
        (self.telemetry, self.next, self.allowed, self.uid, self.logger) = (telemetry, next, allowed, uid, logger)
    }

    func channelActive(context: ChannelHandlerContext) {
        guard !allowed else { return }
        logger.warning("control: refused a connection from uid \(uid.map(String.init) ?? "unknown")")
        Self.send(
            ["ok": false, "error": "refused: uid \(uid.map(String.init) ?? "unknown") is not this player's"],
            on: context.channel)
        context.close(promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard allowed else { return }
        var bytes = unwrapInboundIn(data)  // one line (LineBasedFrameDecoder)
        let line = bytes.readString(length: bytes.readableBytes) ?? ""
        guard !line.trimmingCharacters(in: .whitespaces).isEmpty else { return }
        handle(line, channel: context.channel)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if error is ByteToMessageDecoderError.PayloadTooLargeError {
            Self.send(["ok": false, "error": "a request line longer than 64 KiB"], on: context.channel)
        }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        for o in observers { o.cancel() }
        observers.removeAll()
    }

    private func handle(_ line: String, channel: any Channel) {
        let request: [String: Any]
        do {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw ControlError("a request is a JSON object")
            }
            request = object
        } catch let error as ControlError {
            return Self.send(["ok": false, "error": error.description], on: channel)
        } catch {
            return Self.send(["ok": false, "error": "not JSON: \(line.prefix(80))"], on: channel)
        }
        if request["command"] as? String == "screenshot" {
            screenshot(request, channel: channel)
            return
        }
        var answer: [String: Any]
        do {
            answer = try perform(request, channel: channel)
        } catch let error as ControlError {
            answer = ["ok": false, "error": error.description]
        } catch {
            answer = ["ok": false, "error": "\(error)"]
        }
        if let id = request["id"] { answer["id"] = id }
        Self.send(answer, on: channel)
    }

    private func perform(_ request: [String: Any], channel: any Channel) throws -> [String: Any] {
        guard let command = request["command"] as? String else { throw ControlError("no \"command\"") }
        let player = telemetry.player
        switch command {
        case "get":
            return ["ok": true, "data": try Properties.get(try name(request), telemetry: telemetry)]
        case "set":
            guard let value = request["value"] else { throw ControlError("set: no \"value\"") }
            try Properties.set(try name(request), to: value, player: player)
            return ["ok": true]
        case "pause":
            do throws(PlayerError) { try player.pause() } catch { throw ControlError("\(error)") }
            return ["ok": true]
        case "play", "resume":
            player.resume()
            return ["ok": true]
        case "displayOff":
            player.displayOff()
            return ["ok": true]
        case "displayOn":
            player.displayOn()
            return ["ok": true]
        case "next":
            guard let next else { throw ControlError("next: no playlist is playing") }
            next()
            return ["ok": true]
        case "observe":
            let property = try name(request)
            observers.append(property == "events" ? observeEvents(channel) : try observe(property, channel))
            return ["ok": true]
        default:
            throw ControlError("unknown command \"\(command)\"")
        }
    }

    /// Takes the screenshot on ``screenshots`` and answers from there.
    private func screenshot(_ request: [String: Any], channel: any Channel) {
        let player = telemetry.player
        let id = request["id"].map { SendableJSON($0) }
        let maxWidth = request["maxWidth"] as? Int
        let path = request["path"] as? String
        let badWidth = request["maxWidth"] != nil && maxWidth == nil
        Self.screenshots.async {
            var answer: [String: Any]
            do {
                if badWidth { throw ControlError("screenshot: maxWidth is a number of pixels") }
                let shot = try player.snapshot(maxWidth: maxWidth)
                var data: [String: Any] = [
                    "width": shot.width, "height": shot.height, "mediaTime": shot.mediaTime, "bytes": shot.png.count,
                ]
                if let path {
                    do { try Data(shot.png).write(to: URL(fileURLWithPath: path)) } catch {
                        throw ControlError("screenshot: cannot write \(path): \(error.localizedDescription)")
                    }
                    data["path"] = path
                } else {
                    data["png"] = Data(shot.png).base64EncodedString()
                }
                answer = ["ok": true, "data": data]
            } catch {
                answer = ["ok": false, "error": "\(error)"]
            }
            if let id { answer["id"] = id.value }
            Self.send(answer, on: channel)
        }
    }

    private func name(_ request: [String: Any]) throws -> String {
        guard let p = request["property"] as? String else { throw ControlError("no \"property\"") }
        return p
    }

    private func observe(_ property: String, _ channel: any Channel) throws -> Task<Void, Never> {
        _ = try Properties.get(property, telemetry: telemetry)  // a known property
        let telemetry = self.telemetry
        return Task {
            var last: Data?
            while !Task.isCancelled, channel.isActive {
                if let value = try? Properties.get(property, telemetry: telemetry) {
                    let line = ["event": "propertyChange", "name": property, "data": value] as [String: Any]
                    if let data = try? JSONSerialization.data(
                        withJSONObject: line, options: [.sortedKeys, .fragmentsAllowed]),
                        data != last
                    {
                        last = data
                        Self.write(data, on: channel)
                    }
                }
                // Sampled 4×/s on purpose: most properties (latency, buffer, position) change
                // continuously and have no event; a change is sent once, when it is seen.
                try? await Task.sleep(for: .milliseconds(250))
            }
        }
    }

    private func observeEvents(_ channel: any Channel) -> Task<Void, Never> {
        let (events, cancel) = telemetry.events()
        return Task {
            await withTaskCancellationHandler {
                for await event in events {
                    var object = EventJSON.fields(of: event)
                    object["event"] = object.removeValue(forKey: "type")
                    Self.send(object, on: channel)
                }
            } onCancel: {
                cancel()
            }
        }
    }

    static func send(_ object: [String: Any], on channel: any Channel) {
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        write(data, on: channel)
    }

    static func write(_ data: Data, on channel: any Channel) {
        var buffer = channel.allocator.buffer(capacity: data.count + 1)
        buffer.writeBytes(data)
        buffer.writeInteger(UInt8(ascii: "\n"))
        channel.writeAndFlush(buffer, promise: nil)
    }
}

/// The properties `get`, `set` and `observe` name.
enum Properties {
    static func get(_ name: String, telemetry: FleetTelemetry) throws -> Any {
        let player = telemetry.player
        func number(_ v: Double?) -> Any { v.map { $0 as Any } ?? NSNull() }
        switch name {
        case "state": return player.state.rawValue
        case "latency": return number(player.status.latency)
        case "targetLatency": return number(player.status.targetLatency)
        case "buffer": return player.status.buffer
        case "position": return number(player.status.position)
        case "rate": return player.status.playbackRate
        case "volume": return player.volume
        case "muted": return player.isMuted
        case "framesPresented": return player.status.framesPresented
        case "framesDropped": return player.status.framesDropped
        case "width": return player.status.width
        case "height": return player.status.height
        case "timeOffset": return player.status.timeOffset
        case "delay": return player.status.delay
        case "source": return player.source?.absoluteString ?? NSNull()
        case "displayOff": return player.isDisplayOff
        case "output": return telemetry.output ?? NSNull()
        case "audioUnderrun": return player.status.audioSilence
        case "fit": return player.fit.description
        case "captions": return player.captions.description
        case "selectedQuality": return player.selectedQuality ?? NSNull()
        case "qoe": return try object(telemetry.record)
        case "venue": return try player.venueStatistics.map { try object($0) } ?? NSNull()
        case "status":
            let s = player.status
            return [
                "state": s.state.rawValue, "latency": number(s.latency), "targetLatency": number(s.targetLatency),
                "buffer": s.buffer, "position": number(s.position), "rate": s.playbackRate,
                "framesPresented": s.framesPresented,
                "framesDropped": s.framesDropped, "framesPerSecond": s.framesPerSecond, "width": s.width,
                "height": s.height,
                "timeOffset": s.timeOffset, "delay": s.delay, "avOffset": number(s.avOffset),
                "liveAnchor": s.liveAnchor.map(Self.anchor) ?? NSNull(),
            ] as [String: Any]
        default: throw ControlError("unknown property \"\(name)\"")
        }
    }

    /// A live anchor as JSON: `{"kind": "learned", "error": 0.0012}` (`error` only when learned).
    static func anchor(_ anchor: LiveAnchor) -> [String: Any] {
        switch anchor {
        case .learned(let error), .shared(let error): ["kind": anchor.kind, "error": error]
        default: ["kind": anchor.kind]
        }
    }

    static func set(_ name: String, to value: Any, player: Player) throws {
        func double() throws -> Double {
            guard let n = value as? NSNumber, type(of: n) == NSNumber.self else {
                throw ControlError("\(name): a number is wanted")
            }
            return n.doubleValue
        }
        func bool() throws -> Bool {
            guard case .flag(let b) = optionValue(value) else { throw ControlError("\(name): true or false is wanted") }
            return b
        }
        // The player's options that change while playing: parsed and checked by their rows.
        if let spec = OptionTable.live.first(where: { $0.name == name }), let live = spec.live {
            do { try live(player, optionValue(value)) } catch { throw ControlError("\(name): \(error.message)") }
            return
        }
        do {
            switch name {
            case "volume": try player.setVolume(try double())
            case "delay": _ = try player.setDelay(try double())
            case "displayOff": if try bool() { player.displayOff() } else { player.displayOn() }
            case "paused": if try bool() { try player.pause() } else { player.resume() }
            default: throw ControlError("property \"\(name)\" cannot be set")
            }
        } catch let error as ControlError {
            throw error
        } catch {
            throw ControlError("\(error)")
        }
    }

    /// A JSON value as an option's value.
    private static func optionValue(_ value: Any) -> OptionValue {
        switch value {
        // JSONSerialization's numbers are NSNumbers, its true and false a subclass of it (and
        // 0 and 1 cast to Bool): the class tells them apart.
        case let number as NSNumber where type(of: number) == NSNumber.self: .number(number.doubleValue)
        case let flag as Bool: .flag(flag)
        case let text as String: .text(text)
        case let items as [String]: .list(items)
        default: .other("\(type(of: value))")
        }
    }

    private static func object<T: Encodable>(_ value: T) throws -> Any {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .xsDateTime
        return try JSONSerialization.jsonObject(with: try encoder.encode(value))
    }
}

extension LiveAnchor {
    /// The anchor's kind as the control socket and the QoE record spell it: `availabilityStart`,
    /// `programDateTime`, `playlistAnswer`, `learned`, `shared`.
    var kind: String {
        switch self {
        case .availabilityStart: "availabilityStart"
        case .programDateTime: "programDateTime"
        case .playlistAnswer: "playlistAnswer"
        case .learned: "learned"
        case .shared: "shared"
        }
    }
}
