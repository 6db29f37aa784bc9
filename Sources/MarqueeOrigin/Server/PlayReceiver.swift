import Foundation
import MarqueeStreaming

/// `POST /plays`: a proof-of-play receiver, as an operator's server would be: it keeps every
/// record's id with how many times it came, answers 503 while ``outage`` is set (an outage
/// the uploader must ride out), and 400 to a body that is not a batch of records.
public final class PlayReceiver: Sendable {
    private struct State {
        var counts: [String: Int] = [:]
        var order: [String] = []
        var batches = 0
        var outage = false
        var token: String?
        var refused = 0
    }
    private let state = Locked(State())

    public init() {}

    /// Whether the receiver answers 503 (down).
    public var outage: Bool {
        get { state.withLock { $0.outage } }
        set { state.withLock { $0.outage = newValue } }
    }

    /// The bearer token a batch must carry (`Authorization: Bearer <token>`; nil: none asked);
    /// a batch without it is answered 401 and counted in ``refused``.
    public var token: String? {
        get { state.withLock { $0.token } }
        set { state.withLock { $0.token = newValue } }
    }
    /// Batches answered 401.
    public var refused: Int { state.withLock { $0.refused } }

    /// Each record id received, with how many times.
    public var counts: [String: Int] { state.withLock { $0.counts } }
    /// The ids in the order they first came.
    public var order: [String] { state.withLock { $0.order } }
    /// Batches accepted.
    public var batches: Int { state.withLock { $0.batches } }

    func receive(_ body: [UInt8]?, key: String?, authorization: String?) -> OriginResponder.Reply {
        if outage { return OriginResponder.Reply(.serviceUnavailable, "proof-of-play receiver down") }
        let unauthorized = state.withLock { state in
            guard let token = state.token, authorization != "Bearer \(token)" else { return false }
            state.refused += 1
            return true
        }
        if unauthorized { return OriginResponder.Reply(.unauthorized, "a bearer token is needed") }
        guard let body, let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let box = object["box"] as? String, let records = object["records"] as? [[String: Any]]
        else { return OriginResponder.Reply(.badRequest, "not a batch of records") }
        state.withLock { state in
            state.batches += 1
            for record in records {
                guard let sequence = record["sequence"] as? Int else { continue }
                let id = (record["epoch"] as? String).map { "\(box)-\($0)-\(sequence)" } ?? "\(box)-\(sequence)"
                if state.counts[id] == nil { state.order.append(id) }
                state.counts[id, default: 0] += 1
            }
        }
        return OriginResponder.Reply(.ok, "{\"received\": \(records.count)}")
    }
}
