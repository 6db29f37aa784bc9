import Foundation
import MarqueeStreaming
import NIOCore

/// Keeps remote audio files (mute music, ad creatives) on disk, so they play without the
/// network once fetched. A file is fetched once and kept; a local file is used in place.
struct MediaCache: Sendable {
    let directory: URL
    let fetcher: HTTPFetcher
    /// The largest file taken, bytes.
    static let maxBytes = 256 << 20

    static func defaultDirectory() -> URL {
        let env = ProcessInfo.processInfo.environment
        if let xdg = env["XDG_CACHE_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("marquee")
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/marquee")
    }

    /// The local path of `url`: itself for a file; for http(s) the cached copy, fetched first
    /// when there is none. Throws a ``PlayerError`` (`.network` or `.media`) when it cannot.
    func path(for url: URL) async throws(PlayerError) -> String {
        if url.isFileURL || url.scheme == nil {
            guard FileManager.default.isReadableFile(atPath: url.path) else {
                throw PlayerError(.media, "\(url.path) cannot be read")
            }
            return url.path
        }
        let file = directory.appendingPathComponent(Self.name(for: url))
        if FileManager.default.fileExists(atPath: file.path) { return file.path }
        let body: [UInt8]
        do {
            let result = try await fetcher.get(url, timeout: .seconds(60), maxBytes: Self.maxBytes)
            body = Array(result.body.readableBytesView)
        } catch {
            throw PlayerError(error)
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let partial = file.appendingPathExtension("partial")
            try Data(body).write(to: partial)
            _ = try? FileManager.default.removeItem(at: file)
            try FileManager.default.moveItem(at: partial, to: file)
        } catch {
            throw PlayerError(.media, "cannot cache \(Redact.url(url)) in \(directory.path): \(error)")
        }
        return file.path
    }

    /// A stable file name: FNV-1a of the URL, and its extension (a hint for the demuxer).
    static func name(for url: URL) -> String {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        for b in url.absoluteString.utf8 {
            h ^= UInt64(b)
            h = h &* 0x100_0000_01b3
        }
        let ext = url.pathExtension.isEmpty ? "" : ".\(url.pathExtension)"
        return String(h, radix: 16) + ext
    }
}
