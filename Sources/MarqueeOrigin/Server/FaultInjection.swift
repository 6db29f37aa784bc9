import Foundation
import Hummingbird
import MarqueeStreaming

/// One `/live` request as the fault options see it: what it asks for, its fate key and its URL.
struct FaultTarget {
    enum Resource { case manifest, initSegment, mediaSegment }

    var resource: Resource
    /// What ``Faults/strikes(_:_:)`` hashes: a segment's path after the asset (`0/123.m4s`), a
    /// manifest's name and the whole origin-clock second (a manifest changes as time passes).
    var key: String
    /// The request's URL path (as sent) and query: where a redirect points, what the origin counts.
    var path: String
    var query: String?

    /// The target of `rest`, the path components after the asset; nil for what is no resource.
    init?(_ rest: [String], path: String, query: String?, now: Double) {
        switch rest.count {
        case 1 where rest[0].hasSuffix(".mpd") || rest[0].hasSuffix(".m3u8"):
            (resource, key) = (.manifest, "\(rest[0])@\(Int64(now.rounded(.down)))")
        case 2:
            (resource, key) = (rest[1] == "init.mp4" ? .initSegment : .mediaSegment, rest.joined(separator: "/"))
        default:
            return nil
        }
        self.path = path
        self.query = query
    }
}

/// Thrown by a body cut short (`reset_`, `badlength_`): the server then closes the connection,
/// with a TCP reset when `reset` (``Origin`` sets `SO_LINGER` 0 first).
struct ConnectionFault: Error {
    var reset: Bool
}

/// How many times this origin process has answered each URL path that a counted fault
/// (`status_`, `mstatus_`) concerns. Bounded: past `capacity` paths it forgets the older half.
final class VisitCounter: Sendable {
    private struct State {
        var counts: [String: Int] = [:]
        var order: [String] = []
    }
    private let state = Locked(State())
    let capacity: Int

    init(capacity: Int = 65_536) { self.capacity = capacity }

    /// Counts one more visit of `path`; returns how many came before it.
    func visit(_ path: String) -> Int {
        state.withLock { state in
            let before = state.counts[path] ?? 0
            if before == 0 {
                if state.order.count >= capacity {
                    for old in state.order.prefix(capacity / 2) { state.counts[old] = nil }
                    state.order.removeFirst(capacity / 2)
                }
                state.order.append(path)
            }
            state.counts[path] = before + 1
            return before
        }
    }
}

extension OriginResponder {
    /// `redirect_`: a 302 loop of two URLs, `<path>` → `<path>?hop=1` → `<path>` …; nil when the
    /// request is not struck.
    func redirect(_ faults: Faults, _ target: FaultTarget, clock: OriginClock) -> Reply? {
        guard faults.live(at: clock.now()).strikes(.redirect, target.key) else { return nil }
        var reply = Reply(.found, "redirect_ fault: a redirect loop", clock: clock)
        reply.location = target.query == "hop=1" ? target.path : target.path + "?hop=1"
        return reply
    }

    /// `reply` (a 200 for `target`) with the faults that strike it.
    func injectingFaults(_ faults: Faults, into reply: Reply, _ target: FaultTarget, now: Double) -> Reply {
        let faults = faults.live(at: now)
        var reply = reply
        switch target.resource {
        case .manifest:
            if let status = faults.manifestStatus, visits.visit(target.path) < status.count {
                return Self.faultStatus(status.code, "mstatus_", clock: reply.clock)
            }
            if let depth = faults.nestDepth, reply.contentType == "application/dash+xml" {
                reply.body = Self.nesting(depth, into: reply.body)
            }
        case .initSegment:
            if faults.badInit { reply.body = faults.randomBytes(reply.body.count, "badinit", target.key) }
        case .mediaSegment:
            if faults.strikes(.status, target.key), visits.visit(target.path) == 0 {
                return Self.faultStatus(faults.statusCode, "status_", clock: reply.clock)
            }
            reply.body = Self.damaged(reply.body, faults, target.key)
            // Delivery faults are the network's: they strike a segment's first request only (a
            // retry, on a new connection, gets it whole), as status_ does. Damaged bytes are
            // the packager's: every request gets them.
            if visits.visit("delivery " + target.path) == 0 {
                Self.impairDelivery(&reply, faults, target.key, now: now)
            }
        }
        return reply
    }

