import Foundation
import Testing

/// The audio thread must never allocate. CCore/tests/audio_alloc_test.c interposes malloc & co.
/// for the whole process and counts calls made on the "mq-audio" thread while a tone plays,
/// runs dry (underrun), is reset and drains. Built here with gcc -Werror, which also proves
/// the sources compile warning-free outside SwiftPM.
@Suite struct AudioThreadAllocationTests {
    @Test(arguments: ["wav", "alsa-file"])
    func audioThreadNeverAllocates(output: String) async throws {
        let dir = try Fixtures.tempDir()
        defer { try? FileManager.default.removeItem(at: dir) }
        let root = Fixtures.packageRoot
        // every .c of CCore/src's folders (core, input, audio, mixing, video)
        let sources = try FileManager.default.subpathsOfDirectory(atPath: root.appendingPathComponent("CCore/src").path)
            .filter { $0.hasSuffix(".c") }.sorted().map { "CCore/src/\($0)" }
        let flags = try await Fixtures.runAsync(
            "pkg-config",
            [
                "--cflags", "--libs", "libavformat", "libavcodec",
                "libavutil", "libavfilter", "libswresample", "libswscale", "alsa", "libdrm", "libass",
            ]
        )
        .split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        .filter { !$0.isEmpty }
        let exe = dir.appendingPathComponent("audio_alloc_test")
        try await Fixtures.runAsync(
            "gcc",
            [
                "-std=c11", "-Wall", "-Wextra", "-Werror", "-O1", "-D_GNU_SOURCE",
                "-ICCore/include", "-ICCore/src",
            ] + sources
                + ["CCore/tests/audio_alloc_test.c", "-o", exe.path] + flags
                + ["-lpthread", "-lm"], cwd: root)
        let tone = try await Fixtures.makeAudio("sine=f=440:r=48000", seconds: 2, in: dir, name: "tone.mp4")
        let spec = output == "wav" ? "wav:\(dir.path)/out.wav" : "alsa:file:'\(dir.path)/out.raw',raw"
        let out = try await Fixtures.runAsync(exe.path, [tone.path, spec])
        print("audio thread (\(output)): \(out.trimmingCharacters(in: .newlines))")
        #expect(out.contains("allocs 0 frees 0 ended 1"))
    }
}
