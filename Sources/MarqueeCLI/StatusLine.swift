import Foundation
import Marquee
import MarqueeStreaming

/// The live status line: rewritten in place on a terminal, a plain line every 2 s otherwise.
final class StatusLine: Sendable {
    let interactive: Bool
    private let last = Locked<(Double, Int)>((0, 0))

    init(interactive: Bool) {
        self.interactive = interactive
    }

    static func format(_ s: PlaybackStatus) -> String {
        var latency = s.latency.map { String(format: "%.3f s", $0) } ?? "-"
        if let target = s.targetLatency { latency += String(format: " (target %.1f)", target) }
        if s.playbackRate != 1 { latency += String(format: " rate %.3f", s.playbackRate) }
        if s.delay > 0 { latency += String(format: " delay %.1f", s.delay) }
        switch s.liveAnchor {  // (HLS without date-times: how its edge is placed)
        case .playlistAnswer: latency += " edge: first answer"
        case .learned(let error): latency += String(format: " edge learned ±%.1f ms", error * 1000)
        case .shared(let error): latency += String(format: " edge shared by the venue ±%.1f ms", error * 1000)
        default: break
        }
        let size = s.width > 0 ? " \(s.width)x\(s.height)" : ""
        var numbers = String(format: "buffer %.1f s  %.1f fps", s.buffer, s.framesPerSecond)
        if let av = s.avOffset { numbers += String(format: "  av %+.0f ms", av * 1000) }
        return
            """
            \(s.state.rawValue)  latency \(latency)  \(numbers)\(size)  presented \(s.framesPresented)  dropped \
            \(s.framesDropped)
            """
    }

    static func format(_ m: MemoryUsage) -> String {
        let mib = { (bytes: Int) in String(format: "%.1f", Double(bytes) / 1_048_576) }
        return "rss \(mib(m.residentBytes)) MiB heap \(mib(m.heapInUseBytes)) MiB (free \(mib(m.heapFreeBytes)))"
    }

    func show(_ status: PlaybackStatus) {
        let text = Self.format(status)
        if interactive {
            let width = last.withLock { l -> Int in
                defer { l.1 = text.count }
                return l.1
            }
            let pad = String(repeating: " ", count: max(0, width - text.count))
            write("\r\(text)\(pad)")
        } else {
            let now = Date().timeIntervalSince1970
            let due = last.withLock { l -> Bool in
                guard now - l.0 >= 2 else { return false }
                l.0 = now
                return true
            }
            // Unattended (a log, a soak run): the process's memory too.
            if due { write("status: \(text)  \(Self.format(MemoryUsage.current()))\n") }
        }
    }

    func log(_ message: String) {
        if interactive {
            let width = last.withLock { l -> Int in
                defer { l.1 = 0 }
                return l.1
            }
            write("\r" + String(repeating: " ", count: width) + "\r\(message)\n")
        } else {
            write("\(message)\n")
        }
    }

    func finish(_ status: PlaybackStatus) {
        if interactive { write("\n") }
        write("final: \(Self.format(status))\n")
    }

    private func write(_ text: String) {
        FileHandle.standardOutput.write(Data(text.utf8))
    }
}
