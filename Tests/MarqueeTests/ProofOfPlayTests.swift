import Crypto
import Foundation
import Testing

@testable import Marquee
@testable import MarqueeSignage

/// The proof-of-play journal: durable appends chained by hash, a torn last line dropped at
/// reopening, tampering found by ``ProofOfPlayJournal/verify(_:)``, the upload position kept.
@Suite struct ProofOfPlayJournalTests {
    static func draft(_ item: String, start: Double) -> PlayRecord {
        PlayRecord(
            item: item, url: "file:///m/\(item).png", entry: "slot lunch", playlist: "lunch", start: start,
            end: start + 10,
            startMono: start - 1_000, endMono: start - 990, framesPresented: 300)
    }

    @Test func recordsAreChainedAndSurviveAReopening() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("plays.jsonl")
        var journal: ProofOfPlayJournal? = try ProofOfPlayJournal(url: url, box: "box7")
        let first = try journal!.append(Self.draft("a", start: 1_800_000_000))
        let second = try journal!.append(Self.draft("b", start: 1_800_000_010))
        #expect(
            first.sequence == 1 && second.sequence == 2 && second.previous == first.hash && first.previous == ""
                && second.id == "box7-\(journal!.epoch)-2")
        journal = nil
        // A power cut while the third was written: half a line, no newline.
        let handle = try FileHandle(forWritingTo: url)
        handle.seekToEndOfFile()
        handle.write(Data(#"{"box":"box7","end":18000000"#.utf8))
        try handle.close()
        #expect(ProofOfPlayJournal.verify(url).broken != nil, "the torn line is seen")
        let reopened = try ProofOfPlayJournal(url: url, box: "box7")
        #expect(reopened.lastSequence == 2, "the torn record was never appended")
        let third = try reopened.append(Self.draft("c", start: 1_800_000_020))
        #expect(third.sequence == 3 && third.previous == second.hash)
        #expect(ProofOfPlayJournal.verify(url) == ProofOfPlayJournal.Verification(records: 3, broken: nil))
        #expect(reopened.records(after: 1).map(\.item) == ["b", "c"])
    }

    @Test(arguments: ["field", "removed", "swapped"])
    func tamperingBreaksTheChain(_ how: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("plays.jsonl")
        let journal = try ProofOfPlayJournal(url: url, box: "b")
        for (i, item) in ["a", "b", "c", "d"].enumerated() {
            try journal.append(Self.draft(item, start: 1_800_000_000 + Double(i) * 10))
        }
        var lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map(String.init)
        switch how {
        case "field":
            lines[1] = lines[1].replacingOccurrences(of: "\"framesPresented\":300", with: "\"framesPresented\":301")
        case "removed": lines.remove(at: 2)
        default: lines.swapAt(1, 2)
        }
        try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: url)
        let verdict = ProofOfPlayJournal.verify(url)
        #expect(verdict.broken != nil && verdict.records < 4, "\(how): \(verdict)")
    }

    @Test func theUploadPositionIsKept() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("plays.jsonl")
        let journal = try ProofOfPlayJournal(url: url, box: "b")
        for i in 0..<5 { try journal.append(Self.draft("i\(i)", start: 1_800_000_000 + Double(i))) }
        try journal.markUploaded(through: 3)
        #expect(try ProofOfPlayJournal(url: url, box: "b").uploadedThrough == 3)
        #expect(try ProofOfPlayJournal(url: url, box: "b").records(after: 3).map(\.sequence) == [4, 5])
    }

    /// A keyed journal: a record changed and re-hashed by someone without the box's key (plain
    /// SHA-256, or an HMAC under another key) breaks the chain where it was changed.
    @Test(arguments: ["sha256", "otherKey"])
    func aRecordForgedWithoutTheKeyBreaksTheChain(_ how: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("plays.jsonl")
        let key = SymmetricKey(data: Data("the box's key".utf8))
        let journal = try ProofOfPlayJournal(url: url, box: "b", key: key)
        for (i, item) in ["a", "b", "c"].enumerated() {
            try journal.append(Self.draft(item, start: 1_800_000_000 + Double(i) * 10))
        }
        #expect(ProofOfPlayJournal.verify(url, key: key) == ProofOfPlayJournal.Verification(records: 3, broken: nil))
        #expect(
            ProofOfPlayJournal.verify(url, key: SymmetricKey(data: Data("a guess".utf8))).broken?.line == 1,
            "another key verifies nothing")
        // The forger appends a play that never happened, chained to the last record.
        let last = journal.records(after: 2)[0]
        var forged = Self.draft("ad-never-shown", start: 1_800_000_030)
        (forged.sequence, forged.box, forged.epoch, forged.previous) = (4, "b", last.epoch, last.hash)
        forged.alg = how == "sha256" ? nil : PlayRecord.keyedAlgorithm
        forged.hash = forged.computedHash(key: SymmetricKey(data: Data("a guess".utf8)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let handle = try FileHandle(forWritingTo: url)
        handle.seekToEndOfFile()
        handle.write(try encoder.encode(forged) + Data("\n".utf8))
        try handle.close()
        let verdict = ProofOfPlayJournal.verify(url, key: key)
        #expect(verdict.broken?.line == 4 && verdict.records == 3, "\(how): \(verdict)")
    }

    /// A journal lost and made again restarts its sequence in a new epoch: no id comes twice.
    @Test func aJournalMadeAgainNeverReusesAnId() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("pop-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("plays.jsonl")
        let before = try ProofOfPlayJournal(url: url, box: "b")
        let old = try (0..<3).map { try before.append(Self.draft("i\($0)", start: 1_800_000_000 + Double($0))).id }
        #expect(try ProofOfPlayJournal(url: url, box: "b").epoch == before.epoch, "reopened: the same epoch")
        try FileManager.default.removeItem(at: url)
        let after = try ProofOfPlayJournal(url: url, box: "b")
        let new = try (0..<3).map { try after.append(Self.draft("i\($0)", start: 1_800_000_100 + Double($0))).id }
        #expect(after.epoch != before.epoch && Set(old).isDisjoint(with: new), "\(old) / \(new)")
    }

    /// The default box name: stable for one machine id, different for another, not the id.
    @Test func theBoxNameComesFromTheMachineId() {
        let a = BoxIdentity.stable(machineID: "4f1a0c2e9b7d4e5f8a6b3c2d1e0f9a8b")
        #expect(a == BoxIdentity.stable(machineID: "4f1a0c2e9b7d4e5f8a6b3c2d1e0f9a8b\n"))
        #expect(a != BoxIdentity.stable(machineID: "5f1a0c2e9b7d4e5f8a6b3c2d1e0f9a8b"))
        #expect(a.hasPrefix("box-") && a.count == 20 && !a.contains("4f1a0c2e"))
    }
}
