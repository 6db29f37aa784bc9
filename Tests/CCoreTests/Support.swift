import CCore
import Foundation
import TestSupport
import Testing

/// Paths, tools and a thin owner of `mq_player` for the CCore tests.
enum Fixtures {
    /// The package root (…/main), found from this file.
    static let packageRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// DASH-IF livesim2 test content (never copied into the repo).
    static let testpic =
        packageRoot
        .appendingPathComponent("../shared/media/dashif-livesim2/testpic_2s").standardized

    /// init.mp4 followed by the numbered media segments of a representation.
    static func segments(_ rep: String, _ numbers: [Int]) throws -> Data {
        var data = try Data(contentsOf: testpic.appendingPathComponent("\(rep)/init.mp4"))
        for n in numbers {
            data += try Data(contentsOf: testpic.appendingPathComponent("\(rep)/\(n).m4s"))
        }
        return data
    }

    static func tempDir() throws -> URL {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("ccore-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Runs a command (found on PATH); returns stdout, throws on a non-zero exit.
    @discardableResult
    static func run(_ tool: String, _ args: [String], cwd: URL? = nil) throws -> String {
        try Tools.run(tool, args, cwd: cwd)
    }

    /// `run` on a Dispatch thread: tests run concurrently on Swift's small cooperative pool,
    /// which a blocking wait for a child process would starve.
    @discardableResult
    static func runAsync(_ tool: String, _ args: [String], cwd: URL? = nil) async throws -> String {
        try await withCheckedThrowingContinuation { cont in
            DispatchQueue.global().async {
                cont.resume(with: Result { try run(tool, args, cwd: cwd) })
            }
        }
    }

    /// A fragmented-MP4 AAC stream from an ffmpeg lavfi audio source.
    static func makeAudio(_ source: String, seconds: Double, in dir: URL, name: String) async throws -> URL {
        let url = dir.appendingPathComponent(name)
        try await runAsync(
            "ffmpeg",
            [
                "-v", "error", "-y", "-f", "lavfi", "-i", source, "-t", "\(seconds)",
                "-ac", "2", "-c:a", "aac", "-f", "mp4", "-movflags",
                "frag_keyframe+empty_moov+default_base_moof", url.path,
            ])
        return url
    }

    /// `ffmpeg -f framemd5` hashes of every picture of a file, in presentation order.
    static func frameMD5s(_ file: URL) async throws -> [String] {
        let out = try await runAsync(
            "ffmpeg",
            [
                "-v", "error", "-i", file.path, "-map", "0:v:0",
                "-fps_mode", "passthrough", "-f", "framemd5", "-",
            ])
        return out.split(separator: "\n").filter { !$0.hasPrefix("#") }.compactMap {
            $0.split(separator: ",").last.map { $0.trimmingCharacters(in: .whitespaces) }
        }
    }

    /// `ffprobe` pts_time of every picture, as printed.
    static func framePTS(_ file: URL) async throws -> [String] {
        let out = try await runAsync(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-show_entries",
                "frame=pts_time", "-of", "csv=p=0", file.path,
            ])
        return out.split(separator: "\n").map { String($0.split(separator: ",")[0]) }
    }
}

extension Fixtures {
    /// Where the sound starts (seconds of the stream's media time) when ffmpeg decodes `file`:
    /// AAC priming makes it later than pts 0 unless an edit list hides it.
    static func decodedOnset(_ file: URL, in dir: URL) async throws -> Double {
        let raw = dir.appendingPathComponent("ref.s16")
        try await runAsync("ffmpeg", ["-v", "error", "-y", "-i", file.path, "-ac", "1", "-f", "s16le", raw.path])
        let pcm = PCM.raw(try Data(contentsOf: raw), channels: 1, rate: 48000)
        return Double(pcm.soundSpan()!.lowerBound) / pcm.rate
    }
}

struct ToolError: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Unix time minus monotonic time: what Swift would pass to mq_player_set_wall_offset.
func wallOffset() -> Double {
    Date().timeIntervalSince1970 - mq_clock_now()
}

/// Owns one `mq_player` for a test; collects its events.
final class TestPlayer {
    private(set) var handle: OpaquePointer?
    private(set) var events: [mq_event] = []

