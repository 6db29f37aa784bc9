public import Foundation
import MarqueeStreaming

/// How a gain ramp moves.
package enum RampShape: String, Sendable, Hashable {
    /// Linear in amplitude.
    case linear
    /// Sine/cosine: a fade-in and a fade-out of the same length cross-fade at constant power.
    case equalPower
}

/// Mute music, ad breaks and their ramps (``PlayerOptions/mixing``).
///
/// When the broadcaster mutes (an event on the stream), the stream fades out and the mute music
/// fades in, looped; on unmute they cross back. During an ad break the stream and the music
/// are ramped to 0 and the ad creative's audio plays; they return after it.
public struct MixOptions: Sendable, Hashable {
    /// Played (looped) while the broadcaster has muted the stream: a file path or file/http(s)
    /// URL of anything libavformat reads. Downloaded once into ``cacheDirectory``, so it plays
    /// offline afterwards. `nil`: the stream is left as it is (silent) while muted.
    public var muteMusic: URL?
    /// Cross-fade between the stream and the mute music, seconds. Default 1.
    public var muteCrossfade: Double = 1.0
    /// The shape of the stream/mute-music cross-fade. Default equal power.
    package var muteCrossfadeShape: RampShape = .equalPower
    /// The loop point of the mute music is cross-faded over this long (linear), seconds, so it
    /// never clicks. Default 0.03.
    package var loopCrossfade: Double = 0.03
    /// Ad creatives, played in turn for breaks whose event names none (file paths or URLs,
    /// cached like the music).
    public var adCreatives: [URL] = []
    /// Ramp of the stream/music down and the ad up at a break's start, and back at its end,
    /// seconds. Default 0.25.
    public var adFade: Double = 0.25
    /// The shape of the ``adFade`` ramps. Default linear.
    package var adFadeShape: RampShape = .linear
    /// How long a break lasts when its cue gives no duration and no end cue comes, seconds.
    public var defaultAdDuration: Double = 30
    /// Where music and creatives are kept; default `$XDG_CACHE_HOME/marquee` (else
    /// `~/.cache/marquee`).
    public var cacheDirectory: URL?

    /// Mixing with `muteMusic` and `adCreatives` (file paths or file/http(s) URLs), the ramps
    /// at their defaults. ``Player/init(options:router:logger:)`` checks the values.
    public init(muteMusic: URL? = nil, adCreatives: [URL] = []) {
        self.muteMusic = muteMusic
        self.adCreatives = adCreatives
    }

    func validated() throws(PlayerError) -> MixOptions {
        for (name, v, max) in [
            ("muteCrossfade", muteCrossfade, 60.0), ("adFade", adFade, 60), ("loopCrossfade", loopCrossfade, 5),
        ]
        where !(v >= 0 && v <= max) {
            throw PlayerError(.invalidOptions, "mixing.\(name) \(v) s is outside 0…\(Int(max))")
        }
        guard defaultAdDuration > 0, defaultAdDuration <= 3600 else {
            throw PlayerError(.invalidOptions, "mixing.defaultAdDuration \(defaultAdDuration) s is outside 0…3600")
        }
        for url in [muteMusic].compactMap({ $0 }) + adCreatives
        where !["file", "http", "https"].contains(url.scheme?.lowercased() ?? "") {
            throw PlayerError(.invalidOptions, "mixing: \(Redact.url(url)) is not a file or http(s) URL")
        }
        return self
    }
}
