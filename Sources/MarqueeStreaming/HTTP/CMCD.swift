import Foundation

/// Common Media Client Data (CTA-5004, version 1): what a player tells the CDN with each request
/// — which session, what object, how full its buffer is — so the CDN's logs can be joined to
/// the player's QoE. Sent as the `CMCD` query argument or as the four `CMCD-Request`,
/// `CMCD-Object`, `CMCD-Status` and `CMCD-Session` headers (a header mode needs the CDN to
/// allow them across origins; on loopback and for set-top boxes it is simply sent).
///
/// Keys sent: `sid`, `cid`, `sf` (d: DASH, h: HLS), `st` (l: live, v: on demand), `ot` (m:
/// manifest, v: video, a: audio, av: muxed, i: init segment, k: key, o: other), `br` and `tb`
/// (kbps), `d` (ms), `bl` (ms, rounded to 100), `mtp` (kbps, rounded to 100), `pr` (when not 1),
/// `su` (while starting) and `bs` (after a stall, on the next request). Keys are sorted, as
/// the specification asks; `v` is left out (version 1).
package final class CMCDSession: Sendable {
    /// How the data travel.
    package enum Mode: String, Sendable, CaseIterable {
        /// The `CMCD` query argument.
        case query
        /// The `CMCD-*` request headers.
        case headers
    }

    /// The figures of the player that change while it plays.
    package struct State: Sendable {
        package var streamingFormat: String?  // "d" or "h"
        package var streamType: String?  // "l" or "v"
        package var playbackRate = 1.0
        package var starting = true
        package var starved = false  // a stall since the last request
        /// Whether the player has played since it started: buffering before that is the
        /// startup, which `bs` does not report (CTA-5004).
        package var played = false
        /// The measured throughput (bits per second), read when each request is made: the
        /// session's estimate, which a download's end updates. (Copied on the supervisor's
        /// tick, it lagged: under load a segment asked right after the first ones finished
        /// went out without `mtp`.)
        package var throughputSource: (@Sendable () -> Double?)?
        package var topBitrate: Int?  // bits per second
        package init() {}
    }

    package let mode: Mode
    package let sessionId: String
    package let contentId: String?
    private let state: Locked<State>

    package init(mode: Mode, sessionId: String = UUID().uuidString, contentId: String? = nil) {
        self.mode = mode
        self.sessionId = sessionId
        self.contentId = contentId
        self.state = Locked(State())
    }

    /// Changes the session's figures.
    package func update(_ body: (inout State) -> Void) { state.withLock(body) }

    /// What one request is for: set as ``CMCDSession/object`` around the fetch.
    package struct Object: Sendable {
        package var type: String
        package var bitrate: Int?  // bits per second
        package var duration: Double?  // seconds
        package var buffer: Double?  // seconds
        package init(type: String, bitrate: Int? = nil, duration: Double? = nil, buffer: Double? = nil) {
            (self.type, self.bitrate, self.duration, self.buffer) = (type, bitrate, duration, buffer)
        }
    }

    /// The object being fetched by the current task (the fetch of a segment, an init segment,
    /// a key); without one a request is a manifest (`.mpd`, `.m3u8`) or "other".
    @TaskLocal package static var object: Object?

    /// The keys for a request of `url` by the current task, by header (`CMCD-Request`,
    /// `CMCD-Object`, `CMCD-Status`, `CMCD-Session`), each a sorted `key=value` list.
    func keys(for url: URL) -> [(header: String, pairs: [String])] {
        let s = state.withLock { s in
            let copy = s
            s.starved = false
            return copy
        }
        let object = Self.object ?? Object(type: Self.type(of: url))
        func quoted(_ text: String) -> String {
            "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        }
        var request = [String]()
        var objectKeys = [String]()
        var status = [String]()
        var session = [String]()
        if let b = object.buffer { request.append("bl=\(Int((b * 10).rounded()) * 100)") }
        if let t = s.throughputSource?() { request.append("mtp=\(Int((t / 100_000).rounded()) * 100)") }
        if s.starting { request.append("su") }
        if let br = object.bitrate { objectKeys.append("br=\(br / 1000)") }
        if let d = object.duration { objectKeys.append("d=\(Int((d * 1000).rounded()))") }
        objectKeys.append("ot=\(object.type)")
        if let tb = s.topBitrate, object.bitrate != nil { objectKeys.append("tb=\(tb / 1000)") }
        if s.starved { status.append("bs") }
        if let c = contentId { session.append("cid=\(quoted(c))") }
        if abs(s.playbackRate - 1) >= 0.005 { session.append("pr=\(String(format: "%.2f", s.playbackRate))") }
        if let sf = s.streamingFormat { session.append("sf=\(sf)") }
        session.append("sid=\(quoted(sessionId))")
        if let st = s.streamType { session.append("st=\(st)") }
        return [
            ("CMCD-Request", request.sorted()), ("CMCD-Object", objectKeys.sorted()), ("CMCD-Status", status),
            ("CMCD-Session", session.sorted()),
        ]
        .filter { !$0.1.isEmpty }
    }

    /// `url` with the `CMCD` query argument (query mode).
    func url(_ url: URL) -> URL {
        let all = keys(for: url).flatMap(\.pairs).sorted()
        guard var components = URLComponents(url: url, resolvingAgainstBaseURL: false) else { return url }
        var items = components.queryItems ?? []
        items.append(URLQueryItem(name: "CMCD", value: all.joined(separator: ",")))
        components.queryItems = items
        // `URLQueryItem` leaves `=` `,` `"` as they are; the specification wants the value encoded.
        components.percentEncodedQuery = components.percentEncodedQuery.map { Self.encodeValue(in: $0) }
        return components.url ?? url
    }

    /// The headers (headers mode).
    func headers(for url: URL) -> [(String, String)] {
        keys(for: url).map { ($0.header, $0.pairs.joined(separator: ",")) }
    }

    private static func type(of url: URL) -> String {
        switch url.pathExtension.lowercased() {
        case "mpd", "m3u8": "m"
        default: "o"
        }
    }

    /// Percent-encodes the CMCD argument's value (`=`, `,` and `"` included) in a query.
    private static func encodeValue(in query: String) -> String {
        query.split(separator: "&", omittingEmptySubsequences: false).map { part -> String in
            guard part.hasPrefix("CMCD=") else { return String(part) }
            let raw = String(part.dropFirst(5)).removingPercentEncoding ?? String(part.dropFirst(5))
            var allowed = CharacterSet.alphanumerics
            allowed.insert(charactersIn: "-._~")
            return "CMCD=" + (raw.addingPercentEncoding(withAllowedCharacters: allowed) ?? raw)
        }.joined(separator: "&")
    }
}
