import Foundation
import MarqueeStreaming

/// Writes the dynamic MPD of a looped asset under one set of options.
///
/// Segment URLs are relative and owned by the origin, whatever the VOD used:
/// `$RepresentationID$/init.mp4`, `$RepresentationID$/$Number$.m4s` (default) or
/// `$RepresentationID$/t$Time$.m4s` (`segtimeline_1`).
struct LiveManifestWriter {
    var asset: LoopAsset
    var options: LiveOptions
    /// The origin's SNTP port, for `utc_ntp`.
    var sntpPort: Int? = nil
    /// `host[:port]` the client used, for the absolute UTCTiming URLs.
    var authority: String

    static let initializationTemplate = "$RepresentationID$/init.mp4"
    static let numberTemplate = "$RepresentationID$/$Number$.m4s"
    static let timeTemplate = "$RepresentationID$/t$Time$.m4s"

    func write(now: Double) -> String {
        var xml = XMLWriter()
        xml.line("<?xml version=\"1.0\" encoding=\"utf-8\"?>")
        var mpd: [(String, String)] = [
            ("xmlns", "urn:mpeg:dash:schema:mpd:2011"),
            ("profiles", "urn:mpeg:dash:profile:isoff-live:2011"),
            ("type", "dynamic"),
            (
                "availabilityStartTime",
                XSDateTime.string(Date(timeIntervalSince1970: options.availabilityStartTime), milliseconds: false)
            ),
            ("publishTime", XSDateTime.string(Date(timeIntervalSince1970: (now * 1000).rounded(.down) / 1000))),
        ]
        if let mup = options.effectiveMinimumUpdatePeriod {
            mpd.append(("minimumUpdatePeriod", ISO8601Duration.string(mup)))
        }
        mpd.append(("timeShiftBufferDepth", ISO8601Duration.string(options.timeShiftBufferDepth)))
        if let spd = options.suggestedPresentationDelay {
            mpd.append(("suggestedPresentationDelay", ISO8601Duration.string(spd)))
        }
        let maxSegment = asset.maxSegmentDuration
        mpd.append(("maxSegmentDuration", ISO8601Duration.string(maxSegment)))
        mpd.append(("minBufferTime", ISO8601Duration.string(asset.mpd.minBufferTime ?? maxSegment)))
        xml.open("MPD", mpd)
        xml.open("ProgramInformation", [])
        xml.element(
            "Title", [], text: "Marquee origin: \(asset.name) looped every \(LiveOptions.format(asset.loopDuration)) s")
        xml.close("ProgramInformation")
        if options.moved {  // the same stream at its new place: these options without location_1
            var there = options
            there.moved = false
            let path = (["live"] + there.pathComponents + [asset.name, asset.manifestName]).joined(separator: "/")
            xml.element("Location", [], text: "http://\(authority)/\(path)")
        }
        for name in options.baseURLs {
            switch name {
            case "dead": xml.element("BaseURL", [], text: "http://127.0.0.1:9/dead/")
            case "gone": xml.element("BaseURL", [], text: "http://\(authority)/gone/")
            default: xml.element("BaseURL", [], text: "./")
            }
        }
        if let target = options.latencyTarget {
            xml.open("ServiceDescription", [("id", "0")])
            xml.element("Latency", [("target", String(target))])
            xml.close("ServiceDescription")
        }
        for period in periods(now: now) { writePeriod(period, now: now, to: &xml) }
        let timePath =
            (["time"] + (options.timeOffset != 0 ? ["timeoffset_\(LiveOptions.format(options.timeOffset))"] : []))
            .joined(separator: "/")
        for scheme in options.utcTimings {
            switch scheme {
            case "xsdate":
                xml.element(
                    "UTCTiming",
                    [
                        ("schemeIdUri", "urn:mpeg:dash:utc:http-xsdate:2014"),
                        ("value", "http://\(authority)/\(timePath)/xsdate"),
                    ])
            case "iso":
                xml.element(
                    "UTCTiming",
                    [
                        ("schemeIdUri", "urn:mpeg:dash:utc:http-iso:2014"),
                        ("value", "http://\(authority)/\(timePath)/iso"),
                    ])
            case "head":
                xml.element(
                    "UTCTiming",
                    [
                        ("schemeIdUri", "urn:mpeg:dash:utc:http-head:2014"),
                        ("value", "http://\(authority)/\(timePath)/head"),
                    ])
            case "direct":
                xml.element(
                    "UTCTiming", [("schemeIdUri", "urn:mpeg:dash:utc:direct:2014"), ("value", OriginClock.xsDate(now))])
            case "ntp":
                // The SNTP server runs on real time: with timeoffset_ it would contradict the rest.
                if let port = sntpPort, options.timeOffset == 0 {
                    let host = authority.split(separator: ":").dropLast().joined(separator: ":")
                    xml.element(
                        "UTCTiming",
                        [
                            ("schemeIdUri", "urn:mpeg:dash:utc:ntp:2014"),
                            ("value", "\(host.isEmpty ? "127.0.0.1" : host):\(port)"),
                        ])
                }
            default: break
            }
        }
        xml.close("MPD")
        return xml.text
    }

