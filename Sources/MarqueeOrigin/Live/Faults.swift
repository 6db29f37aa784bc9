import Foundation
import MarqueeStreaming

/// The fault options of a live URL (`seed_`, `status_`, `reset_`, ..., see ``LiveOptions``):
/// which requests a fault strikes.
///
/// A share-based fault strikes a request when ``draw(_:_:)`` of its fate key is below the share:
/// a pure function of the seed, the option and the key, so the same URL meets the same fate on
/// every fetch and in every run, and two options pick their requests independently. The fate
/// key of a segment is its path after the asset (`0/123.m4s`, `0/t4567.m4s`, `ts/123.ts`), so
/// the other options of the URL do not change which segments are struck.
struct Faults: Sendable, Equatable {
    /// The faults that strike a share (percent) of requests, named by their option key.
    enum Kind: String, CaseIterable, Sendable {
        case status, reset, trickle, truncate, badlength, corrupt, hugebox, flip, endless, redirect, stall, silent,
            empty, garbage
    }

    /// `mstatus_<code>-<n>`: the first `count` requests of each manifest path are answered `code`.
    struct ManifestStatus: Sendable, Equatable {
        var code: Int
        var count: Int
    }

    var seed: UInt64 = 1
    /// Percent (0–100) of the requests each fault strikes.
    var shares: [Kind: Double] = [:]
    /// `status_`: the code; its share is `shares[.status]`.
    var statusCode = 503
    /// `trickle_`: the rate (kbit/s) of a trickled body; its share is `shares[.trickle]`.
    var trickleKbps: Double = 0
    var manifestStatus: ManifestStatus?
    /// `badinit_1`: init segments are random bytes.
    var badInit = false
    /// `nest_`: the depth of the element nested into the MPD.
    var nestDepth: Int?
    /// `rotate_`: seconds each share-based fault strikes in its turn, each turn followed by as
    /// long without faults.
    var rotation: Double?

    static let keys: Set<String> = Set(Kind.allCases.map(\.rawValue)).union([
        "seed", "mstatus", "badinit", "nest", "rotate",
    ])

    /// The faults striking at origin-clock time `now`: all of them, or with `rotate_` the share
    /// of the kind whose turn it is (none between turns). Turns follow the order of
    /// ``Kind/allCases`` among the kinds given a share, from Unix second 0.
    func live(at now: Double) -> Faults {
        guard let rotation else { return self }
        let kinds = Kind.allCases.filter { shares[$0] != nil }
        let slot = Int64((now / rotation).rounded(.down))
        var out = self
        out.shares = [:]
        if !kinds.isEmpty, slot % 2 != 0 {
            let kind = kinds[Int((slot / 2) % Int64(kinds.count))]
            out.shares[kind] = shares[kind]
        }
        return out
    }

    /// Whether `kind` strikes the request with this fate key.
    func strikes(_ kind: Kind, _ key: String) -> Bool {
        guard let percent = shares[kind] else { return false }
        return draw(kind, key) * 100 < percent
    }

    /// A number in [0, 1) that depends only on the seed, `kind` and `key` (FNV-1a, then SplitMix64's
    /// finaliser, so close keys land far apart).
    func draw(_ kind: Kind, _ key: String) -> Double {
        Double(mixed(kind.rawValue, key) >> 11) / Double(UInt64(1) << 53)
    }

    /// A generator that depends only on the seed, `what` (an option key) and `key`: the bytes of
    /// `corrupt_` and `badinit_`, the bits of `flip_`.
    func generator(_ what: String, _ key: String) -> SplitMix64 { SplitMix64(state: mixed(what, key)) }

    /// `count` bytes from `generator(what, key)`.
    func randomBytes(_ count: Int, _ what: String, _ key: String) -> [UInt8] {
        var generator = generator(what, key)
        var out: [UInt8] = []
        out.reserveCapacity(count)
        while out.count < count {
            var word = generator.next()
            for _ in 0..<min(8, count - out.count) {
                out.append(UInt8(truncatingIfNeeded: word))
                word >>= 8
            }
        }
        return out
    }