    init(audio: String?, video: String?, videoQueue: Int32 = 0) throws {
        let a = audio.map { strdup($0) } ?? nil
        let v = video.map { strdup($0) } ?? nil
        defer {
            free(a)
            free(v)
        }
        var cfg = mq_player_config()
        cfg.audio_out = UnsafePointer(a)
        cfg.video_out = UnsafePointer(v)
        cfg.video_queue_frames = videoQueue
        let ret = mq_player_create(&cfg, &handle)
        guard ret == 0, handle != nil else {
            throw ToolError(message: "mq_player_create: \(String(cString: mq_err_string(ret)))")
        }
    }

    deinit { destroy() }

    /// Stops the player (finalises wav: and frames: outputs).
    func destroy() { mq_player_destroy(&handle) }

    var p: OpaquePointer { handle! }

    func addTrack(_ kind: mq_track_kind, offset: Double = 0) -> Int32 {
        var id: Int32 = -1
        #expect(mq_player_add_track(p, kind, offset, &id) == 0)
        return id
    }

    func push(_ track: Int32, _ data: Data) {
        let ret = data.withUnsafeBytes { raw in
            mq_player_push(p, track, raw.bindMemory(to: UInt8.self).baseAddress!, raw.count)
        }
        #expect(ret == 0)
    }

    func status() -> mq_status {
        var s = mq_status()
        mq_player_get_status(p, &s)
        return s
    }

    /// Polls events until one of `type` (and `track`, if given) arrives or `timeout` passes.
    func waitFor(
        _ type: mq_event_type, track: Int32? = nil, timeout: Double, where accept: (mq_event) -> Bool = { _ in true }
    ) async throws -> mq_event? {
        let deadline = mq_clock_now() + timeout
        var seen = events.count
        var last = false
        while !last {
            last = mq_clock_now() >= deadline  // always poll once more after a late wake-up
            var ev = mq_event()
            while mq_player_poll_event(p, &ev) == 1 { events.append(ev) }
            while seen < events.count {
                let ev = events[seen]
                seen += 1
                if ev.type == Int32(type.rawValue) && (track == nil || ev.track == track) && accept(ev) { return ev }
            }
            try await Task.sleep(nanoseconds: 5_000_000)
        }
        return nil
    }

    func count(_ type: mq_event_type) -> Int {
        events.filter { $0.type == Int32(type.rawValue) }.count
    }
}

extension mq_event {
    var text: String {
        withUnsafeBytes(of: message) { raw in
            String(cString: raw.bindMemory(to: CChar.self).baseAddress!)
        }
    }
}

/// One row of frames.tsv.
struct FrameRow {
    var wall: Double
    var pts: String
    var md5: String
    var width: Int
    var height: Int
    /// The label in effect (`mq_player_set_label`), "" without one.
    var item: String
    /// A join's keyframe shown before its time (`hide_join_still` 0).
    var still = false
    /// When it was due (the clock of `wall`); nil for a join's still.
    var due: Double?

    static func read(_ dir: URL) throws -> [FrameRow] {
        let text = try String(contentsOf: dir.appendingPathComponent("frames.tsv"), encoding: .utf8)
        var lines = text.split(separator: "\n")
        #expect(
            lines.first == "wall_time\tpts\tmd5\twidth\theight\titem\tstill\tdue\tmono_time\tcaption\tcaptions_drawn")
        lines.removeFirst()
        return lines.map { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return FrameRow(
                wall: Double(f[0])!, pts: f[1], md5: f[2], width: Int(f[3])!,
                height: Int(f[4])!, item: f.count > 5 ? f[5] : "", still: f.count > 6 && f[6] == "1",
                due: f.count > 7 ? Double(f[7]) : nil)
        }
    }
}
