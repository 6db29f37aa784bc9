import Foundation
import Logging
import MarqueeStreaming

#if canImport(Glibc)
    import Glibc
#endif

/// Finds the venue's other boxes with DNS-SD over multicast DNS, through the Avahi daemon
/// (Debian's avahi-daemon; works on a LAN without internet): this box's proxy is published as
/// a `_marquee-venue._tcp` service (`avahi-publish`), and the services others publish are
/// followed (`avahi-browse`): each resolved one becomes a peer (``VenueProxy/addPeer(_:)``), each
/// that goes away is dropped. A box that finds itself is told apart by its name (its hello).
///
/// Without Avahi's tools or daemon, discovery logs why once and the configured peers are all
/// there is.
final class PeerDiscovery: Sendable {
    static let serviceType = "_marquee-venue._tcp"
    private let logger: Logger
    private let state = Locked(State())

    private struct State {
        var processes: [Process] = []
        var names: [String: PeerAddress] = [:]
        var pending = Data()
        /// What ``start`` waits for before `settled`: the first look over, this box's own
        /// service established (or its publisher gone).
        var lookedOnce = false
        var published = false
        var settled = false
        var publisherOutput = Data()
    }

    /// Seconds after this box's service is established during which the boxes that published
    /// at the same moment (a venue starting together) are still being found.
    static let publishedGrace = 0.3

    /// Records one of the two things settling waits for; calls `settled` once both are there.
    private func progress(lookedOnce: Bool = false, published: Bool = false, settled: @Sendable () -> Void) {
        let now = state.withLock { s -> Bool in
            s.lookedOnce = s.lookedOnce || lookedOnce
            s.published = s.published || published
            guard s.lookedOnce, s.published, !s.settled else { return false }
            s.settled = true
            return true
        }
        if now { settled() }
    }

    init(logger: Logger) {
        self.logger = logger
    }

    /// Publishes `box` on `port` and follows the others, handing each found or lost peer on.
    /// `settled` is called once the services already there have been looked up (a first browse
    /// that ends when the daemon has answered for now) and this box's own service is established
    /// (plus ``publishedGrace``: boxes started together publish together, after the first look
    /// may already have ended), or at once without discovery.
    func start(
        box: String, port: Int, found: @escaping @Sendable (PeerAddress) -> Void,
        lost: @escaping @Sendable (PeerAddress) -> Void,
        settled: @escaping @Sendable () -> Void
    ) {
        guard let publish = Self.tool("avahi-publish"), let browse = Self.tool("avahi-browse") else {
            logger.notice("venue: no DNS-SD discovery (avahi-utils is not installed): the configured peers only")
            settled()
            return
        }
        // The first look: -t ends once the daemon has answered "all for now" and resolved them.
        let first = Process()
        first.executableURL = browse
        first.arguments = ["-r", "-p", "-k", "-t", Self.serviceType]
        let firstPipe = Pipe()
        first.standardOutput = firstPipe
        first.standardError = FileHandle.nullDevice
        first.terminationHandler = { [weak self] _ in
            let data = firstPipe.fileHandleForReading.readDataToEndOfFile()
            if let self {
                for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
                    self.handle(String(line), found: found, lost: lost)
                }
            }
            self?.progress(lookedOnce: true, settled: settled)
        }
        do { try first.run() } catch { progress(lookedOnce: true, settled: settled) }
        let publisher = Process()
        publisher.executableURL = publish
        publisher.arguments = ["-s", box, Self.serviceType, "\(port)", "box=\(box)"]
        // "Established under name '…'" once the daemon has probed the name and announced it.
        let publisherPipe = Pipe()
        publisher.standardOutput = publisherPipe
        publisher.standardError = publisherPipe
        publisherPipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard !data.isEmpty else {
                handle.readabilityHandler = nil
                self?.progress(published: true, settled: settled)  // the publisher is gone: nothing to wait for
                return
            }
            guard let self else { return }
            // (its output kept until then: the line may come in two reads)
            let heard = self.state.withLock { s -> Bool in
                s.publisherOutput.append(data)
                return String(decoding: s.publisherOutput, as: UTF8.self).contains("Established under name")
            }
            guard heard else { return }
            DispatchQueue.global().asyncAfter(deadline: .now() + Self.publishedGrace) { [self] in
                self.progress(published: true, settled: settled)
            }
        }
        let browser = Process()
        browser.executableURL = browse
        // -r resolve, -p parsable, -k no name decoding, no -t: keeps following.
        browser.arguments = ["-r", "-p", "-k", Self.serviceType]
        let pipe = Pipe()
        browser.standardOutput = pipe
        browser.standardError = FileHandle.nullDevice
        pipe.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self, !data.isEmpty else {
                handle.readabilityHandler = nil
                return
            }
            for line in self.lines(appending: data) { self.handle(line, found: found, lost: lost) }
        }
        do {
            try publisher.run()
            try browser.run()
            state.withLock { $0.processes = [publisher, browser] }
            logger.info("venue: published \(box) as \(Self.serviceType) on port \(port), browsing for peers")
        } catch {
            logger.notice("venue: no DNS-SD discovery (\(error)): the configured peers only")
            if publisher.isRunning { publisher.terminate() }
            progress(published: true, settled: settled)
        }
    }

    func stop() {
        let processes = state.withLock { s in
            defer { s.processes = [] }
            return s.processes
        }
        // SIGKILL: avahi-publish was seen to outlive a SIGTERM (and waiting on it then hangs).
        // The daemon withdraws a service whose client goes away.
        for p in processes where p.isRunning {
            kill(p.processIdentifier, SIGKILL)
            p.waitUntilExit()
        }
    }

    private func lines(appending data: Data) -> [String] {
        state.withLock { s in
            s.pending.append(data)
            var out: [String] = []
            while let newline = s.pending.firstIndex(of: 0x0A) {
                out.append(String(decoding: s.pending[s.pending.startIndex..<newline], as: UTF8.self))
                s.pending.removeSubrange(s.pending.startIndex...newline)
            }
            return out
        }
    }

    /// One `avahi-browse -p` line: `=;iface;IPv4;name;type;domain;host;address;port;txt`
    /// (resolved) or `-;iface;IPv4;name;type;domain` (gone).
    private func handle(_ line: String, found: (PeerAddress) -> Void, lost: (PeerAddress) -> Void) {
        let f = line.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        guard f.count >= 6, f[4] == Self.serviceType else { return }
        let key = f[1] + ";" + f[2] + ";" + f[3]
        if f[0] == "=", f.count >= 9, let port = Int(f[8]), (1...65535).contains(port), !f[7].isEmpty {
            let address = PeerAddress(host: f[7], port: port)
            state.withLock { $0.names[key] = address }
            logger.info("venue: found peer \(f[3]) at \(address)")
            found(address)
        } else if f[0] == "-", let address = state.withLock({ $0.names.removeValue(forKey: key) }) {
            logger.info("venue: peer \(f[3]) at \(address) went away")
            lost(address)
        }
    }

    private static func tool(_ name: String) -> URL? {
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let url = URL(fileURLWithPath: String(dir)).appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }
}
