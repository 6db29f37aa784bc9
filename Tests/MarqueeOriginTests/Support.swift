import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Testing

@testable import MarqueeOrigin

/// The repository root, from this file's path.
let repoRoot: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().path

/// One origin with the default assets, started once for the whole suite.
actor SharedOrigin {
    static let shared = SharedOrigin()
    private var origin: Origin?
    let staticRoot: String = {
        let dir = NSTemporaryDirectory() + "marquee-origin-static-\(getpid())"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        try? Data("hello static\n".utf8).write(to: URL(fileURLWithPath: dir + "/hello.txt"))
        return dir
    }()

    func get() async throws -> Origin {
        if let origin { return origin }
        try makeAssets()
        var configuration = OriginConfiguration(assetRoots: OriginConfiguration.defaultAssets(repoRoot: repoRoot))
        configuration.staticRoot = staticRoot
        var logger = Logger(label: "test.origin")
        logger.logLevel = .warning
        let origin = try Origin(configuration: configuration, logger: logger)
        _ = try await origin.start()
        self.origin = origin
        return origin
    }

    /// `scripts/make-assets` (a no-op when the generated asset is there).
    private func makeAssets() throws {
        let status = try runBlocking(["\(repoRoot)/scripts/make-assets"]).status
        if status != 0 { throw OriginError(.assetNotFound, "scripts/make-assets failed") }
    }
}

struct Fetched {
    var status: Int
    var headers: HTTPHeaders
    var body: [UInt8]
    var text: String { String(decoding: body, as: UTF8.self) }
}

func fetch(_ url: URL, method: HTTPMethod = .GET, headers: [(String, String)] = []) async throws -> Fetched {
    var request = HTTPClientRequest(url: url.absoluteString)
    request.method = method
    for (name, value) in headers { request.headers.add(name: name, value: value) }
    let response = try await HTTPClient.shared.execute(request, timeout: .seconds(10))
    var body = try await response.body.collect(upTo: 64 << 20)
    return Fetched(
        status: Int(response.status.code), headers: response.headers,
        body: body.readBytes(length: body.readableBytes) ?? [])
}

/// Runs a command on a thread of its own (not the cooperative pool, where it would hold up the
/// origin's pacing under test); returns its exit status and standard output.
@discardableResult
func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try runBlocking(arguments) }) }.start()
    }
}

@discardableResult
func runBlocking(_ arguments: [String]) throws -> (status: Int32, output: String) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: data, as: UTF8.self))
}

/// Writes `init + segment` to a temporary file and returns the pts of every decoded frame
/// (ffprobe -show_frames decodes each one), in the stream's time base.
func decodedFramePTS(_ initSegment: [UInt8], _ segment: [UInt8], stream: String) async throws -> [Int64] {
    let path = NSTemporaryDirectory() + "marquee-origin-\(UUID().uuidString).mp4"
    defer { try? FileManager.default.removeItem(atPath: path) }
    try Data(initSegment + segment).write(to: URL(fileURLWithPath: path))
    let (status, output) = try await run([
        "ffprobe", "-v", "error", "-select_streams", stream, "-show_frames",
        "-show_entries", "frame=pts", "-of", "csv=p=0", path,
    ])
    guard status == 0 else { return [] }
    return output.split(separator: "\n").compactMap { Int64($0.split(separator: ",").first ?? "") }
}

/// The first tfdt of a segment, read back with the origin's box reader.
func firstDecodeTime(_ bytes: [UInt8]) throws -> (value: UInt64, version: UInt8) {
    let reader = MP4Reader(bytes: bytes, name: "served")
    guard let tfdt = try reader.find([.moof, .traf, .tfdt]).first else { throw OriginError(.malformedMP4, "no tfdt") }
    return (try MediaSegmentTiming.decodeTime(reader, tfdt), try reader.fullBoxHeader(tfdt).version)
}

func now() -> Double { Date().timeIntervalSince1970 }

/// Runs `body` and says how long this process's tasks were held back meanwhile (a 10 ms
/// ticker's oversleep, summed): the origin's pacer and the test's client are tasks of the test
/// process, beside the suite's other tests, so a timing bound on them adds this time (the
/// process was not running) instead of a guess at the machine's load.
func measuringHeldBack<T: Sendable>(_ body: () async throws -> T) async rethrows -> (T, heldBack: Double) {
    let ticker = Task {
        var (held, last) = (0.0, now())
        while !Task.isCancelled {
            try? await Task.sleep(for: .milliseconds(10))
            let t = now()
            held += max(0, t - last - 0.012)
            last = t
        }
        return held
    }
    let result = try await body()
    ticker.cancel()
    return (result, await ticker.value)
}
