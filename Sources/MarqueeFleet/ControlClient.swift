import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A client of the ``ControlSocket``: `marquee ctl` and the tests. Blocking, one connection.
public final class ControlClient {
    private let fd: Int32
    private var pending = [UInt8]()
    private var scanned = 0  // bytes of `pending` known to hold no newline

    /// Connects to the socket at `path`; throws ``ControlError`` with the system's reason
    /// (no such file, permission denied, refused).
    public init(path: String) throws {
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw ControlError("socket: \(String(cString: strerror(errno)))") }
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            close(fd)
            throw ControlError("\(path): a socket path is at most 107 bytes")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            let reason = String(cString: strerror(errno))
            close(fd)
            throw ControlError("\(path): \(reason)")
        }
    }

    deinit { close(fd) }

    /// Sends one request line (a JSON object).
    public func send(_ request: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: request) + Data("\n".utf8)
        try data.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = write(fd, raw.baseAddress! + offset, raw.count - offset)
                guard n > 0 else { throw ControlError("write: \(String(cString: strerror(errno)))") }
                offset += n
            }
        }
    }

    /// The next line the socket sends, as a JSON object; nil when it has closed.
    public func receive() throws -> [String: Any]? {
        while true {
            if let newline = pending[scanned...].firstIndex(of: UInt8(ascii: "\n")) {
                let line = Data(pending[..<newline])
                pending.removeSubrange(...newline)
                scanned = 0
                guard let object = try JSONSerialization.jsonObject(with: line) as? [String: Any] else {
                    throw ControlError("not a JSON object: \(String(decoding: line, as: UTF8.self))")
                }
                return object
            }
            scanned = pending.count
            var buffer = [UInt8](repeating: 0, count: 65_536)
            let n = read(fd, &buffer, buffer.count)
            if n < 0 { throw ControlError("read: \(String(cString: strerror(errno)))") }
            if n == 0 { return nil }
            pending += buffer[..<n]
        }
    }

    /// Sends `request` and returns its answer (the next line that is not an observed value).
    public func request(_ request: [String: Any]) throws -> [String: Any] {
        try send(request)
        while let line = try receive() {
            if line["event"] == nil { return line }
        }
        throw ControlError("the socket closed before answering")
    }
}
