import MarqueeStreaming

/// What an event on the presentation timeline does, as a stream's events say it (DASH
/// `EventStream`/`emsg`, SCTE-35, HLS date ranges) or as an app places it with
/// ``Player/schedule(_:at:duration:id:)``.
public enum StreamEvent: Sendable, Hashable {
    /// The broadcaster muted the stream: the mute music plays (for the event's duration when
    /// given, else until ``streamerUnmuted``).
    case streamerMuted
    /// The broadcaster unmuted the stream: the mute music stops, the stream is heard again.
    case streamerUnmuted
    /// An ad break starts (for the event's duration when given, else until ``adBreakEnd``):
    /// the stream and the music are ducked, `creative` (a URL or a name among
    /// ``MixOptions/adCreatives``) plays when given.
    case adBreakStart(creative: String?)
    /// The ad break ends: the stream (or the music) comes back.
    case adBreakEnd
    /// Withdraws the ad break announced with the same id (a SCTE-35 cancel).
    case adBreakCancel
    /// Anything else, kept for the application: the event's scheme and value.
    case other(scheme: String, value: String?)

    /// The timeline's own kind.
    var timed: TimedEvent.Kind {
        switch self {
        case .streamerMuted: .streamerMuted
        case .streamerUnmuted: .streamerUnmuted
        case .adBreakStart(let creative): .adBreakStart(creative: creative)
        case .adBreakEnd: .adBreakEnd
        case .adBreakCancel: .adBreakCancel
        case .other(let scheme, let value): .other(scheme: scheme, value: value)
        }
    }
}
