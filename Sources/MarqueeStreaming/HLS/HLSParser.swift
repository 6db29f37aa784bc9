import Foundation

/// The line parser behind ``HLSPlaylist/parse(_:url:)``.
struct HLSParser {
    let text: String
    let url: URL
    /// The playlist's directory (``directory(of:)``): a plain relative segment URI is resolved
    /// by appending to it (``resolve(_:_:)``).
    private let directory: String?

    init(text: String, url: URL) {
        self.text = text
        self.url = url
        self.directory = Self.directory(of: url)
    }
    /// Playlists bigger than this are refused.
    static let maxBytes = 8 << 20
    /// Playlists of more lines are refused (a 24-hour window of 2 s segments is ~130,000).
    static let maxLines = 500_000
    /// A longer line (a tag or a URI) is refused.
    static let maxLineBytes = 64 << 10
    /// A tag with more attributes is refused.
    static let maxAttributes = 256

    private struct Pending {
        var duration: Double?
        var title: String?
        var discontinuity = false
        var byteRange: HLSByteRange?
        var programDateTime: Date?
        var cueOut = false
        var cueOutDuration: Double?
        var cueIn = false
        var parts: [HLSPart] = []
    }

    func parse() throws(ManifestError) -> HLSPlaylist {
        guard text.utf8.count <= Self.maxBytes else {
            throw ManifestError(.tooLarge, "playlist over \(Self.maxBytes) bytes")
        }
        let lineCount = text.utf8.reduce(1) { $1 == UInt8(ascii: "\n") ? $0 + 1 : $0 }
        guard lineCount <= Self.maxLines else {
            throw ManifestError(.tooLarge, "playlist of \(lineCount) lines, over \(Self.maxLines)")
        }
        // Lines split on the bytes (CR LF and LF; a CR left at the end is trimmed).
        let raw = text.utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if let long = raw.firstIndex(where: { $0.count > Self.maxLineBytes }) {
            throw ManifestError(.tooLarge, "line \(long + 1): \(raw[long].count) bytes, over \(Self.maxLineBytes)")
        }
        var lines = raw.map { Substring($0).trimmedBlanks() }
        if let first = lines.first, first.hasPrefix("\u{FEFF}") { lines[0] = String(first.dropFirst()) }
        guard lines.first == "#EXTM3U" else {
            throw ManifestError(.notAManifest, "not an HLS playlist: the first line is not #EXTM3U")
        }
        if lines.contains(where: { $0.hasPrefix("#EXT-X-STREAM-INF") }) {
            return .multivariant(try multivariant(lines))
        }
        return .media(try media(lines))
    }

    // MARK: multivariant

    private func multivariant(_ lines: [String]) throws(ManifestError) -> HLSMultivariantPlaylist {
        var playlist = HLSMultivariantPlaylist()
        var pending: [String: String]?
        var pendingLine = 0
        for (index, line) in lines.enumerated() {
            let n = index + 1
            if line.hasPrefix("#EXT-X-STREAM-INF:") {
                pending = try attributes(line, n)
                pendingLine = n
            } else if line.hasPrefix("#EXT-X-MEDIA:") {
                let a = try attributes(line, n)
                guard let type = a["TYPE"].flatMap(HLSRendition.Kind.init(rawValue:)), let group = a["GROUP-ID"],
                    let name = a["NAME"]
                else {
                    throw ManifestError(.invalidValue, "line \(n): EXT-X-MEDIA needs TYPE, GROUP-ID and NAME")
                }
                playlist.renditions.append(
                    HLSRendition(
                        kind: type, groupID: group, name: name, language: a["LANGUAGE"],
                        isDefault: a["DEFAULT"] == "YES",
                        autoselect: a["AUTOSELECT"] == "YES",
                        uri: try a["URI"].map { u throws(ManifestError) in try resolve(u, n) }))
            } else if line == "#EXT-X-INDEPENDENT-SEGMENTS" {
                playlist.independentSegments = true
            } else if !line.isEmpty, !line.hasPrefix("#"), let a = pending {
                guard let bandwidth = a["BANDWIDTH"].flatMap(Int.init) else {
                    throw ManifestError(
                        .invalidValue, "line \(pendingLine): EXT-X-STREAM-INF without a numeric BANDWIDTH")
                }
                var variant = HLSVariant(uri: try resolve(line, n), bandwidth: bandwidth)
                variant.averageBandwidth = a["AVERAGE-BANDWIDTH"].flatMap(Int.init)
                variant.codecs = a["CODECS"]
                if let resolution = a["RESOLUTION"] {
                    let wh = resolution.lowercased().split(separator: "x").compactMap { Int($0) }
                    guard wh.count == 2 else {
                        throw ManifestError(
                            .invalidValue, "line \(pendingLine): RESOLUTION \"\(resolution)\" is not <w>x<h>")
                    }
                    (variant.width, variant.height) = (wh[0], wh[1])
                }
                variant.frameRate = a["FRAME-RATE"].flatMap(Double.init)
                variant.audioGroup = a["AUDIO"]
                playlist.variants.append(variant)
                pending = nil
            }
        }
        guard !playlist.variants.isEmpty else {
            throw ManifestError(.noPlayableContent, "multivariant playlist without a variant URI")
        }
        return playlist
    }

