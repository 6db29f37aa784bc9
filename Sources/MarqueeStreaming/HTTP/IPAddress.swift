import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IPv4 or IPv6 address parsed from its text, so that what a host *is* is decided on parsed
/// bytes, never on how its text begins ("127.evil.example" is a name, "0x7f.1" is refused).
///
/// Only the canonical forms parse: a dotted quad of four decimal numbers (no octal, hex or
/// short forms, which `inet_aton` and so `getaddrinfo` would read as addresses), or an IPv6
/// address as `inet_pton` reads it, with or without brackets. An IPv4-mapped IPv6 address is
/// its IPv4 address.
package enum IPAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(UInt8, UInt8, UInt8, UInt8)
    case v6([UInt8])

    package init?(_ text: String) {
        var t = Substring(text)
        if t.hasPrefix("["), t.hasSuffix("]") { t = t.dropFirst().dropLast() }
        guard !t.isEmpty, t.count <= 64, !t.contains("%") else { return nil }  // no zone ids
        if t.contains(":") {
            var bytes = [UInt8](repeating: 0, count: 16)
            let ok = String(t).withCString { inet_pton(AF_INET6, $0, &bytes) } == 1
            guard ok else { return nil }
            if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff {
                self = .v4(bytes[12], bytes[13], bytes[14], bytes[15])
            } else {
                self = .v6(bytes)
            }
            return
        }
        let parts = t.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var octets: [UInt8] = []
        for part in parts {
            // "010" would be octal to inet_aton: only canonical decimal is an address here.
            guard !part.isEmpty, part.count <= 3, part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber),
                part == "0" || !part.hasPrefix("0"), let value = UInt8(part)
            else { return nil }
            octets.append(value)
        }
        self = .v4(octets[0], octets[1], octets[2], octets[3])
    }

    /// Whether the system's resolver would read `text` as an address although it is not in a
    /// canonical form (`127.1`, `0x7f000001`, `017700000001`, `2130706433`): such a "name" must
    /// never be looked up.
    package static func isAmbiguous(_ text: String) -> Bool {
        guard IPAddress(text) == nil else { return false }
        var addr = in_addr()
        return text.withCString { inet_aton($0, &addr) } != 0
    }

    package var isLoopback: Bool {
        switch self {
        case .v4(let a, _, _, _): a == 127
        case .v6(let b): b[0..<15].allSatisfy { $0 == 0 } && b[15] == 1
        }
    }

    /// RFC 1918, RFC 6598 shared space (carrier NAT), IPv6 unique-local.
    package var isPrivate: Bool {
        switch self {
        case .v4(let a, let b, _, _):
            a == 10 || (a == 172 && (16...31).contains(b)) || (a == 192 && b == 168)
                || (a == 100 && (64...127).contains(b))
        case .v6(let b): b[0] & 0xfe == 0xfc
        }
    }

    /// 169.254/16 (where cloud metadata services answer) and fe80::/10.
    package var isLinkLocal: Bool {
        switch self {
        case .v4(let a, let b, _, _): a == 169 && b == 254
        case .v6(let b): b[0] == 0xfe && b[1] & 0xc0 == 0x80
        }
    }

    /// 0.0.0.0/8 ("this host"), ::, multicast, 240/4 and broadcast.
    package var isSpecial: Bool {
        switch self {
        case .v4(let a, _, _, _): a == 0 || a >= 224
        case .v6(let b): b.allSatisfy { $0 == 0 } || b[0] == 0xff
        }
    }

    /// An address anybody on the internet could also be sent to: none of the above.
    package var isPublic: Bool { !isLoopback && !isPrivate && !isLinkLocal && !isSpecial }

    package var description: String {
        switch self {
        case .v4(let a, let b, let c, let d): return "\(a).\(b).\(c).\(d)"
        case .v6(let bytes):
            var out = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            _ = bytes.withUnsafeBytes { inet_ntop(AF_INET6, $0.baseAddress, &out, socklen_t(out.count)) }
            return String(decoding: out.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    /// The addresses `name` resolves to (TCP), on a thread of its own: `getaddrinfo` blocks.
    /// Empty when it does not resolve.
    package static func resolve(_ name: String) async -> [IPAddress] {
        await withCheckedContinuation { (continuation: CheckedContinuation<[IPAddress], Never>) in
            let thread = Thread { continuation.resume(returning: resolveBlocking(name)) }
            thread.start()
        }
    }

    private static func resolveBlocking(_ name: String) -> [IPAddress] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
            hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(name, nil, &hints, &list) == 0, let first = list else { return [] }
        defer { freeaddrinfo(first) }
        var out: [IPAddress] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let n = node {
            if let sa = n.pointee.ai_addr {
                if n.pointee.ai_family == AF_INET {
                    let a = sa.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr.s_addr }
                    let b = withUnsafeBytes(of: a) { Array($0) }
                    out.append(.v4(b[0], b[1], b[2], b[3]))
                } else if n.pointee.ai_family == AF_INET6 {
                    let a = sa.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { $0.pointee.sin6_addr }
                    let b = withUnsafeBytes(of: a) { Array($0) }
                    if let parsed = IPAddress(IPAddress.v6(b).description) { out.append(parsed) }
                }
            }
            node = n.pointee.ai_next
        }
        return out
    }
}
