import Foundation

/// One row of a `frames:<dir>/frames.tsv` file.
public struct PresentedFrame: Sendable, Equatable {
    public var wallTime: Double
    public var pts: Double
    public var md5: String
    public var width: Int
    public var height: Int
    /// The playlist item presented (its id), "" outside a playlist.
    public var item: String = ""
    /// A join's keyframe shown at once, before its time, until the first due picture follows
    /// (the first picture of a live start; `hide_join_still` turns it off).
    public var still = false
    /// When it was due to be shown (the clock of `wallTime`; `wallTime - due`: how late it was
    /// shown); nil for a join's still.
    public var due: Double?
    /// The same instant on this machine's monotonic clock: one clock for every row, where
    /// `wallTime`'s offset changes when a measured server clock takes over from this machine's
    /// (a playlist's still, then a stream).
    public var monoTime: Double = .nan
    /// The captions on screen with the picture (rows on lines), "" none.
    public var caption = ""
    /// What was drawn over the picture while captions are drawn: the md5 of the caption layer
    /// (`<dir>/captions/<md5>.ppm`, over black at the picture's size), "" nothing.
    public var captionsDrawn = ""

    /// `due` on the monotonic clock (nil for a join's still).
    public var dueMono: Double? { due.map { $0 - wallTime + monoTime } }
}

public enum FramesFile {
    /// Parses frames.tsv (header line first): the pictures presented when they were due, and
    /// with `includingStill` also a join's still (shown before its time, first).
    public static func read(_ url: URL, includingStill: Bool = false) throws -> [PresentedFrame] {
        let text = try String(contentsOf: url, encoding: .utf8)
        let lines = text.split(separator: "\n")
        let header = "wall_time\tpts\tmd5\twidth\theight\titem\tstill\tdue\tmono_time\tcaption\tcaptions_drawn"
        guard lines.first == Substring(header) else {
            throw ToolFailure(message: "\(url.path): missing frames.tsv header")
        }
        return lines.dropFirst().compactMap { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard f.count == 11, let wall = Double(f[0]), let pts = Double(f[1]), let w = Int(f[3]),
                let h = Int(f[4]), let mono = Double(f[8])
            else { return nil }
            let frame = PresentedFrame(
                wallTime: wall, pts: pts, md5: String(f[2]), width: w, height: h, item: String(f[5]),
                still: f[6] == "1",
                due: Double(f[7]), monoTime: mono, caption: unescaped(f[9]), captionsDrawn: String(f[10]))
            return includingStill || !frame.still ? frame : nil
        }
    }

    /// A caption field as frames.tsv writes it: `\n`, `\t` and `\\` escaped.
    static func unescaped(_ field: Substring) -> String {
        var out = ""
        var escaping = false
        for c in field {
            if escaping {
                out.append(c == "n" ? "\n" : c == "t" ? "\t" : c)
                escaping = false
            } else if c == "\\" {
                escaping = true
            } else {
                out.append(c)
            }
        }
        return out
    }

    /// Nil when every picture's `latency` is within `bound` of `target` (less than it); else, for
    /// the failure's message, their range and the pictures off: how many, and the first five with
    /// their time after `from`, their latency and how late each was shown after it was due (a
    /// schedule off, or a late present: a starved video thread).
    public static func offTarget(
        _ frames: [PresentedFrame], from: Double, target: Double, bound: Double,
        latency: (PresentedFrame) -> Double
    ) -> String? {
        let missed = frames.filter { !(abs(latency($0) - target) < bound) }
        guard !missed.isEmpty else { return nil }
        let all = frames.map(latency)
        let told = missed.prefix(5).map { f in
            let late = f.due.map { String(format: "%.1f ms after due", (f.wallTime - $0) * 1000) } ?? "no due"
            return String(format: "+%.3f s: %.4f s (", f.wallTime - from, latency(f)) + late + ")"
        }
        return "\(all.min()!)…\(all.max()!), \(missed.count) of \(frames.count) off: " + told.joined(separator: ", ")
    }