    // MARK: media

    private func media(_ lines: [String]) throws(ManifestError) -> HLSMediaPlaylist {
        var p = HLSMediaPlaylist()
        var next = Pending()
        var map: HLSMap?
        var key: HLSKey?
        var sequence: UInt64?
        var discontinuities: UInt64 = 0
        var lastByteRangeEnd: (uri: String, end: Int)?
        var clock: Date?  // program date-time of the next segment
        for (index, line) in lines.enumerated() {
            let n = index + 1
            guard !line.isEmpty else { continue }
            if !line.hasPrefix("#") {  // a segment URI
                guard let duration = next.duration else {
                    throw ManifestError(.invalidValue, "line \(n): segment \"\(line)\" without #EXTINF")
                }
                if sequence == nil { sequence = p.mediaSequence }
                if next.discontinuity { discontinuities += 1 }
                let (discontinuitySequence, pastLast) = p.discontinuitySequence.addingReportingOverflow(discontinuities)
                guard !pastLast else {
                    throw ManifestError(.invalidValue, "line \(n): discontinuity sequence number past 2^64 − 1")
                }
                if var range = next.byteRange {
                    if range.offset < 0 {  // no @offset: continues the previous range of the same resource
                        guard let last = lastByteRangeEnd, last.uri == line else {
                            throw ManifestError(
                                .invalidValue,
                                "line \(n): EXT-X-BYTERANGE without an offset and no previous range of \(line)")
                        }
                        range.offset = last.end
                    }
                    next.byteRange = range
                    let (end, past) = range.offset.addingReportingOverflow(range.length)
                    guard !past else {
                        throw ManifestError(.invalidValue, "line \(n): EXT-X-BYTERANGE ends past any resource")
                    }
                    lastByteRangeEnd = (line, end)
                }
                let date = next.programDateTime ?? clock
                p.segments.append(
                    HLSSegment(
                        uri: try resolve(line, n), duration: duration, title: next.title, sequence: sequence!,
                        discontinuitySequence: discontinuitySequence, discontinuity: next.discontinuity,
                        byteRange: next.byteRange, map: map, key: key, programDateTime: date, cueOut: next.cueOut,
                        cueOutDuration: next.cueOutDuration, cueIn: next.cueIn, parts: next.parts))
                clock = date.map { $0.addingTimeInterval(duration) }
                // The number after it must exist too (HLSMediaPlaylist.nextSequence, reloads).
                let (following, overflow) = sequence!.addingReportingOverflow(1)
                guard !overflow else {
                    throw ManifestError(.invalidValue, "line \(n): media sequence number past 2^64 − 1")
                }
                sequence = following
                next = Pending()
                continue
            }
            let (tag, value) = Self.split(line)
            switch tag {
            case "#EXTINF":
                let fields = value.split(separator: ",", maxSplits: 1, omittingEmptySubsequences: false)
                guard let d = fields.first.flatMap({ Double($0.trimmedBlanks()) }), d >= 0, d.isFinite else {
                    throw ManifestError(.invalidValue, "line \(n): #EXTINF duration \"\(value)\" is not a number")
                }
                next.duration = d
                let title = fields.count > 1 ? String(fields[1]) : ""
                next.title = title.isEmpty ? nil : title
            case "#EXT-X-VERSION": p.version = Int(value)
            case "#EXT-X-TARGETDURATION":
                guard let d = Double(value), d > 0 else {
                    throw ManifestError(.invalidValue, "line \(n): EXT-X-TARGETDURATION \"\(value)\"")
                }
                p.targetDuration = d
            case "#EXT-X-MEDIA-SEQUENCE":
                guard let s = UInt64(value) else {
                    throw ManifestError(.invalidValue, "line \(n): EXT-X-MEDIA-SEQUENCE \"\(value)\"")
                }
                p.mediaSequence = s
            case "#EXT-X-DISCONTINUITY-SEQUENCE":
                guard let s = UInt64(value) else {
                    throw ManifestError(.invalidValue, "line \(n): EXT-X-DISCONTINUITY-SEQUENCE \"\(value)\"")
                }
                p.discontinuitySequence = s
            case "#EXT-X-DISCONTINUITY": next.discontinuity = true
            case "#EXT-X-ENDLIST": p.endList = true
            case "#EXT-X-PLAYLIST-TYPE":
                guard let t = HLSMediaPlaylist.PlaylistType(rawValue: value) else {
                    throw ManifestError(
                        .invalidValue, "line \(n): EXT-X-PLAYLIST-TYPE \"\(value)\" is not EVENT or VOD")
                }
                p.playlistType = t
            case "#EXT-X-BYTERANGE": next.byteRange = try byteRange(value, n)
            case "#EXT-X-MAP":
                let a = try attributes(line, n)
                guard let uri = a["URI"] else { throw ManifestError(.invalidValue, "line \(n): EXT-X-MAP without URI") }
                map = HLSMap(
                    uri: try resolve(uri, n),
                    byteRange: try a["BYTERANGE"].map { v throws(ManifestError) in try byteRange(v, n) })
            case "#EXT-X-KEY":
                let a = try attributes(line, n)
                guard let method = a["METHOD"].flatMap(HLSKey.Method.init(rawValue:)) else {
                    throw ManifestError(
                        .invalidValue,
                        "line \(n): EXT-X-KEY METHOD \"\(a["METHOD"] ?? "")\" is not NONE, AES-128 or SAMPLE-AES")
                }
                if method == .none {
                    key = nil
                } else {
                    guard let uri = a["URI"] else {
                        throw ManifestError(.invalidValue, "line \(n): EXT-X-KEY without URI")
                    }
                    key = HLSKey(
                        method: method, uri: try resolve(uri, n),
                        iv: try a["IV"].map { v throws(ManifestError) in try hex(v, n, bytes: 16) })
                }
            case "#EXT-X-PROGRAM-DATE-TIME":
                guard let date = Self.date(value) else {
                    throw ManifestError(.invalidValue, "line \(n): EXT-X-PROGRAM-DATE-TIME \"\(value)\"")
                }
                next.programDateTime = date
            case "#EXT-X-DATERANGE": p.dateRanges.append(try dateRange(line, n))
            case "#EXT-X-CUE-OUT", "#EXT-OATCLS-SCTE35":
                if tag == "#EXT-X-CUE-OUT" {
                    next.cueOut = true
                    let d = value.hasPrefix("DURATION=") ? String(value.dropFirst(9)) : value
                    next.cueOutDuration = Double(d)
                }
            case "#EXT-X-CUE-IN": next.cueIn = true
            case "#EXT-X-PART-INF":
                p.partTarget = try attributes(line, n)["PART-TARGET"].flatMap(Double.init)
            case "#EXT-X-PART":
                let a = try attributes(line, n)
                guard let uri = a["URI"], let d = a["DURATION"].flatMap(Double.init) else {
                    throw ManifestError(.invalidValue, "line \(n): EXT-X-PART needs URI and DURATION")
                }
                next.parts.append(
                    HLSPart(
                        uri: try resolve(uri, n), duration: d, independent: a["INDEPENDENT"] == "YES",
                        byteRange: try a["BYTERANGE"].map { v throws(ManifestError) in try byteRange(v, n) }))
            case "#EXT-X-PRELOAD-HINT":
                let a = try attributes(line, n)
                if a["TYPE"] == "PART", let uri = a["URI"] { p.preloadHint = try resolve(uri, n) }
            case "#EXT-X-SERVER-CONTROL":
                let a = try attributes(line, n)
                p.canBlockReload = a["CAN-BLOCK-RELOAD"] == "YES"
                p.holdBack = a["HOLD-BACK"].flatMap(Double.init)
                p.partHoldBack = a["PART-HOLD-BACK"].flatMap(Double.init)
            case "#EXT-X-START":
                p.startOffset = try attributes(line, n)["TIME-OFFSET"].flatMap(Double.init)
            default:
                break  // unknown tags are ignored (RFC 8216 §4.1)
            }
        }
        p.pendingParts = next.parts
        guard p.targetDuration > 0 || p.segments.isEmpty else {
            throw ManifestError(.invalidValue, "media playlist without EXT-X-TARGETDURATION")
        }
        return p
    }

