import Foundation

/// Helpers to read what a listener would hear: 16-bit interleaved PCM, first channel.
struct PCM {
    var samples: [Int16]  // first channel
    var rate: Double

    /// A WAV as written by `wav:` (44-byte header, 16-bit PCM); checks the header.
    static func wav(_ url: URL) throws -> (pcm: PCM, channels: Int, dataBytes: Int, fileBytes: Int) {
        let data = try Data(contentsOf: url)
        func le(_ at: Int, _ n: Int) -> Int {
            (0..<n).reduce(0) { $0 | Int(data[at + $1]) << (8 * $1) }
        }
        guard data.count >= 44, data.prefix(4) == Data("RIFF".utf8), le(20, 2) == 1, le(34, 2) == 16
        else { throw ToolError(message: "not a 16-bit PCM WAV") }
        let channels = le(22, 2)
        let pcm = raw(data.dropFirst(44), channels: channels, rate: Double(le(24, 4)))
        return (pcm, channels, le(40, 4), data.count)
    }

    /// Raw S16LE interleaved bytes.
    static func raw(_ data: Data, channels: Int, rate: Double) -> PCM {
        let bytes = [UInt8](data)
        let frames = bytes.count / (2 * channels)
        var s = [Int16](repeating: 0, count: frames)
        for i in 0..<frames {
            let o = i * 2 * channels
            s[i] = Int16(bitPattern: UInt16(bytes[o]) | UInt16(bytes[o + 1]) << 8)
        }
        return PCM(samples: s, rate: rate)
    }

    /// Index of the first sample louder than `threshold`, and of the last.
    func soundSpan(threshold: Int16 = 500) -> Range<Int>? {
        guard let first = samples.firstIndex(where: { abs(Int($0)) > threshold }),
            let last = samples.lastIndex(where: { abs(Int($0)) > threshold })
        else { return nil }
        return first..<(last + 1)
    }

    /// Longest run of near-silent samples inside `range` (a dropout shows as a long run).
    func longestQuietRun(in range: Range<Int>, threshold: Int16 = 100) -> Int {
        var best = 0
        var run = 0
        for i in range {
            run = abs(Int(samples[i])) < threshold ? run + 1 : 0
            best = max(best, run)
        }
        return best
    }

    /// Frequency from zero crossings over `range`.
    func frequency(in range: Range<Int>) -> Double {
        var crossings = 0
        for i in range.dropFirst() where (samples[i - 1] < 0) != (samples[i] < 0) { crossings += 1 }
        return Double(crossings) / 2 / (Double(range.count) / rate)
    }

    /// Goertzel power of `freq` over `range`.
    func power(_ freq: Double, in range: Range<Int>) -> Double {
        let w = 2 * Double.pi * freq / rate
        let c = 2 * cos(w)
        var s1 = 0.0
        var s2 = 0.0
        for i in range {
            let s0 = Double(samples[i]) + c * s1 - s2
            s2 = s1
            s1 = s0
        }
        return s1 * s1 + s2 * s2 - c * s1 * s2
    }
}
