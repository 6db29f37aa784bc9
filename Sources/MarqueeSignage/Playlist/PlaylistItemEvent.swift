public import Marquee

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
        /// It played to its end, or for its ``PlaylistItem/playingTime``, or until its schedule
        /// entry ended (``SchedulePlayer``).
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

/// The quartiles of an item's length still to fire, in order (both watchers of
/// ``PlaylistPlayer``: streams by media time, files by time shown).
struct Quartiles {
    /// The next one to fire, 1…4 (5: all fired).
    private(set) var next = 1

    /// Progress (seconds) at which quartile `q` is due: its share of `length`; the last one
    /// 20 ms before the end (the last picture is presented a frame before it).
    static func due(_ q: Int, length: Double) -> Double { length * Double(q) / 4 - (q == 4 ? 0.02 : 0) }

    /// The quartiles due at `progress` of `length`, each with its share of the length (seconds
    /// from the item's start); taken.
    mutating func take(progress: Double, length: Double) -> [(percent: Int, share: Double)] {
        var out: [(percent: Int, share: Double)] = []
        while next <= 4, progress >= Self.due(next, length: length) {
            out.append((next * 25, length * Double(next) / 4))
            next += 1
        }
        return out
    }

    /// The quartiles not fired yet (the item ended first); taken.
    mutating func rest() -> [Int] {
        defer { next = 5 }
        return next <= 4 ? (next...4).map { $0 * 25 } : []
    }

    /// Progress at which the next one is due; nil when none is left.
    func nextDue(length: Double) -> Double? { next <= 4 ? Self.due(next, length: length) : nil }
}
