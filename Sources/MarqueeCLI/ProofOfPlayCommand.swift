import ArgumentParser
import Crypto
import Foundation
import Marquee
import MarqueeSignage
import MarqueeStreaming

struct ProofOfPlayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proof-of-play",
        abstract: "Verify a proof-of-play journal's chain and sum up its plays (exit 1 when the chain is broken).")

    @Argument(help: "The journal (marquee play --schedule … --proof-of-play FILE).")
    var file: String

    @Flag(help: "Print every record (one line each).")
    var records = false

    @Option(
        name: .long,
        help:
            "A file holding the box's key (marquee play --proof-of-play-key-file): every record must be keyed with it.")
    var keyFile: String?

    func run() throws {
        let url = URL(fileURLWithPath: file)
        guard FileManager.default.fileExists(atPath: url.path) else { throw ValidationError("\(file): no such file") }
        let key: SymmetricKey?
        do {
            key = try Secrets.read(file: keyFile, credential: "proof-of-play-key").map {
                SymmetricKey(data: Data($0.utf8))
            }
        } catch {
            throw ValidationError("--key-file: \(error)")
        }
        let verdict = ProofOfPlayJournal.verify(url, key: key)
        let data = FileManager.default.contents(atPath: url.path) ?? Data()
        let decoder = JSONDecoder()
        let plays = data.split(separator: UInt8(ascii: "\n")).compactMap {
            try? decoder.decode(PlayRecord.self, from: Data($0))
        }
        if records {
            for r in plays {
                print(
                    String(
                        format: "%6d  %@  %7.2f s  %5d pictures (%d dropped)  %@  %@ %@", r.sequence,
                        Self.time(r.start), r.duration, r.framesPresented,
                        r.framesDropped, r.outcome, r.item, r.entry.map { "[\($0)]" } ?? ""))
            }
        }
        var byItem: [String: (count: Int, seconds: Double)] = [:]
        for r in plays {
            byItem[r.item, default: (0, 0)].count += 1
            byItem[r.item, default: (0, 0)].seconds += r.duration
        }
        for (item, sum) in byItem.sorted(by: { $0.key < $1.key }) {
            print(String(format: "%@: %d plays, %.1f s", item, sum.count, sum.seconds))
        }
        if let first = plays.first, let last = plays.last {
            print("\(plays.count) plays from \(Self.time(first.start)) to \(Self.time(last.end)), box \(first.box)")
        }
        if let broken = verdict.broken {
            print("chain BROKEN at line \(broken.line): \(broken.why) (\(verdict.records) records before it verified)")
            throw ExitCode(1)
        }
        print("chain verified: \(verdict.records) records")
    }

    static func time(_ unix: Double) -> String {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return f.string(from: Date(timeIntervalSince1970: unix))
    }
}
