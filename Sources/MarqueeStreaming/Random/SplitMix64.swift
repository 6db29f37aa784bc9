/// Sebastiano Vigna's SplitMix64: a small, fast, seedable generator (not for cryptography),
/// for what must be reproducible from a seed: the origin's fault draws, a playlist's shuffle.
package struct SplitMix64: RandomNumberGenerator, Sendable, Hashable {
    package var state: UInt64

    package init(state: UInt64) { self.state = state }

    package mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        return Self.finalised(state)
    }

    /// The generator's output function (a 64-bit mix) applied to `value`.
    package static func finalised(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }
}
