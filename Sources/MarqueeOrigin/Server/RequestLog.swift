import Foundation
import MarqueeStreaming

/// The origin's request log (`GET /origin/requests`): the last ``kept`` requests, each its
/// method, path, query (without CMCD) and the Common Media Client Data it carried, as the
/// `CMCD` query argument and as `CMCD-*` headers (lower-cased names), as JSON.
final class RequestLog: Sendable {
    struct Entry {
        var method: String, path: String, query: String?, cmcdQuery: String?, cmcdHeaders: [(String, String)],
            time: Double
    }
    private let state = Locked([Entry]())
    static let kept = 2048

    func add(method: String, path: String, query: String?, cmcdQuery: String?, cmcdHeaders: [(String, String)]) {
        let entry = Entry(
            method: method, path: path, query: query, cmcdQuery: cmcdQuery, cmcdHeaders: cmcdHeaders,
            time: Date().timeIntervalSince1970)
        state.withLock {
            $0.append(entry)
            if $0.count > 2 * Self.kept { $0.removeFirst(Self.kept) }  // amortised
        }
    }

    func json() -> [UInt8] {
        let entries = state.withLock { Array($0.suffix(Self.kept)) }
        let objects: [[String: Any]] = entries.map { e in
            var o: [String: Any] = ["method": e.method, "path": e.path, "time": e.time]
            if let q = e.query { o["query"] = q }
            if let c = e.cmcdQuery { o["cmcd"] = c }
            if !e.cmcdHeaders.isEmpty {
                o["cmcdHeaders"] = Dictionary(e.cmcdHeaders, uniquingKeysWith: { a, b in a + "," + b })
            }
            return o
        }
        return Array(
            (try? JSONSerialization.data(withJSONObject: objects, options: [.sortedKeys, .withoutEscapingSlashes]))
                ?? Data("[]".utf8))
    }
}
