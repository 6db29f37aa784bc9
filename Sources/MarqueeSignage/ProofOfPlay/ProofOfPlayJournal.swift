public import Crypto
public import Foundation
public import Marquee
import MarqueeStreaming

#if canImport(Glibc)
    import Glibc
#endif

/// The append-only, durable journal of completed plays (``PlayRecord``): one JSON line per
/// record in one file, each written and `fsync`ed before ``append(_:)`` returns, so a crash
/// or a power cut loses no record that was appended. A line cut short by one (the record being
/// written) is dropped when the journal is opened again: it was never appended.
///
/// Why a log file and not SQLite: the journal is only ever appended to and read in order,
/// a record is a few hundred bytes a play (a few a minute), and a torn tail is all a crash
/// can leave; one `write` and one `fsync` per record is the whole durability story, with no
/// schema, no extra library and nothing to vacuum. The upload position is kept beside it
/// (``uploadedThrough``, written atomically: a temporary file, `fsync`, `rename`).
public final class ProofOfPlayJournal: Sendable {
    /// The journal's file.
    public let url: URL
    /// This box's name in its records' ids.
    public let box: String
    /// The epoch of the records appended now (``PlayRecord/epoch``): the last record's, or a new
    /// random one for a journal without records.
    public let epoch: String
    /// The box's key: records are chained with HMAC-SHA256 under it (nil: SHA-256, which anyone
    /// can recompute after changing a record).
    private let key: SymmetricKey?
    private let state: Locked<State>

    private struct State {
        var fd: Int32
        var last: (sequence: Int, hash: String)
        var uploaded: Int
    }