    /// A period of the live presentation: `index` (its id `p<index>`), from `start` to `end`
    /// (presentation seconds; nil: open), its first segment `firstIndex` (0-based from AST).
    struct LivePeriod {
        var index: Int
        var start: Double
        var end: Double?
        var firstIndex: UInt64
    }

    /// The periods listed at `now`: one from 0 without `periods_`; with it, those that have
    /// begun and reach into the time-shift buffer (at most 16).
    func periods(now: Double) -> [LivePeriod] {
        guard let length = options.periodDuration else {
            return [LivePeriod(index: 0, start: 0, end: nil, firstIndex: 0)]
        }
        // Whole `$Number$` segments (their nominal duration, the same in every representation).
        let first = asset.adaptationSets.first?.representations.first
        let segment = first.map { Double($0.nominalDuration) / Double($0.timescale) } ?? asset.maxSegmentDuration
        let segments = max(1, (length / segment).rounded())
        let step = segments * segment
        let edge = max(0, now - options.availabilityStartTime)
        let last = Int((edge / step).rounded(.down))
        let earliest = max(last - 15, Int((max(0, edge - options.timeShiftBufferDepth) / step).rounded(.down)))
        return (earliest...last).map { k in
            LivePeriod(
                index: k, start: Double(k) * step, end: k == last ? nil : Double(k + 1) * step,
                firstIndex: UInt64(k) * UInt64(segments))
        }
    }

    private func writePeriod(_ period: LivePeriod, now: Double, to xml: inout XMLWriter) {
        xml.open("Period", [("id", "p\(period.index)"), ("start", ISO8601Duration.string(period.start))])
        if let mute = options.mute {
            // Presentation time = now − AST on this origin; list the window and 10 min ahead.
            let edge = now - options.availabilityStartTime
            let low = max(period.start, edge - options.timeShiftBufferDepth - mute.length)
            let high = min(period.end.map { $0 - 1e-6 } ?? .infinity, edge + 600)
            var attributes = [("schemeIdUri", EventScheme.broadcast), ("timescale", "1000")]
            if period.start > 0 {
                attributes.append(("presentationTimeOffset", String(Int64((period.start * 1000).rounded()))))
            }
            xml.open("EventStream", attributes)
            if low <= high {
                for (k, t) in mute.occurrences(in: low...high) {
                    xml.element(
                        "Event",
                        [
                            ("presentationTime", String(Int64((t * 1000).rounded()))),
                            ("duration", String(Int64((mute.length * 1000).rounded()))), ("id", String(k)),
                        ],
                        text: "mute")
                }
            }
            xml.close("EventStream")
        }
        for set in asset.adaptationSets { writeAdaptationSet(set, period: period, now: now, to: &xml) }
        xml.close("Period")
    }

    private func writeAdaptationSet(_ set: LoopAdaptationSet, period: LivePeriod, now: Double, to xml: inout XMLWriter)
    {
        var attributes = Self.copied(set.adaptationSet.attributes)
        if set.adaptationSet.attributes["contentType"] == nil { attributes.append(("contentType", set.kind.rawValue)) }
        let repsHaveMime = set.representations.allSatisfy { $0.representation.attributes["mimeType"] != nil }
        if set.adaptationSet.attributes["mimeType"] == nil && !repsHaveMime {
            attributes.append(("mimeType", set.kind == .video ? "video/mp4" : "audio/mp4"))
        }
        xml.open("AdaptationSet", attributes)
        if options.ad != nil { xml.element("InbandEventStream", [("schemeIdUri", EventScheme.scte35Binary)]) }
        for role in set.adaptationSet.roles { xml.element("Role", Self.descriptor(role)) }
        for acc in set.adaptationSet.audioChannelConfigurations {
            xml.element("AudioChannelConfiguration", Self.descriptor(acc))
        }
        for rep in set.representations {
            xml.open("Representation", Self.copied(rep.representation.attributes))
            for acc in rep.representation.audioChannelConfigurations {
                xml.element("AudioChannelConfiguration", Self.descriptor(acc))
            }
            writeTemplate(rep, period: period, now: now, to: &xml)
            xml.close("Representation")
        }
        xml.close("AdaptationSet")
    }