    private func mixed(_ what: String, _ key: String) -> UInt64 {
        let hash = "\(seed)/\(what)/\(key)".utf8.reduce(UInt64(0xcbf2_9ce4_8422_2325)) {
            ($0 ^ UInt64($1)) &* 0x100_0000_01b3
        }
        return SplitMix64.finalised(hash)
    }
}

extension Faults {
    /// Applies one fault option; false when `key` is not one. The error text is the 400 body.
    mutating func apply(key: String, value: String) throws(OptionError) -> Bool {
        switch key {
        case "seed":
            guard let n = UInt64(value) else {
                throw OptionError("option seed_: \"\(value)\" is not a non-negative integer")
            }
            seed = n
        case "status", "mstatus", "trickle":
            try applyPair(key, value)
        case "badinit":
            guard value == "0" || value == "1" else {
                throw OptionError("option badinit_ takes 0 or 1, not \"\(value)\"")
            }
            badInit = value == "1"
        case "nest":
            guard let depth = Int(value), (1...1_000_000).contains(depth) else {
                throw OptionError("option nest_: \"\(value)\" is not a depth in 1...1000000")
            }
            nestDepth = depth
        case "rotate":
            guard let seconds = Double(value), seconds >= 1, seconds <= 86_400 else {
                throw OptionError("option rotate_: \"\(value)\" is not a number of seconds in 1...86400")
            }
            rotation = seconds
        default:
            guard let kind = Kind(rawValue: key) else { return false }
            guard let percent = Double(value), (0...100).contains(percent) else {
                throw OptionError("option \(key)_: \"\(value)\" is not a percentage in 0...100")
            }
            shares[kind] = percent
        }
        return true
    }

    /// `status_<code>-<pct>`, `mstatus_<code>-<n>`, `trickle_<kbps>-<pct>`.
    private mutating func applyPair(_ key: String, _ value: String) throws(OptionError) {
        let parts = value.split(separator: "-", omittingEmptySubsequences: false).compactMap { Double($0) }
        let forms = [
            "status": "<code 400-599>-<pct 0-100>", "mstatus": "<code 400-599>-<count>",
            "trickle": "<kbps ≥ 1>-<pct 0-100>",
        ]
        let usage = OptionError("option \(key)_: \"\(value)\" is not \(forms[key] ?? "")")
        guard parts.count == 2 else { throw usage }
        let (a, b) = (parts[0], parts[1])
        let isCode = (400...599).contains(a) && a == a.rounded()
        let isPercent = (0...100).contains(b)
        switch key {
        case "status":
            guard isCode, isPercent else { throw usage }
            (statusCode, shares[.status]) = (Int(a), b)
        case "mstatus":
            guard isCode, (0...1_000_000).contains(b), b == b.rounded() else { throw usage }
            manifestStatus = ManifestStatus(code: Int(a), count: Int(b))
        default:
            guard (1...10_000_000).contains(a), isPercent else { throw usage }
            (trickleKbps, shares[.trickle]) = (a, b)
        }
    }

    /// The path components that reproduce these options (those off their default).
    var pathComponents: [String] {
        var out: [String] = []
        if seed != 1 { out.append("seed_\(seed)") }
        for kind in Kind.allCases {
            guard let share = shares[kind].map(LiveOptions.format) else { continue }
            switch kind {
            case .status: out.append("status_\(statusCode)-\(share)")
            case .trickle: out.append("trickle_\(LiveOptions.format(trickleKbps))-\(share)")
            default: out.append("\(kind.rawValue)_\(share)")
            }
        }
        if let m = manifestStatus { out.append("mstatus_\(m.code)-\(m.count)") }
        if badInit { out.append("badinit_1") }
        if let depth = nestDepth { out.append("nest_\(depth)") }
        if let rotation { out.append("rotate_\(LiveOptions.format(rotation))") }
        return out
    }
}
