import Foundation
import Glibc
import Logging
import Marquee
import MarqueeOrigin
import TestSupport
import Testing

/// `marquee play` under a systemd-like supervisor: what arrives on `$NOTIFY_SOCKET`.
@Suite struct SystemdNotifyTests {
    /// A bound unix datagram socket collecting what is sent to it.
    final class NotifySocket {
        let path: String
        let fd: Int32

        init() throws {
            path =
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "notify-\(UUID().uuidString.prefix(8)).sock"
                ).path
            fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
            let rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            guard rc == 0 else { throw ToolFailure(message: "bind \(path): errno \(errno)") }
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        }

        deinit {
            close(fd)
            unlink(path)
        }

        /// Datagrams received until `deadline` (monotonic seconds from ProcessInfo).
        func receive(until process: Process) -> [(time: Double, text: String)] {
            var out: [(Double, String)] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            let start = ProcessInfo.processInfo.systemUptime
            while process.isRunning || out.isEmpty || ProcessInfo.processInfo.systemUptime - start < 0.5 {
                let n = recv(fd, &buffer, buffer.count, 0)
                if n > 0 {
                    out.append(
                        (ProcessInfo.processInfo.systemUptime - start, String(decoding: buffer[0..<n], as: UTF8.self)))
                }
                if !process.isRunning && n <= 0 { break }
            }
            return out
        }
    }

    @Test func readyThenWatchdogWhilePresentingThenStopping() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        var logger = Logger(label: "test.origin")
        logger.logLevel = .warning
        let origin = try Origin(
            configuration: OriginConfiguration(
                assetRoots: OriginConfiguration.defaultAssets(repoRoot: Tools.packageRoot.path)),
            logger: logger)
        _ = try await origin.start()
        defer { Task { await origin.stop() } }
        let socket = try NotifySocket()
        let process = Process()
        process.executableURL = marquee
        process.arguments = [
            "play", origin.manifestURL(asset: "testpic_2s").absoluteString, "--audio", "null", "--duration", "4",
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["NOTIFY_SOCKET"] = socket.path
        environment["WATCHDOG_USEC"] = "1000000"  // ping every ≥ 0.5 s
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let messages = socket.receive(until: process)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let texts = messages.map(\.text)
        #expect(texts.first?.hasPrefix("READY=1") == true, "first message: \(texts.first ?? "none")")
        #expect(texts.last == "STOPPING=1")
        let pings = messages.filter { $0.text == "WATCHDOG=1" }.map(\.time)
        #expect(pings.count >= 4, "\(pings.count) watchdog pings in 4 s of playback")
        #expect(zip(pings, pings.dropFirst()).allSatisfy { $1 - $0 < 1.0 }, "pings more often than WATCHDOG_USEC")
    }

    @Test func withoutNotifySocketNothingIsSent() {
        let notifier = SystemdNotifier(environment: [:])
        #expect(notifier.socketPath == nil && notifier.watchdogInterval == nil)
        #expect(!notifier.send(["READY=1"]))
    }
}
