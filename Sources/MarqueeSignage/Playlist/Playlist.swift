public import Foundation
public import Marquee

/// One entry of a ``Playlist``: what to play and how.
public struct PlaylistItem: Sendable, Hashable {
    /// What an item is, which says how it is played.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// DASH or HLS (`.mpd`, `.m3u8`): live or on demand, as its manifest says.
        case stream
        /// A progressive file or URL (MP4, or anything libavformat reads), played to its end.
        case file
        /// A still picture (PNG, JPEG), shown for ``PlaylistItem/duration`` (default
        /// ``PlaylistItem/defaultImageDuration``).
        case image

        /// The kind a URL's extension says: `.mpd`/`.m3u8` a stream, `.png`/`.jpg`/`.jpeg` an
        /// image, anything else a file.
        public init(inferredFrom url: URL) {
            switch url.pathExtension.lowercased() {
            case "mpd", "m3u8": self = .stream
            case "png", "jpg", "jpeg": self = .image
            default: self = .file
            }
        }
    }

    /// Unique within its playlist (``PlaylistQueue/jump(toID:)``, analytics, `frames.tsv`).
    public var id: String
    /// Where it is: an `http`, `https` or `file` URL.
    public var url: URL
    /// What it is (how it is played).
    public var kind: Kind
    /// A name to show or report.
    public var title: String?
    /// Tags a ``TagFilter`` is applied to.
    public var tags: [String]
    /// Seconds the item plays at most (an image: how long it is shown); nil: to its end (a live
    /// stream: until the app moves on).
    public var duration: Double?
    /// Seconds into an on-demand item or a file where it starts (not an image's).
    public var startOffset: Double
    /// Played without sound.
    public var muted: Bool
    /// How its pictures fit the screen; nil: the player's `PlayerOptions.fit`.
    public var fit: VideoFit?
    /// A live item's latency target (seconds); nil: the player's.
    public var targetLatency: Double?
    /// The SHA-256 its bytes must have (an image's or a file's, lowercase hex): a download
    /// that does not match is not played (``ContentCache``).
    public var sha256: String?

    /// How long an image is shown without a ``duration`` (mpv's `image-display-duration`).
    public static let defaultImageDuration = 5.0

    /// An item; `kind` nil: from the URL's extension (``Kind/init(inferredFrom:)``).
    public init(
        id: String, url: URL, kind: Kind? = nil, title: String? = nil, tags: [String] = [], duration: Double? = nil,
        startOffset: Double = 0,
        muted: Bool = false, fit: VideoFit? = nil, targetLatency: Double? = nil, sha256: String? = nil
    ) {
        self.id = id
        self.url = url
        self.kind = kind ?? Kind(inferredFrom: url)
        self.title = title
        self.tags = tags
        self.duration = duration
        self.startOffset = startOffset
        self.muted = muted
        self.fit = fit
        self.targetLatency = targetLatency
        self.sha256 = sha256
    }

    /// Seconds it plays at most: its ``duration``, an image's default, else nil.
    public var playingTime: Double? { duration ?? (kind == .image ? Self.defaultImageDuration : nil) }
}

/// What ``PlaylistQueue`` does when an item ends by itself.
public enum RepeatMode: String, Sendable, Hashable, CaseIterable {
    /// On to the next item; after the last, the playlist is over.
    case off
    /// On to the next item; after the last, the first again.
    case all
    /// The same item again.
    case one
}

/// Items played in order (or shuffled), with a repeat mode.
///
/// Read from JSON with ``init(json:relativeTo:defaultRepeat:)``:
///
/// ```json
/// {
///   "items": [
///     {"url": "https://cdn.example/live/main.mpd", "id": "live", "tags": ["news"], "duration": 600},
///     {"url": "promo.mp4", "id": "promo", "title": "Promo", "tags": ["ads"]},
///     {"url": "menu.png", "id": "menu", "duration": 8, "fit": "cover"}
///   ],
///   "repeat": "all",
///   "shuffle": false
/// }
/// ```
///
/// Per item: `url` (required; absolute `http`, `https` or `file`, or a path relative to the
/// document), `id` (unique; default the item's 1-based position), `kind` (`stream`, `file`,
/// `image`; default from the extension), `title`, `tags`, `duration` (seconds, > 0), `start`
/// (seconds, ≥ 0), `muted`, `fit` (`contain`, `cover`, `fill`, `scaledown`), `targetLatency`
/// (seconds, 0…300), `sha256` (64 hex digits: what the bytes of an image or a file must hash
/// to). `repeat`: `off` (default), `all`, `one`. Unknown keys are ignored (newer
/// documents play on older players).
public struct Playlist: Sendable, Hashable {
    /// The items, in their listed order.
    public var items: [PlaylistItem]
    /// What follows an item that ended by itself.
    public var repeatMode: RepeatMode
    /// Whether the items play in a shuffled order (``PlaylistQueue``).
    public var shuffle: Bool

    /// The most items a playlist holds.
    package static let maxItems = 10_000
    /// The largest JSON document read (bytes).
    package static let maxDocumentBytes = 4 << 20

    /// A playlist of `items`; ids must be unique (else `PlayerError.Code.playlist`).
    public init(items: [PlaylistItem], repeatMode: RepeatMode = .off, shuffle: Bool = false) throws(PlayerError) {
        guard items.count <= Self.maxItems else {
            throw PlayerError(.playlist, "\(items.count) items: at most \(Self.maxItems)")
        }
        var seen: [String: Int] = [:]
        for (index, item) in items.enumerated() {
            if let first = seen[item.id] {
                throw PlayerError(.playlist, "items[\(index)]: id \"\(item.id)\" is items[\(first)]'s already")
            }
            seen[item.id] = index
            if let d = item.duration, !(d > 0 && d.isFinite) {
                throw PlayerError(.playlist, "items[\(index)].duration: \(d) s must be > 0")
            }
            if !(item.startOffset >= 0 && item.startOffset.isFinite) {
                throw PlayerError(.playlist, "items[\(index)].start: \(item.startOffset) s must be ≥ 0")
            }
            if let t = item.targetLatency, !(t >= 0 && t <= 300) {
                throw PlayerError(.playlist, "items[\(index)].targetLatency: \(t) s is outside 0…300")
            }
        }
        self.items = items
        self.repeatMode = repeatMode
        self.shuffle = shuffle
    }

