import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The systemd notification protocol (`sd_notify`): datagrams such as `READY=1`,
/// `WATCHDOG=1` and `STATUS=…` sent to the unix socket named by `$NOTIFY_SOCKET`
/// (a leading `@` names an abstract socket). Without the variable every call does nothing,
/// so the same binary runs under systemd (`Type=notify`, `WatchdogSec=`) and elsewhere.
package struct SystemdNotifier: Sendable {
    /// The socket path, or `nil` when not started by systemd with `NotifyAccess`.
    package let socketPath: String?
    /// Half of `$WATCHDOG_USEC`, seconds: how often ``watchdog()`` should be sent; `nil`
    /// without a watchdog.
    package let watchdogInterval: Double?

    /// Reads `NOTIFY_SOCKET`, `WATCHDOG_USEC` and `WATCHDOG_PID` from `environment` (the
    /// process's by default). The watchdog counts only when `WATCHDOG_PID` is absent or is this
    /// process.
    package init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
        socketPath = path
        if path != nil, let usec = environment["WATCHDOG_USEC"].flatMap(UInt64.init), usec > 0,
            environment["WATCHDOG_PID"].flatMap(Int32.init).map({ $0 == getpid() }) ?? true
        {
            watchdogInterval = Double(usec / 2) / 1_000_000
        } else {
            watchdogInterval = nil
        }
    }

    /// `READY=1`: startup finished (playback started).
    package func ready(status: String? = nil) { send(["READY=1"] + (status.map { ["STATUS=\($0)"] } ?? [])) }

    /// `WATCHDOG=1`: send only while the service is healthy (frames are being presented).
    package func watchdog() { send(["WATCHDOG=1"]) }

    /// `STATUS=…`: a one-line status shown by `systemctl status`.
    package func status(_ text: String) { send(["STATUS=\(text)"]) }

    /// `STOPPING=1`: shutdown has begun.
    package func stopping() { send(["STOPPING=1"]) }

    /// Sends `lines` as one datagram; returns whether it was delivered (false without a socket).
    @discardableResult
    package func send(_ lines: [String]) -> Bool {
        guard let socketPath, !lines.isEmpty else { return false }
        let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        var path = Array(socketPath.utf8)
        if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract namespace
        let capacity = MemoryLayout.size(ofValue: address.sun_path)
        guard path.count < capacity else { return false }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            raw.copyBytes(from: path)
        }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path.first == 0 ? 0 : 1))
        let message = Array(lines.joined(separator: "\n").utf8)
        let sent = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                message.withUnsafeBytes { sendto(fd, $0.baseAddress, $0.count, 0, sa, length) }
            }
        }
        return sent == message.count
    }
}
