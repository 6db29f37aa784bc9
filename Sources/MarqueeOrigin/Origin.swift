import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import MarqueeServing
import MarqueeStreaming
import NIOCore

/// A loopback live DASH origin, like the DASH-IF live simulator: it loops VOD DASH assets into
/// endless wall-clock-synchronised live streams.
///
/// URLs:
/// - `/live/<key>_<value>/.../<asset>/<manifest>`: the dynamic MPD (options: ``LiveOptions``);
///   `.../<asset>/<rep>/init.mp4`, `.../<asset>/<rep>/<number>.m4s`, `.../<asset>/<rep>/t<time>.m4s`:
///   segments, with their tfdt rewritten to the live media time. Too early → 404, expired → 410.
/// - `/time/xsdate`, `/time/iso`, `/time/ms`, `/time?ms`, `/time/head` (GET/HEAD, `Date`), each
///   also as `/time/timeoffset_<s>/...` on an offset clock.
/// - `/static/<path>`: files of ``OriginConfiguration/staticRoot``.
/// - `/origin/stats`: the body bytes sent so far, as JSON (`{"bytes":…,"requests":…}`);
///   `/origin/stats?media` adds how many times each media path was answered (`"media":{…}`).
/// - `/origin/requests`: the last 2,048 requests (method, path, query) with the Common Media
///   Client Data each carried (`cmcd`: the `CMCD` query argument; `cmcdHeaders`: `CMCD-*`
///   headers), as JSON. A `CMCD` argument is otherwise ignored, as a CDN ignores it.
///
/// Media segments (and static media files) are answered `Cache-Control: public, max-age=60`
/// with their SHA-256 in `Repr-Digest` (RFC 9530); manifests and everything else `no-store`.
/// A media segment's `Range: bytes=` (one range) is answered 206 with those bytes (paced by
/// `bw_` from the range's first byte; the digest stays the whole segment's), 416 past its end.
/// - SNTP on UDP (``sntpServerPort``), listed in a manifest by the `utc_ntp` option.
///
/// The server is HummingbirdCore's HTTP/1 server driven directly (not `Application`;
/// `RunningServer`), so that the `Date` header can follow the request's offset clock.
public final class Origin: Sendable {
    public let configuration: OriginConfiguration
    private let logger: Logger
    private let responder: OriginResponder
    private let state = Locked(State())

    private let sntpPort = BoundPort()

    private struct State {
        var sntp: (any Channel)?
        var server: RunningServer?
    }

    /// Loads and indexes every asset; throws an ``OriginError`` naming the first bad one.
    public init(configuration: OriginConfiguration, logger: Logger) throws {
        self.configuration = configuration
        self.logger = logger
        var assets: [String: LoopAsset] = [:]
        for (name, directory) in configuration.assetRoots.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty, !name.contains("/"),
                !LiveOptions.looksLikeOption(Substring(name))
                    || !LiveOptions.keys.contains(String(name.prefix { $0 != "_" }))
            else {
                throw OriginError(.invalidConfiguration, "asset name \"\(name)\" cannot be told from a URL option")
            }
            let asset = try AssetLoader(name: name, directory: directory).load()
            logger.debug(
                """
                origin: asset \(name) loops \(asset.loopDuration) s, \
                \(asset.adaptationSets.flatMap(\.representations).map { "\($0.id): \($0.segments.count) segments" })
                """
            )
            assets[name] = asset
        }
        responder = OriginResponder(
            assets: assets, staticRoot: configuration.staticRoot, logger: logger, sntpPort: sntpPort)
    }

    /// Binds and serves in the background; returns the bound port.
    public func start() async throws -> Int {
        if let port = state.withLock({ $0.server?.port }) { return port }
        let responder = self.responder
        let host = configuration.host
        let fallback = Locked("\(host):\(configuration.port)")
        let server = try await RunningServer.start(host: host, port: configuration.port, logger: logger) {
            (request: Request, writer: consuming ResponseWriter, channel) in
            let response = await responder.respond(to: request, fallbackAuthority: fallback.withLock { $0 })
            do {
                try await writer.write(response: response.head, body: response.body)
            } catch let fault as ConnectionFault {
                // A body cut short (reset_, badlength_): Hummingbird closes the connection when
                // the responder throws, after a FIN; a reset must come first, so close here.
                if fault.reset {
                    try? await (channel as? any SocketOptionProvider)?.setSoLinger(linger(l_onoff: 1, l_linger: 0))
                        .get()
                    try? await channel.close()
                }
                throw fault
            }
        }
        let port = server.port
        fallback.withLock { $0 = "\(Self.urlHost(host)):\(port)" }
        let sntp = try? await SNTPServer.start(host: host, port: 0, clock: OriginClock())
        sntpPort.port = sntp?.localAddress?.port
        state.withLock {
            $0.sntp = sntp
            $0.server = server
        }
        logger.info("origin: listening on http://\(Self.urlHost(host)):\(port)")
        return port
    }

    /// Stops listening, lets in-flight responses finish (for up to 2 s) and closes the connections.
    public func stop() async {
        let (server, sntp) = state.withLock { state -> (RunningServer?, (any Channel)?) in
            defer { state = State() }
            return (state.server, state.sntp)
        }
        try? await sntp?.close()
        sntpPort.port = nil
        await server?.stop()
    }

    /// Starts (if needed) and serves until the calling task is cancelled.
    public func run() async throws {
        _ = try await start()
        let server = state.withLock { $0.server }
        await withTaskCancellationHandler {
            await server?.wait()
        } onCancel: {
            Task { await self.stop() }
        }
        await stop()
    }

    /// The UDP port of the origin's SNTP server (real time, no offset) once started.
    public var sntpServerPort: Int? { sntpPort.port }

    /// `http://127.0.0.1:<port>` (the configured port until ``start()`` has bound one).
    public var baseURL: URL {
        let port = state.withLock { $0.server?.port } ?? configuration.port
        return URL(string: "http://\(Self.urlHost(configuration.host)):\(port)")!
    }

    /// The live manifest URL of an asset: `http://127.0.0.1:<port>/live/<options...>/<asset>/<mpd name>`.
    /// `mpdName` defaults to the asset's VOD manifest name; `options` are `key_value` components
    /// (see ``LiveOptions``).
    public func manifestURL(asset: String, mpdName: String? = nil, options: [String] = []) -> URL {
        let name = mpdName ?? responder.assets[asset]?.manifestName ?? "manifest.mpd"
        var url = baseURL.appendingPathComponent("live")
        for component in options + [asset, name] { url.appendPathComponent(component) }
        return url
    }

    /// Names of the loaded assets.
    public var assetNames: [String] { responder.assets.keys.sorted() }

    /// The proof-of-play receiver at `POST /plays`.
    public var plays: PlayReceiver { responder.plays }

    private static func urlHost(_ host: String) -> String {
        if host == "0.0.0.0" || host.isEmpty { return "127.0.0.1" }
        return host.contains(":") ? "[\(host)]" : host
    }
}
