import Foundation
import Marquee

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

    func write(_ event: PlayerEvent, at wallTime: Double = Date().timeIntervalSince1970) {
        var object = Self.fields(of: event)
        object["wall_time"] = wallTime
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]) else { return }
        try? handle.write(contentsOf: data + Data("\n".utf8))
    }

    /// The event's `type` and fields.
    static func fields(of event: PlayerEvent) -> [String: Any] {
        func quality(_ q: Quality) -> [String: Any] {
            var out: [String: Any] = ["kind": q.kind, "id": q.id, "bandwidth": q.bandwidth]
            if let c = q.codecs { out["codecs"] = c }
            if let w = q.width { out["width"] = w }
            if let h = q.height { out["height"] = h }
            return out
        }
        func ad(_ a: AdBreak) -> [String: Any] {
            var out: [String: Any] = ["start": a.start, "end": a.end]
            if let id = a.id { out["id"] = id }
            if let c = a.creative { out["creative"] = c }
            return out
        }
        switch event {
        case .stateChanged(let s): return ["type": "stateChanged", "state": s.rawValue]
        case .sourceLoaded(let url, let type): return ["type": "sourceLoaded", "url": url, "streamType": type.rawValue]
        case .activeQualityChanged(let q): return ["type": "activeQualityChanged", "quality": quality(q)]
        case .bandwidthTest(let bps, let q): return ["type": "bandwidthTest", "bitsPerSecond": bps, "quality": quality(q)]
        case .firstFrame(let s): return ["type": "firstFrame", "seconds": s]
        case .timeOffsetChanged(let s): return ["type": "timeOffsetChanged", "seconds": s]
        case .playbackRateChanged(let r): return ["type": "playbackRateChanged", "rate": r]
        case .latencyJump(let e): return ["type": "latencyJump", "error": e]
        case .targetLatencyChanged(let s, let r): return ["type": "targetLatencyChanged", "seconds": s, "requested": r]
        case .recovering(let next): return ["type": "recovering", "nextDelay": next]
        case .recovered: return ["type": "recovered"]
        case .configApplied(let t): return ["type": "configApplied", "targetLatency": t.map { $0 as Any } ?? NSNull()]
        case .error(let e, let fatal): return ["type": "error", "code": e.code.description, "message": e.message, "fatal": fatal]
        case .outputChanged(let d): return ["type": "outputChanged", "detail": d]
        case .decoderFallback(let d): return ["type": "decoderFallback", "detail": d]
        case .volumeChanged(let v, let m): return ["type": "volumeChanged", "volume": v, "muted": m]
        case .timeUpdate(let p): return ["type": "timeUpdate", "position": p]
        case .seeked(let to): return ["type": "seeked", "to": to]
        case .seekClamped(let r, let to): return ["type": "seekClamped", "requested": r, "to": to]
        case .delayChanged(let s): return ["type": "delayChanged", "seconds": s]
        case .streamerMuted: return ["type": "streamerMuted"]
        case .streamerUnmuted: return ["type": "streamerUnmuted"]
        case .muteMusicStarted: return ["type": "muteMusicStarted"]
        case .muteMusicStopped: return ["type": "muteMusicStopped"]
        case .adStarted(let a): return ["type": "adStarted", "ad": ad(a)]
        case .adFinished(let a): return ["type": "adFinished", "ad": ad(a)]
        case .ended: return ["type": "ended"]
        case .scheduleEntry(let e):
            return ["type": "scheduleEntry", "source": e.source.description, "playlist": e.playlist,
                    "start": e.start.timeIntervalSince1970, "end": e.end.timeIntervalSince1970]
        case .item(let e):
            var out: [String: Any] = ["type": "item", "event": e.kind.name, "id": e.id, "index": e.index, "serverTime": e.serverTime]
            if let t = e.mediaTime { out["mediaTime"] = t }
            if case .quartile(let q) = e.kind { out["quartile"] = q }
            if case .failed(let error) = e.kind {
                out["code"] = error.code.description
                out["message"] = error.message
            }
            return out
        }
    }
}
