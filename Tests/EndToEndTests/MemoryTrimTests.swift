import Foundation
import MarqueeOrigin
import TestSupport
import Testing

/// `marquee play` trims its memory (`--memory-trim`, every 10 s by default, and as it starts and
/// at its first picture): two players of the same live stream side by side, one trimming and one
/// not. The one trimming holds less in memory (the kernel's resident set of each process, read
/// while both play) and shows the same pictures: each picture both presented has the same md5.
@Suite struct MemoryTrimTests {
    @Test func aTrimmedPlayerHoldsLessAndShowsTheSamePictures() async throws {
        let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee")
        try #require(FileManager.default.isExecutableFile(atPath: marquee.path), "swift build first")
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let url = origin.manifestURL(asset: "testpic_2s").absoluteString  // 360p: light beside the other suites
        var runs = [(process: Process, dir: URL, exited: AsyncStream<Void>)]()
        for trim in ["off", "3"] {
            let dir = try Tools.tempDirectory("memtrim-\(trim)")
            let process = Process()
            process.executableURL = marquee
            process.arguments = [
                "play", url, "--audio", "null", "--video", "frames:\(dir.path)", "--duration", "7", "--memory-trim",
                trim,
            ]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            // Awaited, not waited for (the origin answering runs on this process's threads).
            let exited = AsyncStream<Void> { done in process.terminationHandler = { _ in done.finish() } }
            try process.run()
            runs.append((process, dir, exited))
        }
        // Both playing for a while, the trimming one trimmed at its first picture and at 3 s.
        try await Task.sleep(for: .seconds(5))
        func resident(_ pid: Int32) -> Double? {
            guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
                let kb = Double(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "")
            else { return nil }
            return kb / 1024
        }
        let untrimmed = try #require(resident(runs[0].process.processIdentifier))
        let trimmed = try #require(resident(runs[1].process.processIdentifier))
        for run in runs { for await _ in run.exited {} }
        #expect(runs.allSatisfy { $0.process.terminationStatus == 0 })
        print(
            """
            memory trim: resident \(String(format: "%.1f", untrimmed)) MiB untrimmed, \
            \(String(format: "%.1f", trimmed)) MiB trimmed
            """
        )
        // The debug build's start-up leaves tens of MiB of code and read-only data resident.
        #expect(trimmed < untrimmed - 10, "resident \(trimmed) MiB trimmed vs \(untrimmed) MiB untrimmed")
        let plain = try FramesFile.read(runs[0].dir.appendingPathComponent("frames.tsv"))
        let shown = try FramesFile.read(runs[1].dir.appendingPathComponent("frames.tsv"))
        let reference = Dictionary(
            plain.map { (Int(($0.pts * 1000).rounded()), $0.md5) }, uniquingKeysWith: { a, _ in a })
        let both = shown.filter { reference[Int(($0.pts * 1000).rounded())] != nil }
        #expect(
            shown.count > 100 && both.count > 100,
            "\(shown.count) pictures shown trimmed, \(both.count) of them also untrimmed")
        let differing = both.filter { reference[Int(($0.pts * 1000).rounded())] != $0.md5 }
        #expect(differing.isEmpty, "pictures that differ: \(differing.prefix(5).map(\.pts))")
    }
}
