public import Foundation
public import Marquee
import MarqueeStreaming
import NIOCore

/// Images and files kept on the box so a schedule plays with the network down: content-
/// addressed (each object named by its SHA-256, one copy however many URLs share it), written
/// atomically (a temporary file, `fsync`, `rename`), bounded in size (the least recently used
/// objects no scheduled item needs go first).
///
/// A download is checked before it is kept: against the item's announced ``PlaylistItem/sha256``
/// when it has one (a mismatch is an error, tried again later, never played), and whole (its
/// `Content-Length`, the fetcher's). Streams are not cached (live ones cannot be; on-demand
/// DASH and HLS are not yet).
public final class ContentCache: Sendable {
    /// Where the objects and the index are.
    public let directory: URL
    /// The most bytes kept (objects a scheduled item needs are kept beyond it).
    public let maxBytes: Int
    private let fetcher: HTTPFetcher
    private let state: Locked<State>

    private struct Entry: Codable {
        var sha256: String
        var size: Int
        /// Unix seconds it was last read or stored.
        var used: Double
    }

    private struct State {
        var index: [String: Entry] = [:]
    }

    /// The largest object fetched (bytes): a playlist's file limit.
    package static let maxObjectBytes = PlaylistPlayer.maxFileBytes

    /// A cache in `directory` (created when missing) of at most `maxBytes`; what an earlier run
    /// kept is found again (an object whose bytes no longer match its name is dropped).
    public init(directory: URL, maxBytes: Int = 2 << 30, headers: [String: String] = [:]) throws(PlayerError) {
        self.directory = directory
        self.maxBytes = maxBytes
        self.fetcher = HTTPFetcher(headers: headers.map { ($0.key, $0.value) })
        do {
            try FileManager.default.createDirectory(
                at: directory.appendingPathComponent("objects"), withIntermediateDirectories: true)
        } catch {
            throw PlayerError(.output, "content cache: cannot create \(directory.path): \(error.localizedDescription)")
        }
        var index =
            (try? JSONDecoder().decode(
                [String: Entry].self, from: Data(contentsOf: directory.appendingPathComponent("index.json")))) ?? [:]
        index = index.filter {
            FileManager.default.fileExists(atPath: directory.appendingPathComponent("objects/\($0.value.sha256)").path)
        }
        state = Locked(State(index: index))
    }

    /// Bytes held (each object once).
    public var totalBytes: Int {
        state.withLock { state in
            var seen = Set<String>()
            return state.index.values.reduce(0) { seen.insert($1.sha256).inserted ? $0 + $1.size : $0 }
        }
    }

    /// Whether `url`'s bytes are kept (and match `sha256`, when given).
    public func contains(_ url: URL, sha256: String? = nil) -> Bool {
        state.withLock { state in state.index[url.absoluteString].map { sha256 == nil || $0.sha256 == sha256 } ?? false
        }
    }

    /// The SHA-256 of `url`'s kept bytes, nil when they are not kept.
    public func sha256(of url: URL) -> String? { state.withLock { $0.index[url.absoluteString]?.sha256 } }

    /// `url`'s bytes from the cache, nil when they are not kept, do not match `sha256` (when
    /// given) or no longer match their own hash on disk.
    public func bytes(for url: URL, sha256: String? = nil) -> [UInt8]? {
        guard let entry = state.withLock({ $0.index[url.absoluteString] }), sha256 == nil || entry.sha256 == sha256
        else { return nil }
        guard let data = FileManager.default.contents(atPath: objectURL(entry.sha256).path) else { return nil }
        let bytes = [UInt8](data)
        guard sha256Hex(bytes) == entry.sha256 else {
            state.withLock { _ = $0.index.removeValue(forKey: url.absoluteString) }  // damaged on disk
            return nil
        }
        state.withLock { $0.index[url.absoluteString]?.used = Date().timeIntervalSince1970 }
        return bytes
    }

