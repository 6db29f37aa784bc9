import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A command-line tool failed.
public struct ToolFailure: Error, CustomStringConvertible {
    public var message: String
    public var description: String { message }
    public init(message: String) { self.message = message }
}

/// Runs external tools (ffmpeg, ffprobe) for tests.
public enum Tools {
    /// A loopback TCP port nobody listens on now, chosen by the kernel (a random pick in the
    /// ephemeral range collided with a connection of the loaded suites: a server that never
    /// started). The kernel hands ephemeral ports out in turn: not again soon.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0
            }
        }
        guard fd >= 0, bound else { throw ToolFailure(message: "no free loopback port") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Runs `tool` found on PATH; returns its stdout, throws on a non-zero exit.
    @discardableResult
    public static func run(_ tool: String, _ args: [String], cwd: URL? = nil) throws -> String {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [tool] + args
        if let cwd { p.currentDirectoryURL = cwd }
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        // Read stderr concurrently so a chatty tool cannot block on a full pipe.
        let errBox = DataBox()
        let reader = Thread { errBox.set(err.fileHandleForReading.readDataToEndOfFile()) }
        reader.start()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        let errors = errBox.wait()
        guard p.terminationStatus == 0 else {
            throw ToolFailure(
                message: "\(tool) \(args.joined(separator: " ")) failed: \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: data, as: UTF8.self)
    }

    /// Runs blocking work (a tool to its end, a reference decode) on a thread of its own: on the
    /// test process's cooperative pool (as many threads as cores) it would hold up every other
    /// test's tasks meanwhile: origins, players, pacing.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// Starts `tool` in the background (with `environment` added to ours); the caller ends it with
    /// ``stop(_:)``.
    public static func spawn(
        _ tool: String, _ args: [String], cwd: URL? = nil, environment: [String: String] = [:]
    ) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = [tool] + args
        if let cwd { p.currentDirectoryURL = cwd }
        if !environment.isEmpty {
            p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        p.standardInput = FileHandle.nullDevice
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    /// Ends a spawned process for sure: SIGTERM, then SIGKILL if it is still there after 2 s
    /// (an encoder left running would load every later test), and reaps it.
    public static func stop(_ process: Process) {
        guard process.isRunning else { return }
        process.terminate()
        for _ in 0..<20 where process.isRunning { usleep(100_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }

    public static func tempDirectory(_ prefix: String) throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "\(prefix)-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// The package root, from this file's path.
    public static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// `../shared/media/dashif-livesim2` beside the package.
    public static let sharedMedia = packageRoot.appendingPathComponent("../shared/media/dashif-livesim2").standardized
}

/// Bytes handed from the thread that read them to the one waiting for them (a condition
/// variable: ThreadSanitizer found the flag this used to poll unsynchronized).
private final class DataBox: @unchecked Sendable {
    private let condition = NSCondition()
    private var data: Data?

    func set(_ value: Data) {
        condition.lock()
        data = value
        condition.signal()
        condition.unlock()
    }

    func wait() -> Data {
        condition.lock()
        defer { condition.unlock() }
        while data == nil { condition.wait() }
        return data ?? Data()
    }
}