    // MARK: values

    /// An ISO 8601 date-time; also with a basic-format offset (`+0000`, as ffmpeg writes it).
    static func date(_ text: String) -> Date? {
        var t = text.trimmedBlanks()
        let tail = Array(t.suffix(5))
        if tail.count == 5, tail[0] == "+" || tail[0] == "-", tail.dropFirst().allSatisfy(\.isNumber), t.contains("T") {
            t.insert(":", at: t.index(t.endIndex, offsetBy: -2))
        }
        return XSDateTime.date(t)
    }

    /// `#TAG:value` → ("#TAG", "value").
    static func split(_ line: String) -> (String, String) {
        guard let colon = line.firstIndex(of: ":") else { return (line, "") }
        // Blanks around a value (`#EXTINF: 2.0 ,`, written by hand or by a sloppy packager) are not part of it.
        return (String(line[..<colon]), line[line.index(after: colon)...].trimmedBlanks())
    }

    /// An attribute list (RFC 8216 §4.2): `KEY=value,KEY="quoted, with commas",…`.
    func attributes(_ line: String, _ n: Int) throws(ManifestError) -> [String: String] {
        let list = Self.split(line).1
        var out: [String: String] = [:]
        var i = list.startIndex
        while i < list.endIndex {
            guard let eq = list[i...].firstIndex(of: "=") else {
                throw ManifestError(.invalidValue, "line \(n): attribute without '=' in \"\(list)\"")
            }
            let name = list[i..<eq].trimmedBlanks()
            var j = list.index(after: eq)
            let value: String
            if j < list.endIndex, list[j] == "\"" {
                let start = list.index(after: j)
                guard let close = list[start...].firstIndex(of: "\"") else {
                    throw ManifestError(.invalidValue, "line \(n): unterminated quoted string")
                }
                value = String(list[start..<close])
                j = list.index(after: close)
            } else {
                let end = list[j...].firstIndex(of: ",") ?? list.endIndex
                value = list[j..<end].trimmedBlanks()
                j = end
            }
            guard !name.isEmpty else { throw ManifestError(.invalidValue, "line \(n): an attribute without a name") }
            out[name] = value
            guard out.count <= Self.maxAttributes else {
                throw ManifestError(.tooLarge, "line \(n): over \(Self.maxAttributes) attributes")
            }
            if j < list.endIndex, list[j] == "," { j = list.index(after: j) }
            i = j
        }
        return out
    }

