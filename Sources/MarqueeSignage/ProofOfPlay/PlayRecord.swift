import Crypto
import Foundation
import Marquee

/// One completed play (proof of play): what was shown, when, in which schedule entry, how
/// well. Appended to a ``ProofOfPlayJournal``, chained by hash: each record's ``hash`` covers
/// its fields and the ``previous`` record's hash, so a record changed, removed or reordered
/// breaks the chain (``ProofOfPlayJournal/verify(_:key:)``). With the box's key the hash is
/// an HMAC (``alg`` `hmac-sha256`): a record made without the key does not verify.
///
/// Times: ``start`` and ``end`` on the server clock (Unix seconds), both derived from the
/// monotonic clock (``startMono``, ``endMono``) and one measured offset, so a step of the
/// local wall clock never makes an end come before its start.
public struct PlayRecord: Codable, Sendable, Hashable {
    /// Its place in the journal, from 1.
    public var sequence: Int
    /// The journal's epoch: random, drawn when the journal was created, so that a journal made
    /// again (lost, wiped) never reuses an ``id``. Nil in records of journals made before it.
    public var epoch: String?
    /// `hmac-sha256` when ``hash`` is keyed with the box's key; nil: SHA-256.
    public var alg: String?
    /// The box that played it (``ProofOfPlayJournal/box``): with ``sequence``, the record's
    /// unique ``id``.
    public var box: String
    /// The item's id and URL.
    public var item: String
    public var url: String
    /// The schedule entry it played in (`slot lunch`, `interrupt ads`, `default`), nil
    /// outside a schedule.
    public var entry: String?
    /// The playlist it played from (a schedule's name), nil outside a schedule.
    public var playlist: String?
    /// SHA-256 of the bytes played (an image's, a file's), lowercase hex; nil for a stream.
    public var contentHash: String?
    /// Server-clock Unix seconds of its first picture and of its end.
    public var start: Double
    public var end: Double
    /// The monotonic clock's seconds then (this boot's).
    public var startMono: Double
    public var endMono: Double
    /// Pictures presented and dropped as late while it played.
    public var framesPresented: Int
    public var framesDropped: Int
    /// Whether the display was on (not blanked by `Player.displayOff()`) when it ended.
    public var displayOn: Bool
    /// How its turn ended: `finished` (its length, its end, or its schedule entry's end) or
    /// `skipped` (left by a command or a stop).
    public var outcome: String
    /// The previous record's ``hash`` ("" for the first).
    public var previous: String
    /// SHA-256 (hex) of ``previous`` and this record's fields (as JSON with sorted keys and an
    /// empty hash).
    public var hash: String

    /// A record to append (``ProofOfPlayJournal/append(_:)`` sets its sequence, box and hashes).
    public init(
        item: String, url: String, entry: String? = nil, playlist: String? = nil, contentHash: String? = nil,
        start: Double, end: Double,
        startMono: Double, endMono: Double, framesPresented: Int = 0, framesDropped: Int = 0, displayOn: Bool = true,
        outcome: String = "finished"
    ) {
        (self.sequence, self.box, self.previous, self.hash) = (0, "", "", "")
        (self.item, self.url, self.entry, self.playlist, self.contentHash) = (item, url, entry, playlist, contentHash)
        (self.start, self.end, self.startMono, self.endMono) = (start, end, startMono, endMono)
        (self.framesPresented, self.framesDropped, self.displayOn, self.outcome) = (
            framesPresented, framesDropped, displayOn, outcome
        )
    }

    /// `box-epoch-sequence`: unique across boxes and journals; an upload's receiver keys on it.
    public var id: String { epoch.map { "\(box)-\($0)-\(sequence)" } ?? "\(box)-\(sequence)" }

    /// Seconds it played.
    public var duration: Double { end - start }

    /// The bytes the hash covers: the record as JSON with sorted keys and an empty ``hash``.
    func canonical() -> Data {
        var unhashed = self
        unhashed.hash = ""
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return (try? encoder.encode(unhashed)) ?? Data()
    }

    /// The hash this record should carry: keyed with `key` when it says so (``alg``).
    func computedHash(key: SymmetricKey? = nil) -> String {
        if alg == Self.keyedAlgorithm {
            guard let key else { return "" }
            var mac = HMAC<SHA256>(key: key)
            mac.update(data: Data(previous.utf8))
            mac.update(data: canonical())
            return Data(mac.finalize()).map { String(format: "%02x", $0) }.joined()
        }
        var hasher = SHA256()
        hasher.update(data: Data(previous.utf8))
        hasher.update(data: canonical())
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }

    static let keyedAlgorithm = "hmac-sha256"
}
