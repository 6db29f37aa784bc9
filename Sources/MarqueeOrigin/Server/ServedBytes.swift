import Foundation
import MarqueeStreaming

/// Body bytes the origin has sent (what an uplink carries), for venue measurements:
/// `GET /origin/stats`.
/// With `?media`, also how often each of (at least) the last ``mediaPathsKept`` media paths was sent
/// whole or in part (bounded: an origin serving for days does not grow).
final class ServedBytes: Sendable {
    private let state = Locked((bytes: 0, requests: 0, media: [String: Int](), order: [String]()))
    static let mediaPathsKept = 4096

    /// `n` more bytes; `request`: they begin an answer.
    func add(_ n: Int, mediaPath: String? = nil, request: Bool = true) {
        state.withLock {
            $0.bytes += n
            if request { $0.requests += 1 }
            guard let mediaPath else { return }
            if $0.media[mediaPath] == nil {
                $0.order.append(mediaPath)
                if $0.order.count > 2 * Self.mediaPathsKept {  // forget the older half at once (amortised)
                    for old in $0.order.prefix(Self.mediaPathsKept) { $0.media[old] = nil }
                    $0.order.removeFirst(Self.mediaPathsKept)
                }
            }
            $0.media[mediaPath, default: 0] += 1
        }
    }
    var bytes: Int { state.withLock { $0.bytes } }
    var requests: Int { state.withLock { $0.requests } }

    func json(media: Bool) -> String {
        state.withLock { s in
            var out = "{\"bytes\":\(s.bytes),\"requests\":\(s.requests)"
            if media {
                let entries = s.media.sorted { $0.key < $1.key }.map {
                    "\"\($0.key.replacingOccurrences(of: "\"", with: "\\\""))\":\($0.value)"
                }
                out += ",\"media\":{\(entries.joined(separator: ","))}"
            }
            return out + "}"
        }
    }
}