    private static func faultStatus(_ code: Int, _ option: String, clock: OriginClock) -> Reply {
        Reply(HTTPResponse.Status(code: code, reasonPhrase: "Injected Fault"), "\(option) fault: \(code)", clock: clock)
    }

    /// `corrupt_`, `hugebox_`, `flip_`: the segment's bytes damaged, its length kept.
    private static func damaged(_ body: [UInt8], _ faults: Faults, _ key: String) -> [UInt8] {
        var body = body
        if faults.strikes(.corrupt, key) { body = faults.randomBytes(body.count, Faults.Kind.corrupt.rawValue, key) }
        if faults.strikes(.hugebox, key), body.count >= 4 {
            body.replaceSubrange(0..<4, with: [0x7f, 0xff, 0xff, 0xff])
        }
        if faults.strikes(.flip, key) {
            var generator = faults.generator(Faults.Kind.flip.rawValue, key)
            let payload = payloadRanges(body, transportStream: key.hasSuffix(".ts"))
            for _ in 0..<8 {
                guard let range = payload.randomElement(using: &generator) else { break }
                body[Int.random(in: range, using: &generator)] ^= 1 << UInt8.random(in: 0..<8, using: &generator)
            }
        }
        return body
    }

    /// Where bits can be flipped without touching the container: the `mdat` contents of an fMP4
    /// segment, the bytes after each 4-byte TS packet header, else the whole body.
    private static func payloadRanges(_ body: [UInt8], transportStream: Bool) -> [Range<Int>] {
        if transportStream {
            return stride(from: 0, to: body.count, by: 188).map { $0 + 4..<min($0 + 188, body.count) }.filter {
                !$0.isEmpty
            }
        }
        let boxes = (try? MP4Reader(bytes: body, name: "segment").boxes(in: 0..<body.count)) ?? []
        let mdats = boxes.filter { $0.type == .mdat && $0.size > $0.headerSize }.map { $0.contentStart..<$0.end }
        return mdats.isEmpty && !body.isEmpty ? [0..<body.count] : mdats
    }

    /// `reset_`, `badlength_`, `truncate_`, `empty_`, `garbage_`, `endless_`, `trickle_`, `stall_`, `silent_`:
    /// the first that strikes.
    private static func impairDelivery(_ reply: inout Reply, _ faults: Faults, _ key: String, now: Double) {
        let half = reply.body.count / 2
        if faults.strikes(.reset, key) {
            reply.ending = .cut(at: half, reset: true)
        } else if faults.strikes(.badlength, key) {
            reply.ending = .cut(at: half, reset: false)
        } else if faults.strikes(.truncate, key) {
            reply.body.removeLast(reply.body.count - half)
        } else if faults.strikes(.empty, key) {
            reply.body = []  // a 200 with nothing in it
        } else if faults.strikes(.garbage, key) {
            reply.body = []
            reply.ending = .garbage
        } else if faults.strikes(.endless, key) {
            reply.ending = .endless
        } else if faults.strikes(.trickle, key) {
            reply.limit(faults.trickleKbps, pieceSeconds: 0.05)
        } else if faults.strikes(.stall, key) {
            reply.ending = .stall(at: half)
        } else if faults.strikes(.silent, key) {
            reply.hangUntil = now + Double(OriginResponder.stallSeconds)
        }
    }

    /// `nest_`: `depth` nested `Nest` elements inserted before the MPD's first `Period`.
    static func nesting(_ depth: Int, into mpd: [UInt8]) -> [UInt8] {
        let text = String(decoding: mpd, as: UTF8.self)
        guard let period = text.range(of: "<Period") else { return mpd }
        let nest = String(repeating: "<Nest>", count: depth) + String(repeating: "</Nest>", count: depth) + "\n"
        return Array((text[..<period.lowerBound] + nest + text[period.lowerBound...]).utf8)
    }
}
