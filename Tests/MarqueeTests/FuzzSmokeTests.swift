import Foundation
import MarqueeFuzzTargets
import MarqueeStreaming
import Testing

/// The fuzz smoke of the parser targets in CI. Coverage-guided fuzzing (libFuzzer, `scripts/fuzz`)
/// needs every module and dependency built again with `-sanitize=fuzzer`, which costs more than
/// CI's budget leaves; this runs the same targets (``FuzzTarget/run(_:)``) in the test build over
/// seeded mutations of the same seed corpora (`fuzz/make_seeds.py`, the crash regressions, the
/// dictionaries), for a few seconds each. A trap kills the test process: the input being run is
/// kept in a file named at the start, and the seed and count reproduce it. An input that takes
/// over a second (a hang on hostile input) fails the test.
@Suite struct FuzzSmokeTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    /// Seconds each target is fed (at most ``maximumInputs``).
    static let seconds = 2.5
    static let maximumInputs = 40_000

    /// The seed corpora `fuzz/make_seeds.py` makes (about a second: the repo's manifests,
    /// playlists, cues and configs, media made with ffmpeg), by target; made once per test
    /// process, read, and deleted.
    static let corpora: [String: [[UInt8]]]? = {
        let out = FileManager.default.temporaryDirectory.appendingPathComponent("marquee-fuzz-smoke-seeds-\(getpid())")
        defer { try? FileManager.default.removeItem(at: out) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", root.appendingPathComponent("fuzz/make_seeds.py").path, root.path, out.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { return nil }
        return Dictionary(
            uniqueKeysWithValues: FuzzTarget.allCases.map {
                ($0.rawValue, files(in: out.appendingPathComponent($0.rawValue)))
            })
    }()

    static func files(in directory: URL) -> [[UInt8]] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.sorted() ?? []
        return names.compactMap { try? Data(contentsOf: directory.appendingPathComponent($0)) }.map { Array($0) }
    }

    /// The quoted tokens of a libFuzzer dictionary (`\"` and `\\` unescaped, `\xNN` read).
    static func dictionary(_ name: String) -> [[UInt8]] {
        guard
            let text = try? String(contentsOf: root.appendingPathComponent("fuzz/dicts/\(name).dict"), encoding: .utf8)
        else { return [] }
        return text.split(separator: "\n").compactMap { line -> [UInt8]? in
            guard let open = line.firstIndex(of: "\""), let close = line.lastIndex(of: "\""), open < close,
                !line.hasPrefix("#")
            else { return nil }
            var out: [UInt8] = []
            var chars = Array(line[line.index(after: open)..<close].utf8)[...]
            while let c = chars.popFirst() {
                guard c == UInt8(ascii: "\\"), let next = chars.popFirst() else {
                    out.append(c)
                    continue
                }
                if next == UInt8(ascii: "x"), chars.count >= 2,
                    let v = UInt8(String(decoding: chars.prefix(2), as: UTF8.self), radix: 16)
                {
                    out.append(v)
                    chars = chars.dropFirst(2)
                } else {
                    out.append(next)
                }
            }
            return out
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func seededMutationsNeitherTrapNorHang(_ target: FuzzTarget) throws {
        let corpora = try #require(
            Self.corpora, "fuzz/make_seeds.py failed (python3 and ffmpeg are installed by scripts/setup)")
        var corpus = corpora[target.rawValue] ?? []
        corpus += Self.files(in: Self.root.appendingPathComponent("fuzz/regressions/\(target.rawValue)"))
        #expect(corpus.count >= 2, "\(corpus.count) seeds for \(target)")
        let tokens = Self.dictionary(["mpd": "mpd", "hls": "hls", "config": "config"][target.rawValue] ?? "mp4")
        let seed: UInt64 = 0x4D51_5A5A + UInt64(FuzzTarget.allCases.firstIndex(of: target) ?? 0)
        let current = FileManager.default.temporaryDirectory.appendingPathComponent(
            "marquee-fuzz-smoke-\(target.rawValue)-\(getpid()).input")
        print(
            """
            fuzz smoke \(target): \(corpus.count) seeds, generator seed \(seed); a trap's input is left in \
            \(current.path)
            """
        )
        _ = FileManager.default.createFile(atPath: current.path, contents: nil)
        let handle = try FileHandle(forWritingTo: current)
        defer { try? handle.close() }
        var mutator = Mutator(state: seed, tokens: tokens)
        let start = Date()
        var count = 0
        var slowest = 0.0
        for input in corpus { target.run(input) }
        while count < Self.maximumInputs, Date().timeIntervalSince(start) < Self.seconds {
            let input = mutator.mutate(corpus, maximumLength: 256 << 10)
            try handle.seek(toOffset: 0)
            try handle.write(contentsOf: input)
            try handle.truncate(atOffset: UInt64(input.count))
            let began = Date()
            target.run(input)
            let took = Date().timeIntervalSince(began)
            if took > 1 {
                let kept = current.deletingPathExtension().appendingPathExtension("slow-\(count)")
                try Data(input).write(to: kept)
                Issue.record("\(target): input \(count) took \(String(format: "%.2f", took)) s (kept in \(kept.path))")
            }
            slowest = max(slowest, took)
            count += 1
        }
        try? FileManager.default.removeItem(at: current)
        print(
            String(
                format: "fuzz smoke %@: %d inputs in %.1f s, slowest %.1f ms", target.rawValue, count,
                Date().timeIntervalSince(start), slowest * 1000))
        #expect(count >= 500, "only \(count) inputs in \(Self.seconds) s")
    }
}