    /// A playlist's pictures grouped into runs of one item (its id), in the order shown, each
    /// with its first and last picture.
    public static func runs(_ frames: [PresentedFrame]) -> [(item: String, first: PresentedFrame, last: PresentedFrame)]
    {
        var runs: [(item: String, first: PresentedFrame, last: PresentedFrame)] = []
        for frame in frames {
            if runs.last?.item == frame.item {
                runs[runs.count - 1].last = frame
            } else {
                runs.append((frame.item, frame, frame))
            }
        }
        return runs
    }
}

/// An independent decode with the ffmpeg CLI: every picture's pts_time and md5, as
/// `ffmpeg -f framemd5` prints them, with the input's own timestamps kept.
public enum ReferenceDecode {
    public struct Frame: Sendable {
        public var pts: Double
        public var md5: String
    }

    public static func frames(of file: URL) throws -> [Frame] {
        let out = try Tools.run(
            "ffmpeg",
            [
                "-v", "error", "-copyts", "-i", file.path, "-map", "0:v:0", "-fps_mode", "passthrough",
                "-f", "framemd5", "-",
            ])
        var timebase = 1.0
        var frames: [Frame] = []
        for line in out.split(separator: "\n") {
            if line.hasPrefix("#tb 0:") {
                let parts = line.dropFirst(6).trimmingCharacters(in: .whitespaces).split(separator: "/")
                if parts.count == 2, let n = Double(parts[0]), let d = Double(parts[1]) { timebase = n / d }
                continue
            }
            if line.hasPrefix("#") { continue }
            let f = line.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            guard f.count >= 6, let pts = Double(f[2]) else { continue }
            frames.append(Frame(pts: pts * timebase, md5: f[5]))
        }
        return frames
    }
}

/// 16-bit PCM from a WAV file or a raw S16LE file.
public struct PCM: Sendable {
    public var sampleRate: Int
    public var channels: Int
    /// Interleaved samples.
    public var samples: [Int16]

    public var frameCount: Int { samples.count / max(1, channels) }

    public static func wav(_ url: URL) throws -> PCM {
        let data = try Data(contentsOf: url)
        guard data.count >= 44, data.prefix(4) == Data("RIFF".utf8) else {
            throw ToolFailure(message: "\(url.path) is not a WAV file")
        }
        var offset = 12
        var rate = 0
        var channels = 0
        while offset + 8 <= data.count {
            let id = String(decoding: data[offset..<offset + 4], as: UTF8.self)
            let size = Int(data.le32(offset + 4))
            if id == "fmt " {
                channels = Int(data.le16(offset + 10))
                rate = Int(data.le32(offset + 12))
            } else if id == "data" {
                let end = min(data.count, offset + 8 + size)
                return PCM(sampleRate: rate, channels: channels, samples: data.s16(from: offset + 8, to: end))
            }
            offset += 8 + size + (size & 1)
        }
        throw ToolFailure(message: "\(url.path) has no data chunk")
    }

    public static func raw(_ url: URL, sampleRate: Int = 48_000, channels: Int = 2) throws -> PCM {
        let data = try Data(contentsOf: url)
        return PCM(sampleRate: sampleRate, channels: channels, samples: data.s16(from: 0, to: data.count))
    }

    /// One channel as Double.
    public func channel(_ c: Int) -> [Double] {
        stride(from: c, to: samples.count, by: channels).map { Double(samples[$0]) }
    }

    /// Index of the first frame louder than `threshold`, if any.
    public func firstSound(threshold: Double = 500) -> Int? {
        channel(0).firstIndex { abs($0) > threshold }
    }
}

public enum ToneAnalysis {
    /// Frequency by counting rising zero crossings over `signal` (accurate for a clean tone).
    public static func frequency(_ signal: ArraySlice<Double>, sampleRate: Int) -> Double {
        var crossings: [Int] = []
        var previous = signal.first ?? 0
        for (i, v) in zip(signal.indices, signal) {
            if previous < 0 && v >= 0 { crossings.append(i) }
            previous = v
        }
        guard crossings.count > 2 else { return 0 }
        return Double(crossings.count - 1) * Double(sampleRate) / Double(crossings.last! - crossings.first!)
    }

