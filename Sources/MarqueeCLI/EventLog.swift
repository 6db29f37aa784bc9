import Foundation
import Marquee
import MarqueeFleet
import MarqueeSignage

/// `--events PATH`: every player event as one JSON line, `{"wall_time": …, "type": …, fields}`,
/// written as it is heard (flushed per line: a box that dies keeps what it logged).
/// `wall_time` is the local wall clock (Unix seconds); `type` the event's case name; the fields
/// are its values by name, in seconds where they are times.
final class EventLog: @unchecked Sendable {  // used by one task (the event watcher) at a time
    private let handle: FileHandle

    /// Creates (or truncates) `path`.
    init(path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
        handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    }

    deinit { try? handle.close() }

    func write(_ event: SignageEvent, at wallTime: Double = Date().timeIntervalSince1970) {
        var object = EventJSON.fields(of: event)
        object["wall_time"] = wallTime
        guard
            let data = try? JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        try? handle.write(contentsOf: data + Data("\n".utf8))
    }
}