    private func writeTemplate(_ rep: LoopRepresentation, period: LivePeriod, now: Double, to xml: inout XMLWriter) {
        var attributes: [(String, String)] = [("timescale", String(rep.timescale))]
        if !options.segmentTimeline {
            attributes.append(("duration", String(rep.nominalDuration)))
            attributes.append(("startNumber", String(options.startNumber + period.firstIndex)))
        }
        attributes.append(("presentationTimeOffset", String(UInt64((period.start * Double(rep.timescale)).rounded()))))
        if options.availabilityTimeOffset > 0 {
            attributes.append(("availabilityTimeOffset", LiveOptions.format(options.availabilityTimeOffset)))
        }
        attributes.append(("initialization", Self.initializationTemplate))
        attributes.append(("media", options.segmentTimeline ? Self.timeTemplate : Self.numberTemplate))
        guard options.segmentTimeline else {
            xml.element("SegmentTemplate", attributes)
            return
        }
        xml.open("SegmentTemplate", attributes)
        xml.open("SegmentTimeline", [])
        let timeline = LiveTimeline(representation: rep, options: options)
        let ts = Double(rep.timescale)
        let listed = timeline.listedSegments(now: now).filter { seg in
            let start = Double(seg.mediaTime) / ts
            return start >= period.start - 1e-6 && period.end.map { start < $0 - 1e-6 } ?? true
        }
        for entry in Self.compress(listed) {
            var s: [(String, String)] = []
            if let t = entry.t { s.append(("t", String(t))) }
            s.append(("d", String(entry.d)))
            if entry.r > 0 { s.append(("r", String(entry.r))) }
            xml.element("S", s)
        }
        xml.close("SegmentTimeline")
        xml.close("SegmentTemplate")
    }

    /// `S` entries for consecutive segments: `@t` where the timeline does not continue from the
    /// previous end (the first one, and an overlap or gap at a loop point), `@r` for repeats.
    static func compress(_ segments: [LiveSegment]) -> [SegmentTimelineEntry] {
        var out: [SegmentTimelineEntry] = []
        var end: UInt64?
        for seg in segments {
            if let last = out.last, seg.mediaTime == end, seg.duration == last.d {
                out[out.count - 1].r += 1
            } else {
                out.append(SegmentTimelineEntry(t: seg.mediaTime == end ? nil : seg.mediaTime, d: seg.duration))
            }
            end = seg.mediaTime + seg.duration
        }
        return out
    }

    /// The VOD element's attributes worth repeating (no xlink/namespace ones), `id` first.
    private static func copied(_ attributes: [String: String]) -> [(String, String)] {
        attributes.filter { !$0.key.hasPrefix("xlink:") && !$0.key.hasPrefix("xmlns") }
            .sorted { ($0.key == "id" ? "" : $0.key) < ($1.key == "id" ? "" : $1.key) }
            .map { ($0.key, $0.value) }
    }

    private static func descriptor(_ d: Descriptor) -> [(String, String)] {
        [("schemeIdUri", d.schemeIdUri)] + (d.value.map { [("value", $0)] } ?? [])
    }
}

/// A small indenting XML writer that escapes attribute values and text.
struct XMLWriter {
    private(set) var text = ""
    private var depth = 0

    mutating func line(_ s: String) { text += String(repeating: "  ", count: depth) + s + "\n" }

    mutating func open(_ name: String, _ attributes: [(String, String)]) {
        line("<\(name)\(Self.attributes(attributes))>")
        depth += 1
    }

    mutating func close(_ name: String) {
        depth -= 1
        line("</\(name)>")
    }

    mutating func element(_ name: String, _ attributes: [(String, String)], text content: String? = nil) {
        if let content {
            line("<\(name)\(Self.attributes(attributes))>\(Self.escape(content))</\(name)>")
        } else {
            line("<\(name)\(Self.attributes(attributes))/>")
        }
    }

    static func attributes(_ list: [(String, String)]) -> String {
        list.map { " \($0.0)=\"\(escape($0.1))\"" }.joined()
    }

    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&apos;"
            default: out.append(c)
            }
        }
        return out
    }
}