    /// Fetches `url` into the cache (unless kept already, matching `sha256`): checked against
    /// `sha256` when given, written atomically. Returns the bytes. Throws
    /// `PlayerError.Code.network` when the download fails and
    /// `PlayerError.Code.media` when it does not match.
    @discardableResult
    public func fetch(_ url: URL, sha256: String? = nil) async throws(PlayerError) -> [UInt8] {
        if let kept = bytes(for: url, sha256: sha256) { return kept }
        let bytes: [UInt8]
        if url.isFileURL {
            do { bytes = try LocalFile.read(url.path, maxBytes: Self.maxObjectBytes, what: "item") } catch {
                throw PlayerError(.network, error.message)
            }
        } else {
            var policy = FetchPolicy.manifest
            policy.attempts = 2
            do {
                bytes = [UInt8](
                    try await fetcher.get(url, policy: policy, maxBytes: Self.maxObjectBytes).body.readableBytesView)
            } catch {
                throw PlayerError(.network, "\(Redact.url(url)): \(error)")
            }
        }
        let hash = sha256Hex(bytes)
        if let sha256, hash != sha256 {
            throw PlayerError(
                .media,
                "\(Redact.url(url)): its bytes hash to \(hash), not the announced \(sha256): not kept, not played")
        }
        try store(bytes, hash: hash)
        state.withLock {
            $0.index[url.absoluteString] = Entry(sha256: hash, size: bytes.count, used: Date().timeIntervalSince1970)
        }
        try saveIndex()
        return bytes
    }

    /// The image and file items (http, https) `schedule` plays from `from` for `horizon`
    /// seconds, each once.
    public static func needs(_ schedule: Schedule, from: Date, horizon: Double) -> [PlaylistItem] {
        var seen = Set<String>()
        return schedule.plays(from: from, to: from.addingTimeInterval(horizon)).compactMap(\.item).filter { item in
            item.kind != .stream && !item.url.isFileURL && seen.insert(item.url.absoluteString).inserted
        }
    }

    /// Fetches what ``needs(_:from:horizon:)`` lists and is not kept, then evicts what none of
    /// it needs while over ``maxBytes``. Returns the items fetched and the failures (tried
    /// again at the next call).
    public func prefetch(_ schedule: Schedule, from: Date = Date(), horizon: Double = 86_400) async -> (
        fetched: Int, failed: [(URL, PlayerError)]
    ) {
        let needed = Self.needs(schedule, from: from, horizon: horizon)
        var fetched = 0
        var failed: [(URL, PlayerError)] = []
        for item in needed where !contains(item.url, sha256: item.sha256) {
            if Task.isCancelled { break }
            do throws(PlayerError) {
                try await fetch(item.url, sha256: item.sha256)
                fetched += 1
            } catch {
                failed.append((item.url, error))
            }
        }
        evict(keeping: Set(needed.map(\.url)))
        return (fetched, failed)
    }

    /// While over ``maxBytes``: drops the least recently used URLs not in `pinned`, and each
    /// object no URL kept names.
    public func evict(keeping pinned: Set<URL>) {
        let pinnedKeys = Set(pinned.map(\.absoluteString))
        let removed: [String] = state.withLock { state in
            var total: Int {
                var seen = Set<String>()
                return state.index.values.reduce(0) { seen.insert($1.sha256).inserted ? $0 + $1.size : $0 }
            }
            for (key, _) in state.index.sorted(by: { $0.value.used < $1.value.used })
            where total > maxBytes && !pinnedKeys.contains(key) {
                state.index.removeValue(forKey: key)
            }
            let live = Set(state.index.values.map(\.sha256))
            let files =
                (try? FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("objects").path))
                ?? []
            return files.filter { !$0.hasSuffix(".tmp") && !live.contains($0) }
        }
        for name in removed { try? FileManager.default.removeItem(at: objectURL(name)) }
        try? saveIndex()
    }

    private func objectURL(_ hash: String) -> URL { directory.appendingPathComponent("objects/\(hash)") }

    /// Writes `bytes` as object `hash`: a temporary file, fsync, rename (a crash leaves the
    /// old state or the new, never half an object under its name).
    private func store(_ bytes: [UInt8], hash: String) throws(PlayerError) {
        let target = objectURL(hash)
        if FileManager.default.fileExists(atPath: target.path) { return }
        try DurableFile.replace(bytes, at: target)
    }

    private func saveIndex() throws(PlayerError) {
        let index = state.withLock { $0.index }
        guard let data = try? JSONEncoder().encode(index) else { return }
        try DurableFile.replace([UInt8](data), at: directory.appendingPathComponent("index.json"))
    }
}