    /// Opens (or creates) the journal at `url` for `box`, its records chained under `key` when
    /// given: its last record is found, a torn last line dropped. Throws
    /// `PlayerError.Code.output` when the file cannot be opened or written.
    public init(url: URL, box: String, key: SymmetricKey? = nil) throws(PlayerError) {
        self.url = url
        self.box = box
        self.key = key
        try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        let data = FileManager.default.contents(atPath: url.path) ?? Data()
        var keep = data.count
        if let lastNewline = data.lastIndex(of: UInt8(ascii: "\n")) {
            keep = lastNewline + 1
        } else {
            keep = 0
        }
        let fd = open(url.path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw PlayerError(.output, "proof of play: cannot open \(url.path): \(String(cString: strerror(errno)))")
        }
        if keep < data.count {
            // A record being written when the box went down: never appended.
            _ = ftruncate(fd, off_t(keep))
            _ = fsync(fd)
        }
        let records = Self.decode(data.prefix(keep))
        let last = records.last.map { ($0.sequence, $0.hash) } ?? (0, "")
        // A journal made again starts a new epoch: its sequence restarts, its ids do not repeat.
        epoch =
            records.last.map { $0.epoch ?? "" }
            ?? (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        let uploaded =
            (try? String(contentsOf: Self.cursorURL(url), encoding: .utf8)).flatMap {
                Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
            } ?? 0
        state = Locked(State(fd: fd, last: last, uploaded: min(uploaded, last.0)))
        DurableFile.syncDirectory(of: url)
    }

    deinit {
        state.withLock { _ = close($0.fd) }
    }

    /// Appends `draft` as the next record (its sequence, box, previous and hash are set here)
    /// and makes it durable. Returns the record written.
    @discardableResult
    public func append(_ draft: PlayRecord) throws(PlayerError) -> PlayRecord {
        try state.withLock { (state: inout State) throws(PlayerError) -> PlayRecord in
            var record = draft
            record.sequence = state.last.sequence + 1
            record.box = box
            record.epoch = epoch.isEmpty ? nil : epoch
            record.alg = key == nil ? nil : PlayRecord.keyedAlgorithm
            record.previous = state.last.hash
            record.hash = record.computedHash(key: key)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            guard var line = try? encoder.encode(record) else {
                throw PlayerError(.output, "proof of play: a record that cannot be encoded")
            }
            line.append(UInt8(ascii: "\n"))
            let written = line.withUnsafeBytes { write(state.fd, $0.baseAddress, $0.count) }
            guard written == line.count, fsync(state.fd) == 0 else {
                throw PlayerError(
                    .output, "proof of play: cannot write \(url.path): \(String(cString: strerror(errno)))")
            }
            state.last = (record.sequence, record.hash)
            return record
        }
    }

    /// The last record's sequence (0: none).
    public var lastSequence: Int { state.withLock { $0.last.sequence } }

    /// The records after `sequence`, at most `limit`, in order.
    public func records(after sequence: Int, limit: Int = .max) -> [PlayRecord] {
        let data = FileManager.default.contents(atPath: url.path) ?? Data()
        return Array(Self.decode(data).lazy.filter { $0.sequence > sequence }.prefix(limit))
    }

    /// The last sequence an upload delivered (0: none).
    public var uploadedThrough: Int { state.withLock { $0.uploaded } }

    /// Notes that the records through `sequence` were delivered: written atomically beside the
    /// journal before it returns.
    public func markUploaded(through sequence: Int) throws(PlayerError) {
        do {
            try DurableFile.replace(Array("\(sequence)\n".utf8), at: Self.cursorURL(url))
        } catch {
            throw PlayerError(.output, "proof of play: \(error.message)")
        }
        state.withLock { $0.uploaded = max($0.uploaded, sequence) }
    }

    /// What ``ProofOfPlayJournal/verify(_:key:)`` found.
    public struct Verification: Sendable, Hashable {
        /// Records read and found chained.
        public var records: Int
        /// The first line that breaks the chain (1-based) and why; nil when it holds.
        public var broken: (line: Int, why: String)?

        public init(records: Int, broken: (line: Int, why: String)?) {
            self.records = records
            self.broken = broken
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.records == b.records && a.broken?.line == b.broken?.line && a.broken?.why == b.broken?.why
        }
        public func hash(into hasher: inout Hasher) {
            hasher.combine(records)
            hasher.combine(broken?.line)
        }
    }

    /// Checks the journal at `url` record by record: each parses, follows the one before in
    /// sequence, names its hash as previous, and carries its own true hash; no end before its
    /// start. With the box's `key`, every record must be keyed with it (a record anyone could
    /// have hashed breaks the chain); without it, a keyed record cannot be checked and breaks it.
    public static func verify(_ url: URL, key: SymmetricKey? = nil) -> Verification {
        let data = FileManager.default.contents(atPath: url.path) ?? Data()
        var previous: (sequence: Int, hash: String) = (0, "")
        var count = 0
        for (index, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            if line.isEmpty { continue }
            guard let record = try? JSONDecoder().decode(PlayRecord.self, from: Data(line)) else {
                return Verification(records: count, broken: (index + 1, "not a record"))
            }
            if record.sequence != previous.sequence + 1 {
                return Verification(
                    records: count, broken: (index + 1, "sequence \(record.sequence) after \(previous.sequence)"))
            }
            if record.previous != previous.hash {
                return Verification(records: count, broken: (index + 1, "its previous hash is not the record before's"))
            }
            if key != nil, record.alg != PlayRecord.keyedAlgorithm {
                return Verification(records: count, broken: (index + 1, "not keyed with the box's key"))
            }
            if key == nil, record.alg == PlayRecord.keyedAlgorithm {
                return Verification(records: count, broken: (index + 1, "keyed: the box's key is needed to check it"))
            }
            guard Secrets.equal(record.hash, record.computedHash(key: key)) else {
                return Verification(records: count, broken: (index + 1, "its hash does not match its fields"))
            }
            if record.end < record.start || record.endMono < record.startMono {
                return Verification(records: count, broken: (index + 1, "it ends before it starts"))
            }
            previous = (record.sequence, record.hash)
            count += 1
        }
        return Verification(records: count, broken: nil)
    }

    private static func decode(_ data: Data) -> [PlayRecord] {
        let decoder = JSONDecoder()
        return data.split(separator: UInt8(ascii: "\n")).compactMap {
            try? decoder.decode(PlayRecord.self, from: Data($0))
        }
    }

    private static func cursorURL(_ url: URL) -> URL { url.appendingPathExtension("uploaded") }
}
