/// Something that happened to a playlist item (``PlaylistPlayer``): the analytics a signage or
/// feed player reports (Firework's impression, start, pause, resume, quartiles, finish).
///
/// Every event names its item (``id``, ``index``), carries the item's media time when it
/// happened (``mediaTime``: the presentation time of its stream, seconds) and the
/// server-corrected wall clock (``serverTime``: the last clock measured against a live item's
/// server, else the local clock).
public struct PlaylistItemEvent: Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The item's source loaded and it began to play.
        case started
        /// Its first picture was presented (audio-only: its first sound was heard).
        case impression
        /// Paused by ``PlaylistPlayer/pause()``.
        case paused
        /// Resumed by ``PlaylistPlayer/resume()``.
        case resumed
        /// 25, 50, 75 or 100 % of an on-demand item (or of a capped one's ``PlaylistItem/duration``)
        /// was presented: fired when the picture at that media time is.
        case quartile(Int)
        /// It played to its end, or for its ``PlaylistItem/playingTime``.
        case finished
        /// It was left before its end: ``PlaylistPlayer/next()``, ``PlaylistPlayer/previous()``,
        /// a jump, or ``PlaylistPlayer/stop()``.
        case skipped
        /// It could not be played (its error): it is skipped and the playlist goes on.
        case failed(PlayerError)

        /// The kind's name (`started`, `impression`, …, `quartile`, `failed`).
        public var name: String {
            switch self {
            case .started: "started"
            case .impression: "impression"
            case .paused: "paused"
            case .resumed: "resumed"
            case .quartile: "quartile"
            case .finished: "finished"
            case .skipped: "skipped"
            case .failed: "failed"
            }
        }
    }

    /// What happened.
    public var kind: Kind
    /// The item's ``PlaylistItem/id``.
    public var id: String
    /// The item's index in the playlist's items; -1 when a replacement of the playlist
    /// removed it (it plays to its end).
    public var index: Int
    /// The item's media time then (its stream's presentation time, seconds); nil before its
    /// first picture and for an item that never played.
    public var mediaTime: Double?
    /// The server-corrected wall clock then, Unix seconds.
    public var serverTime: Double

    /// An event of `kind` for the item `id` at `index`.
    public init(_ kind: Kind, id: String, index: Int, mediaTime: Double?, serverTime: Double) {
        (self.kind, self.id, self.index, self.mediaTime, self.serverTime) = (kind, id, index, mediaTime, serverTime)
    }
}
