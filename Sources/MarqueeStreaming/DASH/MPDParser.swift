import Foundation

/// Why a manifest could not be used. `code` says what kind of problem; `message` says where.
package struct ManifestError: Error, Hashable, Sendable, CustomStringConvertible {
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case tooLarge, doctypeRefused, malformed, notAManifest, invalidValue, noPlayableContent
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The document is bigger than the parser's limit.
        package static let tooLarge = Code(.tooLarge)
        /// The document declares a DTD (refused: entity expansion and external fetches).
        package static let doctypeRefused = Code(.doctypeRefused)
        /// The document is not XML (or not a playlist) even after the usual repairs.
        package static let malformed = Code(.malformed)
        /// Well-formed, but not a DASH MPD / HLS playlist.
        package static let notAManifest = Code(.notAManifest)
        /// A required attribute is missing or has a value that cannot be used.
        package static let invalidValue = Code(.invalidValue)
        /// Nothing in the manifest can be played.
        package static let noPlayableContent = Code(.noPlayableContent)

        package var description: String { base.rawValue }
    }

    package var code: Code
    package var message: String

    package init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    package var description: String { "manifest \(code): \(message)" }
}

/// Parses DASH MPDs with FoundationXML's `XMLParser`.
///
/// Refuses DTDs and documents over ``maxBytes``. Copes with a known real-world defect — an
/// attribute glued to the previous attribute's closing quote (`…xsd"profiles=…`) — by
/// re-parsing once with the missing space inserted.
package struct MPDParser: Sendable {
    /// Largest manifest accepted, in bytes (default 4 MiB).
    package var maxBytes: Int

    package init(maxBytes: Int = 4 << 20) {
        self.maxBytes = maxBytes
    }

    package func parse(_ data: Data) throws(ManifestError) -> MPD {
        let root: XMLNode
        do {
            root = try XMLTree.parse(data, maxBytes: maxBytes)
        } catch {
            switch error {
            case .malformed(let line, let column, let reason):
                guard let repaired = Self.repairGluedAttributes(data),
                    let node = try? XMLTree.parse(repaired, maxBytes: maxBytes)
                else {
                    throw ManifestError(.malformed, "not well-formed XML at line \(line), column \(column): \(reason)")
                }
                root = node
            case .tooLarge(let size):
                throw ManifestError(.tooLarge, "\(size) bytes is over the \(maxBytes)-byte limit")
            case .doctypeRefused:
                throw ManifestError(.doctypeRefused, "a DOCTYPE declaration is not accepted in a manifest")
            case .empty:
                throw ManifestError(.malformed, "no root element")
            }
        }
        guard root.name == "MPD" || root.name.hasSuffix(":MPD") else {
            throw ManifestError(.notAManifest, "root element is <\(root.name)>, not <MPD>")
        }
        return try MPDBuilder.mpd(root)
    }

    /// Inserts a space where a quote is directly followed by an attribute name (`"a="…"b=`).
    static func repairGluedAttributes(_ data: Data) -> Data? {
        var out = [UInt8]()
        out.reserveCapacity(data.count + 16)
        var inTag = false
        var quote: UInt8? = nil
        var changed = false
        var i = data.startIndex
        while i < data.endIndex {
            let c = data[i]
            out.append(c)
            if let q = quote {
                if c == q {
                    quote = nil
                    let next = data.index(after: i)
                    if next < data.endIndex, Self.isNameStart(data[next]) {
                        out.append(UInt8(ascii: " "))
                        changed = true
                    }
                }
            } else if inTag {
                if c == UInt8(ascii: "\"") || c == UInt8(ascii: "'") { quote = c }
                if c == UInt8(ascii: ">") { inTag = false }
            } else if c == UInt8(ascii: "<") {
                inTag = true
            }
            i = data.index(after: i)
        }
        return changed ? Data(out) : nil
    }

    private static func isNameStart(_ c: UInt8) -> Bool {
        (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == UInt8(ascii: "_")
    }
}

/// Maps the XML tree onto the ``MPD`` model, applying DASH inheritance of SegmentTemplate.
private enum MPDBuilder {
    static func mpd(_ root: XMLNode) throws(ManifestError) -> MPD {
        var mpd = MPD()
        switch root["type"] ?? "static" {
        case "static": mpd.type = .static
        case "dynamic": mpd.type = .dynamic
        case let other: throw ManifestError(.invalidValue, "MPD@type \"\(other)\" is neither static nor dynamic")
        }
        mpd.id = root["id"]
        mpd.profiles = root["profiles"]
        mpd.availabilityStartTime = try date(root, "availabilityStartTime")
        mpd.publishTime = try date(root, "publishTime")
        mpd.mediaPresentationDuration = try duration(root, "mediaPresentationDuration")
        mpd.minimumUpdatePeriod = try duration(root, "minimumUpdatePeriod")
        mpd.timeShiftBufferDepth = try duration(root, "timeShiftBufferDepth")
        mpd.suggestedPresentationDelay = try duration(root, "suggestedPresentationDelay")
        mpd.maxSegmentDuration = try duration(root, "maxSegmentDuration")
        mpd.minBufferTime = try duration(root, "minBufferTime")
        mpd.baseURLs = baseURLs(root)
        mpd.locations = root.children("Location").map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }
        mpd.utcTimings = root.children("UTCTiming").compactMap { node in
            node["schemeIdUri"].map { UTCTiming(schemeIdUri: $0, value: node["value"] ?? "") }
        }
        if let sd = root.child("ServiceDescription") { mpd.serviceDescription = try serviceDescription(sd) }
        if mpd.type == .dynamic && mpd.availabilityStartTime == nil {
            throw ManifestError(.invalidValue, "a dynamic MPD needs MPD@availabilityStartTime")
        }
        for (index, node) in root.children("Period").enumerated() {
            var period = try self.period(node, index: index)
            if period.start == nil && index == 0 && mpd.type == .dynamic { period.start = 0 }
            mpd.periods.append(period)
        }
        if mpd.periods.isEmpty { throw ManifestError(.noPlayableContent, "the MPD has no Period") }
        return mpd
    }

    static func serviceDescription(_ node: XMLNode) throws(ManifestError) -> ServiceDescription {
        var sd = ServiceDescription()
        if let latency = node.child("Latency") {
            sd.latencyTarget = try double(latency, "target")
            sd.latencyMin = try double(latency, "min")
            sd.latencyMax = try double(latency, "max")
        }
        if let rate = node.child("PlaybackRate") {
            sd.playbackRateMin = try double(rate, "min")
            sd.playbackRateMax = try double(rate, "max")
        }
        return sd
    }

    static func period(_ node: XMLNode, index: Int) throws(ManifestError) -> Period {
        var period = Period()
        period.id = node["id"]
        period.start = try duration(node, "start")
        period.duration = try duration(node, "duration")
        period.baseURLs = baseURLs(node)
        for stream in node.children("EventStream") { period.eventStreams.append(try eventStream(stream)) }
        var periodTemplate: SegmentTemplate?
        if let n = node.child("SegmentTemplate") { periodTemplate = try template(n, parent: nil) }
        for set in node.children("AdaptationSet") {
            period.adaptationSets.append(try adaptationSet(set, parentTemplate: periodTemplate))
        }
        return period
    }

    static func adaptationSet(_ node: XMLNode, parentTemplate: SegmentTemplate?) throws(ManifestError) -> AdaptationSet
    {
        var set = AdaptationSet()
        set.id = node["id"]
        set.contentType = node["contentType"]
        set.mimeType = node["mimeType"]
        set.codecs = node["codecs"]
        set.lang = node["lang"]
        set.baseURLs = baseURLs(node)
        set.eventStreams = node.children("InbandEventStream").map { n in
            EventStream(schemeIdUri: n["schemeIdUri"] ?? "")
        }
        set.roles = descriptors(node, "Role")
        set.audioChannelConfigurations = descriptors(node, "AudioChannelConfiguration")
        set.attributes = node.attributes
        var setTemplate = parentTemplate
        if let n = node.child("SegmentTemplate") { setTemplate = try template(n, parent: parentTemplate) }
        for rep in node.children("Representation") {
            set.representations.append(try representation(rep, in: node, setTemplate: setTemplate))
        }
        return set
    }

    static func representation(_ node: XMLNode, in set: XMLNode, setTemplate: SegmentTemplate?) throws(ManifestError)
        -> Representation
    {
        guard let id = node["id"] else { throw ManifestError(.invalidValue, "a Representation has no @id") }
        var rep = Representation(id: id, bandwidth: try int(node, "bandwidth") ?? 0)
        rep.codecs = node["codecs"] ?? set["codecs"]
        rep.mimeType = node["mimeType"] ?? set["mimeType"]
        rep.width = try inheritedInt(node, set, "width")
        rep.height = try inheritedInt(node, set, "height")
        rep.frameRate = try frameRate(node["frameRate"] ?? set["frameRate"])
        rep.audioSamplingRate = try inheritedInt(node, set, "audioSamplingRate")
        rep.baseURLs = baseURLs(node)
        rep.segmentTemplate = setTemplate
        if let n = node.child("SegmentTemplate") { rep.segmentTemplate = try template(n, parent: setTemplate) }
        rep.hasSegmentBase = node.child("SegmentBase") != nil || set.child("SegmentBase") != nil
        rep.kind = kind(
            contentType: node["contentType"] ?? set["contentType"], mimeType: rep.mimeType, codecs: rep.codecs)
        rep.audioChannelConfigurations = descriptors(node, "AudioChannelConfiguration")
        rep.attributes = node.attributes
        return rep
    }

    static func kind(contentType: String?, mimeType: String?, codecs: String?) -> MediaKind {
        if let type = contentType.flatMap(MediaKind.init(rawValue:)) { return type }
        if let mime = mimeType, let major = mime.split(separator: "/").first {
            if major == "application" { return .text }
            if let type = MediaKind(rawValue: String(major)) { return type }
        }
        if let codecs {
            if codecs.hasPrefix("avc") || codecs.hasPrefix("hev") || codecs.hasPrefix("hvc") { return .video }
            if codecs.hasPrefix("mp4a") || codecs.hasPrefix("ac-3") || codecs.hasPrefix("ec-3") || codecs == "opus" {
                return .audio
            }
        }
        return .unknown
    }

    static func template(_ node: XMLNode, parent: SegmentTemplate?) throws(ManifestError) -> SegmentTemplate {
        var t = parent ?? SegmentTemplate()
        if let v = node["media"] { t.media = v }
        if let v = node["initialization"] { t.initialization = v }
        if let v = try uint(node, "timescale") {
            guard v > 0 else { throw ManifestError(.invalidValue, "SegmentTemplate@timescale must be positive") }
            t.timescale = v
        }
        if let v = try uint(node, "duration") {
            guard v > 0 else { throw ManifestError(.invalidValue, "SegmentTemplate@duration must be positive") }
            t.duration = v
        }
        if let v = try uint(node, "startNumber") { t.startNumber = v }
        if let v = try uint(node, "endNumber") { t.endNumber = v }
        if let v = try uint(node, "presentationTimeOffset") { t.presentationTimeOffset = v }
        if let v = node["availabilityTimeOffset"] {
            if v == "INF" || v == "inf" {
                t.availabilityTimeOffset = .infinity
            } else if let d = Double(v), d >= 0 {
                t.availabilityTimeOffset = d
            } else {
                throw ManifestError(.invalidValue, "SegmentTemplate@availabilityTimeOffset \"\(v)\" is not a number")
            }
        }
        if let v = node["availabilityTimeComplete"] { t.availabilityTimeComplete = v != "false" }
        if let timeline = node.child("SegmentTimeline") {
            var entries: [SegmentTimelineEntry] = []
            for s in timeline.children("S") {
                guard let d = try uint(s, "d"), d > 0 else {
                    throw ManifestError(.invalidValue, "SegmentTimeline S needs a positive @d")
                }
                entries.append(
                    SegmentTimelineEntry(t: try uint(s, "t"), n: try uint(s, "n"), d: d, r: try int(s, "r") ?? 0))
            }
            t.timeline = entries
        }
        return t
    }

    static func eventStream(_ node: XMLNode) throws(ManifestError) -> EventStream {
        var stream = EventStream(schemeIdUri: node["schemeIdUri"] ?? "")
        stream.value = node["value"]
        stream.timescale = max(1, try uint(node, "timescale") ?? 1)
        stream.presentationTimeOffset = try uint(node, "presentationTimeOffset") ?? 0
        for e in node.children("Event") {
            var event = EventStream.Event()
            event.presentationTime = try uint(e, "presentationTime") ?? 0
            event.duration = try uint(e, "duration")
            event.id = e["id"]
            // SCTE 214 / DASH-IF: an XML+bin SCTE-35 cue is `<scte35:Signal><scte35:Binary>base64…`.
            let binary = e.children.first { $0.name.hasSuffix("Signal") }?.children.first {
                $0.name.hasSuffix("Binary")
            }
            let body = e["messageData"] ?? (binary ?? e).text.trimmingCharacters(in: .whitespacesAndNewlines)
            event.messageData = body.isEmpty ? nil : body
            stream.events.append(event)
        }
        return stream
    }

    static func descriptors(_ node: XMLNode, _ name: String) -> [Descriptor] {
        node.children(name).compactMap { n in n["schemeIdUri"].map { Descriptor(schemeIdUri: $0, value: n["value"]) } }
    }

    static func baseURLs(_ node: XMLNode) -> [String] {
        node.children("BaseURL").map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }.filter { !$0.isEmpty }
    }

    // MARK: attribute values

    static func uint(_ node: XMLNode, _ name: String) throws(ManifestError) -> UInt64? {
        guard let v = node[name] else { return nil }
        guard let n = UInt64(v.trimmingCharacters(in: .whitespaces)) else {
            throw ManifestError(.invalidValue, "\(node.name)@\(name) \"\(v)\" is not an unsigned integer")
        }
        return n
    }

    static func inheritedInt(_ node: XMLNode, _ parent: XMLNode, _ name: String) throws(ManifestError) -> Int? {
        if let v = try int(node, name) { return v }
        return try int(parent, name)
    }

    static func int(_ node: XMLNode, _ name: String) throws(ManifestError) -> Int? {
        guard let v = node[name] else { return nil }
        guard let n = Int(v.trimmingCharacters(in: .whitespaces)) else {
            throw ManifestError(.invalidValue, "\(node.name)@\(name) \"\(v)\" is not an integer")
        }
        return n
    }

    static func double(_ node: XMLNode, _ name: String) throws(ManifestError) -> Double? {
        guard let v = node[name] else { return nil }
        guard let n = Double(v.trimmingCharacters(in: .whitespaces)), n.isFinite else {
            throw ManifestError(.invalidValue, "\(node.name)@\(name) \"\(v)\" is not a number")
        }
        return n
    }

    static func frameRate(_ value: String?) throws(ManifestError) -> Double? {
        guard let value else { return nil }
        let parts = value.split(separator: "/")
        if parts.count == 2, let n = Double(parts[0]), let d = Double(parts[1]), d > 0 { return n / d }
        if parts.count == 1, let n = Double(parts[0]) { return n }
        throw ManifestError(.invalidValue, "frameRate \"\(value)\" is not a number or ratio")
    }

    static func duration(_ node: XMLNode, _ name: String) throws(ManifestError) -> Double? {
        guard let v = node[name] else { return nil }
        guard let d = ISO8601Duration.seconds(v) else {
            throw ManifestError(.invalidValue, "\(node.name)@\(name) \"\(v)\" is not an ISO 8601 duration")
        }
        return d
    }

    static func date(_ node: XMLNode, _ name: String) throws(ManifestError) -> Date? {
        guard let v = node[name] else { return nil }
        guard let d = XSDateTime.date(v) else {
            throw ManifestError(.invalidValue, "\(node.name)@\(name) \"\(v)\" is not an xs:dateTime")
        }
        return d
    }
}
