import Foundation
public import Marquee
public import MarqueeSignage

/// A player's or a playlist's event as a JSON object, `{"type": <the case name>, <its values by
/// name>}`: the lines of `marquee play --events` and of the control socket's `observe events`.
public enum EventJSON {
    /// A playlist's or a schedule's event: its player's as ``fields(of:)-(PlayerEvent)``, its
    /// own (`item`, `scheduleEntry`, `ended`) likewise.
    public static func fields(of event: SignageEvent) -> [String: Any] {
        switch event {
        case .player(let event): return fields(of: event)
        case .ended: return ["type": "ended"]
        case .scheduleEntry(let e):
            return [
                "type": "scheduleEntry", "source": e.source.description, "playlist": e.playlist,
                "start": e.start.timeIntervalSince1970, "end": e.end.timeIntervalSince1970,
            ]
        case .item(let e):
            var out: [String: Any] = [
                "type": "item", "event": e.kind.name, "id": e.id, "index": e.index, "serverTime": e.serverTime,
            ]
            if let t = e.mediaTime { out["mediaTime"] = t }
            if case .quartile(let q) = e.kind { out["quartile"] = q }
            if case .failed(let error) = e.kind {
                out["code"] = error.code.description
                out["message"] = error.message
            }
            return out
        }
    }

    /// The event's `type` and its fields by name, in seconds where they are times.
    public static func fields(of event: PlayerEvent) -> [String: Any] {
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
        case .bandwidthTest(let bps, let q):
            return ["type": "bandwidthTest", "bitsPerSecond": bps, "quality": quality(q)]
        case .firstFrame(let s): return ["type": "firstFrame", "seconds": s]
        case .timeOffsetChanged(let s): return ["type": "timeOffsetChanged", "seconds": s]
        case .playbackRateChanged(let r): return ["type": "playbackRateChanged", "rate": r]
        case .latencyJump(let e): return ["type": "latencyJump", "error": e]
        case .liveEdgeLearned(let m, let e): return ["type": "liveEdgeLearned", "moved": m, "error": e]
        case .targetLatencyChanged(let s, let r): return ["type": "targetLatencyChanged", "seconds": s, "requested": r]
        case .recovering(let next): return ["type": "recovering", "nextDelay": next]
        case .recovered: return ["type": "recovered"]
        case .configApplied(let t): return ["type": "configApplied", "targetLatency": t.map { $0 as Any } ?? NSNull()]
        case .error(let e, let fatal):
            return ["type": "error", "code": e.code.description, "message": e.message, "fatal": fatal]
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
        case .captionChanged(let text, let position):
            return ["type": "captionChanged", "text": text, "position": position]
        }
    }
}