/// libFuzzer's kinds of mutation, seeded: bits and bytes changed, ranges erased, duplicated or
/// moved, interesting numbers and dictionary tokens written in, two inputs spliced.
struct Mutator {
    var state: UInt64
    let tokens: [[UInt8]]

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        return SplitMix64.finalised(state)
    }

    mutating func below(_ n: Int) -> Int { n <= 1 ? 0 : Int(next() % UInt64(n)) }

    static let interesting: [[UInt8]] = [
        [0], [0xff], [0x7f], [0x80], [0xff, 0xff, 0xff, 0xff], [0x7f, 0xff, 0xff, 0xff], [0, 0, 0, 0], [0, 0, 0, 1],
        Array("-1".utf8), Array("0".utf8), Array("4294967296".utf8), Array("9223372036854775807".utf8),
        Array("1e308".utf8),
        Array("NaN".utf8), Array("-0.0".utf8), Array("\"\"".utf8),
    ]

    mutating func mutate(_ corpus: [[UInt8]], maximumLength: Int) -> [UInt8] {
        var bytes = corpus[below(corpus.count)]
        for _ in 0...below(4) {
            let at = below(bytes.count + 1)
            switch below(9) {
            case 0 where !bytes.isEmpty:  // a bit
                bytes[min(at, bytes.count - 1)] ^= 1 << UInt8(below(8))
            case 1 where !bytes.isEmpty:  // a byte
                bytes[min(at, bytes.count - 1)] = UInt8(truncatingIfNeeded: next())
            case 2:  // a range erased
                bytes.removeSubrange(at..<min(bytes.count, at + 1 + below(64)))
            case 3:  // a range repeated
                let end = min(bytes.count, at + 1 + below(256))
                let copy = Array(bytes[at..<end])
                for _ in 0...below(8) { bytes.insert(contentsOf: copy, at: at) }
            case 4:  // a range moved elsewhere
                let end = min(bytes.count, at + 1 + below(128))
                let copy = Array(bytes[at..<end])
                bytes.insert(contentsOf: copy, at: below(bytes.count + 1))
            case 5:  // an interesting number over what is there
                let value = Self.interesting[below(Self.interesting.count)]
                bytes.replaceSubrange(at..<min(bytes.count, at + value.count), with: value)
            case 6 where !tokens.isEmpty, 7 where !tokens.isEmpty:  // a dictionary token
                bytes.insert(contentsOf: tokens[below(tokens.count)], at: at)
            case 8:  // spliced with another input
                let other = corpus[below(corpus.count)]
                let from = below(other.count + 1)
                bytes = Array(bytes[..<at]) + Array(other[from...])
            default:
                bytes.insert(UInt8(truncatingIfNeeded: next()), at: at)
            }
        }
        return bytes.count > maximumLength ? Array(bytes.prefix(maximumLength)) : bytes
    }
}