    /// Where a steady tone of `frequency` breaks: the times (seconds from the slice's start)
    /// of the rising zero crossings that come more than a tenth of a period early or late after
    /// the one before (a hole, a skip, a click), with the gap between them (seconds).
    public static func breaks(_ signal: ArraySlice<Double>, frequency: Double, sampleRate: Int) -> [(
        at: Double, gap: Double
    )] {
        let period = Double(sampleRate) / frequency
        var found: [(at: Double, gap: Double)] = []
        var previous = signal.first ?? 0
        var last: Int?
        for (i, v) in zip(signal.indices, signal) {
            defer { previous = v }
            guard previous < 0 && v >= 0 else { continue }
            if let last, abs(Double(i - last) - period) > period / 10 {
                found.append(
                    (Double(i - signal.startIndex) / Double(sampleRate), Double(i - last) / Double(sampleRate)))
            }
            last = i
        }
        return found
    }

    /// RMS of consecutive windows of `window` samples.
    public static func windowRMS(_ signal: ArraySlice<Double>, window: Int) -> [Double] {
        stride(from: signal.startIndex, to: signal.endIndex - window + 1, by: window).map { start in
            let slice = signal[start..<start + window]
            return (slice.reduce(0) { $0 + $1 * $1 } / Double(window)).squareRoot()
        }
    }

    /// The times a steady tone is interrupted: runs of windows (`window` samples, at least half
    /// the tone's period, stepped by half a window) whose peak falls below `fraction` of the
    /// tone's usual peak (their median), each followed by the tone again (a fade that never
    /// comes back, as at the end, is not counted). A silence is one; so is a cut faded out and
    /// in again within a few milliseconds (the sound never reaches zero), where a count of
    /// zero samples sees nothing.
    public static func interruptions(_ signal: ArraySlice<Double>, window: Int, below fraction: Double) -> Int {
        let peaks = stride(from: signal.startIndex, to: signal.endIndex - window + 1, by: max(1, window / 2)).map {
            signal[$0..<$0 + window].reduce(0) { max($0, abs($1)) }
        }
        guard !peaks.isEmpty else { return 0 }
        let usual = peaks.sorted()[peaks.count / 2]
        var count = 0
        var low = false
        for peak in peaks {
            if peak < fraction * usual {
                low = true
            } else if low {
                count += 1
                low = false
            }
        }
        return count
    }

    /// Goertzel power of `frequency` in `signal`, normalised to the squared amplitude.
    public static func power(_ signal: ArraySlice<Double>, frequency: Double, sampleRate: Int) -> Double {
        let k = 2 * cos(2 * Double.pi * frequency / Double(sampleRate))
        var s1 = 0.0
        var s2 = 0.0
        for x in signal {
            let s0 = x + k * s1 - s2
            s2 = s1
            s1 = s0
        }
        let n = Double(signal.count)
        return (s1 * s1 + s2 * s2 - k * s1 * s2) / (n * n / 4)
    }
}

extension Data {
    func le16(_ i: Int) -> UInt16 { UInt16(self[startIndex + i]) | UInt16(self[startIndex + i + 1]) << 8 }
    func le32(_ i: Int) -> UInt32 { UInt32(le16(i)) | UInt32(le16(i + 2)) << 16 }
    func s16(from: Int, to: Int) -> [Int16] {
        var out = [Int16](repeating: 0, count: (to - from) / 2)
        for k in 0..<out.count { out[k] = Int16(bitPattern: le16(from + 2 * k)) }
        return out
    }
}

/// Simple statistics for measured figures.
public enum Stats {
    public static func percentile(_ values: [Double], _ p: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        let rank = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count - 1)).rounded())))
        return sorted[rank]
    }

    public static func median(_ values: [Double]) -> Double { percentile(values, 50) }
}
