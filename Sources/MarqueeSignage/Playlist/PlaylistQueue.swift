public import Marquee
import MarqueeStreaming

/// Which item of a ``Playlist`` plays, and which comes next: a pure state machine the player
/// drives (and an app may hold to show what is coming).
///
/// - An item that ends by itself is followed as ``RepeatMode`` says (``advance()``).
/// - ``next()`` and ``previous()`` always move and wrap at both ends, whatever the repeat
///   mode (as JW Player's), so a remote's buttons never hit a wall.
/// - With shuffle, the order is a permutation drawn from a seed; each wrap draws a new one
///   whose first item is not the one just played.
/// - ``replace(with:)`` (a feed refresh, a new schedule slot) keeps the playing item playing:
///   at its place in the new list when it is still there, else until it ends, after which the
///   new list goes on from the same position.
public struct PlaylistQueue: Sendable, Hashable {
    /// The playlist in force (the last ``replace(with:)``'s).
    public private(set) var playlist: Playlist
    /// Indices into the playlist's items, in the order they play.
    public private(set) var order: [Int]
    /// Index into ``order`` of the item playing; nil before the first and after the last.
    public private(set) var position: Int?
    /// The item playing when it is no longer in the playlist (a replacement removed it): it
    /// plays to its end.
    public private(set) var orphan: PlaylistItem?
    private var random: SplitMix64

    /// A queue over `playlist`, shuffled (when it says so) from `seed`.
    public init(_ playlist: Playlist, seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        self.playlist = playlist
        self.random = SplitMix64(state: seed)
        self.order = []
        self.order = drawOrder(avoidingFirst: nil)
    }

    /// The item playing now.
    public var current: PlaylistItem? {
        if let orphan { return orphan }
        guard let position, order.indices.contains(position) else { return nil }
        return playlist.items[order[position]]
    }

    /// The first item (nil for an empty playlist).
    @discardableResult
    public mutating func start() -> PlaylistItem? {
        orphan = nil
        position = order.isEmpty ? nil : 0
        return current
    }

    /// The item that ``advance()`` would move to, without moving (for preparing it ahead);
    /// with shuffle at a wrap, the first of an order not drawn yet is unknown: nil.
    public var upcoming: PlaylistItem? {
        guard !order.isEmpty else { return nil }
        if orphan != nil { return playlist.items[order[min(position ?? 0, order.count - 1)]] }
        guard let position else { return nil }
        switch playlist.repeatMode {
        case .one: return current
        case .off: return position + 1 < order.count ? playlist.items[order[position + 1]] : nil
        case .all:
            if position + 1 < order.count { return playlist.items[order[position + 1]] }
            return playlist.shuffle && order.count > 1 ? nil : playlist.items[order[0]]
        }
    }

    /// The current item ended by itself: the next one as the repeat mode says, nil when the
    /// playlist is over (repeat off after the last item, or an empty playlist).
    @discardableResult
    public mutating func advance() -> PlaylistItem? {
        guard !order.isEmpty else {
            (orphan, position) = (nil, nil)
            return nil
        }
        if orphan != nil {
            // The removed item ended: the new list from the position it had.
            orphan = nil
            position = min(position ?? 0, order.count - 1)
            return current
        }
        guard let at = position else { return nil }
        switch playlist.repeatMode {
        case .one:
            return current
        case .off:
            position = at + 1 < order.count ? at + 1 : nil
        case .all:
            step(from: at)
        }
        return current
    }

    /// The next item, wrapping after the last (a user's skip).
    @discardableResult
    public mutating func next() -> PlaylistItem? {
        guard !order.isEmpty else { return nil }
        if orphan != nil { return advance() }
        guard let at = position else { return start() }
        step(from: at)
        return current
    }

    /// From the item at `at` of the order to the next one, wrapping after the last.
    private mutating func step(from at: Int) {
        if at + 1 < order.count {
            position = at + 1
        } else {
            wrap(after: order[at])
        }
    }

    /// The previous item, wrapping before the first to the last.
    @discardableResult
    public mutating func previous() -> PlaylistItem? {
        guard !order.isEmpty else { return nil }
        orphan = nil
        let at = position ?? 0
        position = at > 0 ? min(at - 1, order.count - 1) : order.count - 1
        return current
    }

    /// Jumps to the item at `index` of the playlist (its position in the items, not the order).
    public mutating func jump(toIndex index: Int) throws(PlayerError) -> PlaylistItem {
        guard playlist.items.indices.contains(index), let at = order.firstIndex(of: index) else {
            throw PlayerError(.invalidArgument, "item index \(index) is outside 0..<\(playlist.items.count)")
        }
        orphan = nil
        position = at
        return playlist.items[index]
    }

    /// Jumps to the item with `id`.
    public mutating func jump(toID id: String) throws(PlayerError) -> PlaylistItem {
        guard let index = playlist.items.firstIndex(where: { $0.id == id }) else {
            throw PlayerError(.invalidArgument, "no item has the id \"\(id)\"")
        }
        return try jump(toIndex: index)
    }

    /// A new playlist while playing: the playing item goes on (see the type's notes); a new
    /// order is drawn (shuffle) keeping the playing item where it is.
    public mutating func replace(with playlist: Playlist) {
        let playing = current
        let at = position
        self.playlist = playlist
        order = drawOrder(avoidingFirst: nil)
        guard let playing else {
            position = nil
            orphan = nil
            return
        }
        if let index = playlist.items.firstIndex(where: { $0.id == playing.id }),
            let inOrder = order.firstIndex(of: index)
        {
            orphan = nil
            position = inOrder
        } else {
            orphan = playing
            position = at
        }
    }

    /// After the last item of the order: a new order (shuffle, not starting with `last`) or the
    /// same, from its first item.
    private mutating func wrap(after last: Int) {
        if playlist.shuffle { order = drawOrder(avoidingFirst: last) }
        position = 0
    }

    /// The play order: the items' order, or a shuffle of it (Fisher–Yates from the seed) whose
    /// first item is not `avoidingFirst` when there is a choice.
    private mutating func drawOrder(avoidingFirst: Int?) -> [Int] {
        var out = Array(playlist.items.indices)
        guard playlist.shuffle, out.count > 1 else { return out }
        for i in stride(from: out.count - 1, to: 0, by: -1) {
            out.swapAt(i, Int(random.next() % UInt64(i + 1)))
        }
        if let avoid = avoidingFirst, out[0] == avoid { out.swapAt(0, 1 + Int(random.next() % UInt64(out.count - 1))) }
        return out
    }
}
