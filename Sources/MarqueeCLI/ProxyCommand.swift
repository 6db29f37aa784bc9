import ArgumentParser
import Foundation
import Logging
import MarqueeVenue

struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: """
            Run a venue proxy: any HTTP player (Marquee, ffmpeg, ...) plays /u/<scheme>/<host[:port]>/<path> of it \
            instead of the upstream URL.
            """,
        discussion: """
            Manifests are rewritten to lead back through the proxy; segments are stored (bounded) and \
            concurrent requests for one are fetched once. Only the --upstream hosts are served (403 \
            for any other). With --sharing onlyOnLAN or always, segments are shared with the --peer \
            boxes, every byte from a peer verified against the CDN before use. GET /venue/stats is \
            the delivery figures as JSON.
            """)

    @Option(
        name: .long, help: "An upstream host served, host or host:port (\"*.\" prefix: subdomains); repeat for several."
    )
    var upstream: [String] = []

    @Option(help: "Address to listen on (0.0.0.0: for the venue's other boxes and players too).")
    var host: String = "127.0.0.1"

    @Option(help: "Port to listen on (0 picks a free one).")
    var port: Int = 8090

    @Option(name: .long, help: "The segment store's size in MiB.")
    var storeMib: Int = 256

    @Option(name: .long, help: "Share segments with peers: never, onlyOnLAN or always.")
    var sharing: String = "never"

    @Option(name: .long, help: "A peer box's proxy, host:port (repeat for several).")
    var peer: [String] = []

    @Option(name: .long, help: "This box's name among its peers (default: the host name).")
    var box: String?

    @Flag(name: .long, help: "Do not publish this box or find peers with DNS-SD (Avahi); the --peer boxes only.")
    var noDiscovery = false

    @Option(
        name: .long,
        help: """
            A file holding the venue's key (at least 16 bytes), which every box of the venue holds: peers prove it and \
            vouch for their bytes with it (default: the venue-key credential).
            """
    )
    var venueKeyFile: String?

    @Option(name: .long, help: "Print the proxy URL to play for this upstream manifest URL (repeat for several).")
    var url: [String] = []

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error.")
    var logLevel: String = "notice"

    func run() async throws {
        guard let policy = SharingPolicy(rawValue: sharing) else {
            throw ValidationError("--sharing \(sharing): expected never, onlyOnLAN or always")
        }
        var logger = Logger(label: "marquee.venue")
        logger.logLevel = Logger.Level(rawValue: logLevel) ?? .notice
        var configuration = VenueConfiguration(
            host: host, port: port, upstreams: upstream, storeBytes: storeMib << 20, sharing: policy, peers: peer)
        if let box { configuration.boxId = box }
        configuration.discovery = !noDiscovery
        configuration.venueKey = try VenueKey.read(file: venueKeyFile)
        let proxy: VenueProxy
        do { proxy = try VenueProxy(configuration: configuration, logger: logger) } catch {
            throw ValidationError("\(error)")
        }
        let bound = try await proxy.start()
        say("proxy on http://\(host):\(bound), serving \(upstream.joined(separator: ", ")), sharing \(policy.rawValue)")
        for text in url {
            guard let upstreamURL = URL(string: text) else { throw ValidationError("--url \(text) is not a URL") }
            do { say("  \(try proxy.localURL(for: upstreamURL).absoluteString)") } catch {
                throw ValidationError("--url \(text): \(error)")
            }
        }
        await Signals.waitForInterrupt()
        await proxy.stop()
        if let json = try? JSONEncoder().encode(proxy.statistics) {
            say("venue: " + String(decoding: json, as: UTF8.self))
        }
    }
}
