public import Marquee

/// What a ``PlaylistPlayer`` or a ``SchedulePlayer`` reports: its player's events, passed on in
/// order, and its own.
public enum SignageEvent: Sendable, Hashable {
    /// One of the player's events. An item's end and its fatal error are not passed on as
    /// such: the playlist goes on (a fatal error comes as a non-fatal one, the item skipped).
    case player(PlayerEvent)
    /// A playlist item's analytics: started, shown, a quartile, finished, skipped, failed.
    case item(PlaylistItemEvent)
    /// A schedule's entry came into force (``SchedulePlayer``): at its switch, and the first
    /// one at ``SchedulePlayer/play()``.
    case scheduleEntry(ScheduleEntry)
    /// The playlist played to its end (repeat off, after its last item).
    case ended
}

/// The events of a playlist or a schedule: `EventStream` of ``SignageEvent``.
public typealias SignageEvents = EventStream<SignageEvent>