    /// `n[@o]`; offset -1 when not given.
    func byteRange(_ value: String, _ n: Int) throws(ManifestError) -> HLSByteRange {
        let parts = value.split(separator: "@")
        guard let length = parts.first.flatMap({ Int($0) }), length >= 0, parts.count <= 2 else {
            throw ManifestError(.invalidValue, "line \(n): byte range \"\(value)\" is not <n>[@<o>]")
        }
        let offset = parts.count == 2 ? Int(parts[1]) : -1
        guard let offset, parts.count == 1 || offset >= 0 else {
            throw ManifestError(.invalidValue, "line \(n): byte range \"\(value)\"")
        }
        // No resource is a petabyte: bounded, an end (offset + length) is always a number.
        guard length <= 1 << 50, offset <= 1 << 50 else {
            throw ManifestError(.invalidValue, "line \(n): byte range \"\(value)\" past any resource")
        }
        return HLSByteRange(length: length, offset: offset)
    }

    func hex(_ value: String, _ n: Int, bytes: Int? = nil) throws(ManifestError) -> [UInt8] {
        var digits = Substring(value)
        if digits.hasPrefix("0x") || digits.hasPrefix("0X") { digits = digits.dropFirst(2) }
        var out: [UInt8] = []
        var it = digits.makeIterator()
        while let hi = it.next() {
            guard let lo = it.next(), let byte = UInt8(String([hi, lo]), radix: 16) else {
                throw ManifestError(.invalidValue, "line \(n): \"\(value)\" is not a hexadecimal sequence")
            }
            out.append(byte)
        }
        if let bytes, out.count != bytes {
            throw ManifestError(.invalidValue, "line \(n): \"\(value)\" is not \(bytes) bytes")
        }
        return out
    }