    /// The items `filter` lets through, in order (repeat and shuffle kept).
    public func filtered(by filter: TagFilter) -> Playlist {
        var out = self
        out.items = items.filter { filter.matches($0.tags) }
        return out
    }

    /// Reads the JSON document described above; relative item URLs are resolved against
    /// `base` (the document's own URL or directory). Every problem is a
    /// `PlayerError.Code.playlist` error naming where it is (`items[2].duration: …`).
    /// `defaultRepeat`: the repeat mode of a document that names none (a schedule's playlists
    /// loop: ``RepeatMode/all``).
    public init(json: Data, relativeTo base: URL? = nil, defaultRepeat: RepeatMode = .off) throws(PlayerError) {
        guard json.count <= Self.maxDocumentBytes else {
            throw PlayerError(.playlist, "the document is \(json.count) bytes: at most \(Self.maxDocumentBytes)")
        }
        let document: Document
        do {
            document = try JSONDecoder().decode(Document.self, from: json)
        } catch let error as DecodingError {
            throw PlayerError(.playlist, MarqueeConfig.describe(error))
        } catch {
            throw PlayerError(.playlist, "not a JSON playlist: \(error)")
        }
        guard let entries = document.items else {
            throw PlayerError(.playlist, "items: missing (a list of {\"url\": …})")
        }
        var items: [PlaylistItem] = []
        for (index, entry) in entries.enumerated() {
            items.append(try entry.item(index: index, base: base))
        }
        var repeatMode = defaultRepeat
        if let text = document.repeat {
            guard let mode = RepeatMode(rawValue: text.lowercased()) else {
                throw PlayerError(.playlist, "repeat: \"\(text)\" is none of off, all, one")
            }
            repeatMode = mode
        }
        try self.init(items: items, repeatMode: repeatMode, shuffle: document.shuffle ?? false)
    }

    /// The document as JSON decodes it.
    private struct Document: Decodable {
        var items: [Entry]?
        var `repeat`: String?
        var shuffle: Bool?
    }

    private struct Entry: Decodable {
        var url: String?
        var id: String?
        var kind: String?
        var title: String?
        var tags: [String]?
        var duration: Double?
        var start: Double?
        var muted: Bool?
        var fit: String?
        var targetLatency: Double?
        var sha256: String?

        /// An announced SHA-256: 64 hex digits, kept lowercase.
        static func digest(_ text: String?, _ at: String) throws(PlayerError) -> String? {
            guard let text else { return nil }
            let hex = text.lowercased()
            guard hex.count == 64, hex.allSatisfy({ $0.isHexDigit }) else {
                throw PlayerError(.playlist, "\(at).sha256: \"\(text)\" is not 64 hex digits")
            }
            return hex
        }

        func item(index: Int, base: URL?) throws(PlayerError) -> PlaylistItem {
            let at = "items[\(index)]"
            guard let text = url, !text.isEmpty else { throw PlayerError(.playlist, "\(at).url: missing") }
            guard let resolved = Playlist.resolve(text, base: base) else {
                throw PlayerError(
                    .playlist,
                    "\(at).url: \"\(text)\" is no http, https or file URL (nor a path relative to the playlist)")
            }
            var kind: PlaylistItem.Kind?
            if let name = self.kind {
                guard let k = PlaylistItem.Kind(rawValue: name.lowercased()) else {
                    throw PlayerError(.playlist, "\(at).kind: \"\(name)\" is none of stream, file, image")
                }
                kind = k
            }
            var fit: VideoFit?
            if let name = self.fit {
                guard let f = VideoFit(name: name) else {
                    throw PlayerError(.playlist, "\(at).fit: \"\(name)\" is none of contain, cover, fill, scaledown")
                }
                fit = f
            }
            if let id, id.isEmpty { throw PlayerError(.playlist, "\(at).id: empty") }
            return PlaylistItem(
                id: id ?? String(index + 1), url: resolved, kind: kind, title: title, tags: tags ?? [],
                duration: duration, startOffset: start ?? 0,
                muted: muted ?? false, fit: fit, targetLatency: targetLatency, sha256: try Self.digest(sha256, at))
        }
    }

    /// Refuses a playlist fetched from `document` whose items name local files outside
    /// `security`'s allowed directories; the field is `<prefix>items[i].url`.
    func checkLocalPaths(_ security: DocumentSecurity, document: URL, field prefix: String = "") throws(DocumentRefusal)
    {
        for (index, item) in items.enumerated() {
            try security.checkLocal(item.url, field: "\(prefix)items[\(index)].url", document: document)
        }
    }

    /// `text` as an absolute `http`/`https`/`file` URL, or a path resolved against `base`.
    static func resolve(_ text: String, base: URL?) -> URL? {
        if let url = URL(string: text), let scheme = url.scheme?.lowercased() {
            return ["http", "https", "file"].contains(scheme) ? url : nil
        }
        if text.hasPrefix("/") { return URL(fileURLWithPath: text) }
        guard let base else { return URL(fileURLWithPath: text) }
        return URL(string: text, relativeTo: base)?.absoluteURL
    }
}
