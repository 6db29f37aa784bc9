import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// What a plain socket client saw of one `GET` (HTTP/1.1, `Connection: close`): the bytes as
/// they came (chunk framing included) and how the connection ended. HTTP client libraries hide
/// the difference between a reset and a close, and never show a body cut short.
struct RawResponse {
    enum End: Equatable {
        /// The server closed the connection (FIN: `recv` returned 0).
        case closed
        /// The connection was reset (`ECONNRESET`).
        case reset
        /// Still open when the client stopped reading.
        case deadline
        /// Still open, and not a byte for the quiet time asked for since the last one came.
        case quiet
        case failed(Int32)
    }

    var head = ""
    var body: [UInt8] = []
    var end = End.deadline
    /// When the last byte arrived (Unix seconds).
    var lastArrival = 0.0

    var status: Int? { head.split(separator: " ").dropFirst().first.flatMap { Int($0) } }

    func header(_ name: String) -> String? {
        for line in head.split(separator: "\r\n").dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2, parts[0].lowercased() == name.lowercased() {
                return parts[1].trimmingCharacters(in: .whitespaces)
            }
        }
        return nil
    }

    var contentLength: Int? { header("Content-Length").flatMap { Int($0) } }
}

/// `GET url` over a plain TCP socket on a thread of its own (blocking reads would starve the
/// test's cooperative pool), reading until the server closes or resets, or `seconds` pass, or
/// (with `quiet`) no byte has come for that long since the last one: silence measured by the
/// reader, which a starved test process cannot mistake for bytes that came late.
func rawGET(_ url: URL, readFor seconds: Double = 10, quiet: Double? = nil) async -> RawResponse {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: rawGETBlocking(url, readFor: seconds, quiet: quiet)) }.start()
    }
}

/// A TCP socket connected to 127.0.0.1:`port` whose reads time out every 100 ms; -errno on failure.
private func connectedSocket(port: Int) -> Int32 {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { return -errno }
    var timeout = timeval(tv_sec: 0, tv_usec: 100_000)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else {
        let error = errno
        close(fd)
        return -error
    }
    return fd
}

private func rawGETBlocking(_ url: URL, readFor seconds: Double, quiet: Double?) -> RawResponse {
    var response = RawResponse()
    let fd = connectedSocket(port: url.port ?? 80)
    guard fd >= 0 else { return RawResponse(end: .failed(-fd)) }
    defer { close(fd) }
    let path = url.path + (url.query.map { "?" + $0 } ?? "")
    let request = Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(url.port ?? 80)\r\nConnection: close\r\n\r\n".utf8)
    guard send(fd, request, request.count, 0) == request.count else { return RawResponse(end: .failed(errno)) }
    var received: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    let deadline = Date().timeIntervalSince1970 + seconds
    while Date().timeIntervalSince1970 < deadline {
        let n = recv(fd, &buffer, buffer.count, 0)
        if n < 0, errno == EAGAIN || errno == EWOULDBLOCK, let quiet, response.lastArrival > 0,
            Date().timeIntervalSince1970 - response.lastArrival >= quiet
        {
            response.end = .quiet
            break
        }
        if n > 0 {
            received += buffer[..<n]
            response.lastArrival = Date().timeIntervalSince1970
        } else if n == 0 {
            response.end = .closed
            break
        } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            response.end = errno == ECONNRESET ? .reset : .failed(errno)
            break
        }
    }
    let separator = Array("\r\n\r\n".utf8)
    if let split = (0..<max(0, received.count - 3)).first(where: { received[$0..<$0 + 4].elementsEqual(separator) }) {
        response.head = String(decoding: received[..<split], as: UTF8.self)
        response.body = Array(received[(split + 4)...])
    }
    return response
}