    private func dateRange(_ line: String, _ n: Int) throws(ManifestError) -> HLSDateRange {
        let a = try attributes(line, n)
        guard let id = a["ID"], let start = a["START-DATE"].flatMap({ Self.date($0) }) else {
            throw ManifestError(.invalidValue, "line \(n): EXT-X-DATERANGE needs ID and a START-DATE")
        }
        var r = HLSDateRange(id: id, classKind: a["CLASS"], startDate: start)
        r.endDate = a["END-DATE"].flatMap { Self.date($0) }
        r.duration = a["DURATION"].flatMap(Double.init)
        r.plannedDuration = a["PLANNED-DURATION"].flatMap(Double.init)
        r.scte35Out = try a["SCTE35-OUT"].map { v throws(ManifestError) in try hex(v, n) }
        r.scte35In = try a["SCTE35-IN"].map { v throws(ManifestError) in try hex(v, n) }
        r.scte35Cmd = try a["SCTE35-CMD"].map { v throws(ManifestError) in try hex(v, n) }
        r.clientAttributes = a.filter { $0.key.hasPrefix("X-") }
        return r
    }

    private func resolve(_ uri: String, _ n: Int) throws(ManifestError) -> URL {
        // A plain relative path (`0/42.m4s`, `seg42.ts?token=…`: what nearly every packager
        // writes) resolves, by RFC 3986 §5.2, to the base's directory followed by it. Building
        // that string skips Foundation's general resolution, which was half of a reload's cost.
        if let directory, Self.isPlainRelativePath(uri), let resolved = URL(string: directory + uri) { return resolved }
        guard let resolved = URL(string: uri, relativeTo: url)?.absoluteURL else {
            throw ManifestError(.invalidValue, "line \(n): \"\(uri)\" is not a URI")
        }
        return resolved
    }

    /// The directory `url`'s relative references resolve against (`./` resolved, as
    /// `RepresentationTimeline` finds a BaseURL's), for a URL with a host; nil otherwise.
    static func directory(of url: URL) -> String? {
        guard url.host != nil else { return nil }
        return URL(string: "./", relativeTo: url)?.absoluteString
    }

    /// A relative-path reference with no scheme, no dot segments and only characters a URI
    /// holds as they are: appending it to the base's directory is its resolution.
    static func isPlainRelativePath(_ uri: String) -> Bool {
        guard let first = uri.utf8.first, first != UInt8(ascii: "/"), first != UInt8(ascii: "?") else { return false }
        var inPath = true
        for b in uri.utf8 {
            switch b {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"),
                UInt8(ascii: "="),
                UInt8(ascii: "&"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"), UInt8(ascii: "@"),
                UInt8(ascii: "!"),
                UInt8(ascii: "$"), UInt8(ascii: "'"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "*"):
                continue
            case UInt8(ascii: "?"): inPath = false
            case UInt8(ascii: ":") where !inPath: continue
            default: return false  // a colon in the path (a scheme?), "%", "#", blanks, non-ASCII: the general way
            }
        }
        let path = uri.utf8.prefix { $0 != UInt8(ascii: "?") }
        return !path.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).contains {
            $0.elementsEqual(".".utf8) || $0.elementsEqual("..".utf8)
        }
    }
}

extension StringProtocol {
    /// Without leading and trailing spaces, tabs and CRs (Foundation's `trimmingCharacters`
    /// bridges through NSString, which made it the costliest part of a playlist reload).
    fileprivate func trimmedBlanks() -> String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        guard let first = firstIndex(where: { !blank($0) }), let last = lastIndex(where: { !blank($0) }) else {
            return ""
        }
        return String(self[first...last])
    }
}
