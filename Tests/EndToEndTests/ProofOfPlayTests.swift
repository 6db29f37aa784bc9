import Foundation
import Marquee
import MarqueeOrigin
import MarqueeSignage
import TestSupport
import Testing

/// Proof of play end to end: records uploaded through an outage exactly once; a box killed
/// (`kill -9`) mid-playback loses no completed play and its chain verifies.
@Suite struct ProofOfPlayDeliveryTests {
    @Test func anOutagesBacklogUploadsExactlyOnceInOrder() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("pop-upload")
        let journal = try ProofOfPlayJournal(url: dir.appendingPathComponent("plays.jsonl"), box: "lobby-3")
        let receiver = origin.plays
        receiver.token = "pop-token-7"
        // Without the receiver's token: refused, nothing marked delivered.
        let anonymous = ProofOfPlayUploader(
            journal: journal, endpoint: origin.baseURL.appendingPathComponent("plays"), batch: 40)
        try journal.append(ProofOfPlayJournalDraft.make("i0", at: 1_800_000_000))
        await #expect(throws: PlayerError.self) { try await anonymous.upload() }
        #expect(receiver.refused == 1 && receiver.counts.isEmpty && journal.uploadedThrough == 0)
        let uploader = ProofOfPlayUploader(
            journal: journal, endpoint: origin.baseURL.appendingPathComponent("plays"), batch: 40,
            headers: ["Authorization": "Bearer pop-token-7"])
        for i in 1..<25 {
            try journal.append(ProofOfPlayJournalDraft.make("i\(i)", at: 1_800_000_000 + Double(i) * 10))
        }
        #expect(try await uploader.upload() == 25)
        // The receiver goes down: 100 plays pile up, each try fails and delivers nothing.
        receiver.outage = true
        for i in 25..<125 {
            try journal.append(ProofOfPlayJournalDraft.make("i\(i)", at: 1_800_000_000 + Double(i) * 10))
        }
        for _ in 0..<3 { await #expect(throws: PlayerError.self) { try await uploader.upload() } }
        #expect(journal.uploadedThrough == 25 && receiver.counts.count == 25)
        // Back: the backlog goes out in batches of 40, in order, each record once.
        receiver.outage = false
        #expect(try await uploader.upload() == 100)
        #expect(try await uploader.upload() == 0, "nothing is sent twice")
        let ids = (1...125).map { "lobby-3-\(journal.epoch)-\($0)" }
        #expect(
            receiver.order == ids && receiver.counts.values.allSatisfy { $0 == 1 },
            "\(receiver.counts.filter { $0.value != 1 })")
        #expect(receiver.batches == 1 + 3, "25, then 40 + 40 + 20")
    }

    /// `marquee play --schedule … --proof-of-play …` of a schedule of short images, killed with
    /// SIGKILL mid-play: every item whose turn had ended 0.2 s before the kill (frames.tsv: the
    /// next one's first picture) is in the journal, in order, and the chain verifies.
    @Test func aKilledBoxLosesNoCompletedPlay() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let dir = try Tools.tempDirectory("pop-kill")
        var items: [String] = []
        for (i, colour) in ["red", "green", "blue"].enumerated() {
            let png = dir.appendingPathComponent("\(colour).png")
            _ = try Tools.run(
                "ffmpeg",
                ["-v", "error", "-f", "lavfi", "-i", "color=c=\(colour):s=320x240", "-frames:v", "1", png.path])
            items.append(
                #"{"id": "\#(colour)", "url": "\#(png.absoluteString)", "duration": \#(0.3 + 0.1 * Double(i))}"#)
        }
        let schedule = dir.appendingPathComponent("schedule.json")
        try Data(
            #"""
            {"default": "loop", "playlists": {"loop": {"repeat": "all", "items": \#
            [\#(items.joined(separator: ", "))]}}}
            """#
            .utf8
        ).write(to: schedule)
        let journalURL = dir.appendingPathComponent("pop/plays.jsonl")
        let process = Process()
        process.executableURL = marquee
        process.arguments = [
            "play", "--schedule", schedule.path, "--proof-of-play", journalURL.path, "--box", "k1", "--audio", "null",
            "--video", "frames:\(dir.path)",
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try await Task.sleep(for: .milliseconds(4_000 + Int.random(in: 0..<400)))
        let killedAt = Date().timeIntervalSince1970
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let runs = FramesFile.runs(try FramesFile.read(dir.appendingPathComponent("frames.tsv")))
        // An item's turn ended when the next one's first picture was shown.
        let ended = zip(runs, runs.dropFirst()).filter { $0.1.first.wallTime < killedAt - 0.2 }.map(\.0.item)
        try #require(ended.count >= 5, "\(ended.count) plays ended before the kill")
        let verdict = ProofOfPlayJournal.verify(journalURL)
        #expect(verdict.broken == nil, "\(verdict)")
        let records = try ProofOfPlayJournal(url: journalURL, box: "k1").records(after: 0)
        #expect(
            Array(records.map(\.item).prefix(ended.count)) == ended, "journal \(records.map(\.item)) vs shown \(ended)")
        #expect(
            records.allSatisfy {
                $0.end >= $0.start && $0.contentHash?.count == 64 && $0.entry == "default" && $0.framesPresented >= 1
            })
        print(
            """
            kill -9 after \(String(format: "%.2f", killedAt - runs[0].first.wallTime)) s: \(ended.count) plays ended, \
            \(records.count) recorded, chain of \(verdict.records) verified
            """
        )
    }
}

/// A record to append (its sequence, box and hashes are the journal's).
enum ProofOfPlayJournalDraft {
    static func make(_ item: String, at start: Double) -> PlayRecord {
        PlayRecord(
            item: item, url: "file:///m/\(item).png", start: start, end: start + 10, startMono: 0, endMono: 10,
            framesPresented: 300)
    }
}
