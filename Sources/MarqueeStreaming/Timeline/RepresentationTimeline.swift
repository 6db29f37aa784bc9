import Foundation

/// One media segment of a representation, located on the presentation timeline.
package struct SegmentReference: Sendable, Equatable {
    /// `$Number$` of the segment.
    package var number: UInt64
    /// Media time (`$Time$`, the segment's expected `tfdt`) in `timescale` ticks.
    package var time: UInt64
    /// Duration in `timescale` ticks.
    package var duration: UInt64
    package var timescale: UInt64
    /// Presentation time of the first sample, in seconds (period start included).
    package var start: Double
    package var url: URL
    /// The bytes of `url` that are the segment (HLS `EXT-X-BYTERANGE`), nil: all of it.
    package var range: ByteRange? = nil
    /// The key the segment is encrypted with (HLS AES-128), nil when it is in the clear.
    package var key: SegmentKey? = nil
    /// HLS: an `EXT-X-DISCONTINUITY` comes before it (its timestamps start afresh).
    package var discontinuity = false

    /// Presentation time just after the last sample, in seconds.
    package var end: Double { start + Double(duration) / Double(timescale) }
}

/// How a segment is encrypted: AES-128-CBC (PKCS#7) under the 16-byte key at `url`, from `iv`.
package struct SegmentKey: Sendable, Equatable {
    package var url: URL
    package var iv: [UInt8]
    package init(url: URL, iv: [UInt8]) {
        self.url = url
        self.iv = iv
    }
}

/// The segments of one representation: template expansion, URL resolution and the
/// presentation-time / availability math of ISO/IEC 23009-1 §5.3.9.5.
///
/// Presentation time `p` of media time `m` is `periodStart + (m − presentationTimeOffset) / timescale`.
/// In a live presentation `p` is announced at wall-clock `availabilityStartTime + p`.
package struct RepresentationTimeline: Sendable {
    package let representation: Representation
    package let template: SegmentTemplate
    package let periodStart: Double
    package let periodDuration: Double?
    package let availabilityStartTime: Date?
    package let isLive: Bool
    package let timeShiftBufferDepth: Double?
    /// The URL segment templates are resolved against (manifest URL and BaseURLs applied).
    package let baseURL: URL
    /// Every location the segments are served from, ``baseURL`` first: several `BaseURL`
    /// elements at one level are alternatives (CDNs), combined level by level in the manifest's
    /// order, at most ``maxLocations``.
    package let baseURLs: [URL]
    package static let maxLocations = 8
    /// Timeline entries expanded (SegmentTimeline addressing only).
    private let entries: [(number: UInt64, time: UInt64, duration: UInt64)]

    package init(
        mpd: MPD, period periodIndex: Int, adaptationSet: AdaptationSet, representation: Representation,
        manifestURL: URL,
        liveEdge: Double? = nil
    ) throws(ManifestError) {
        guard mpd.periods.indices.contains(periodIndex) else {
            throw ManifestError(.invalidValue, "no period \(periodIndex)")
        }
        let period = mpd.periods[periodIndex]
        guard let template = representation.segmentTemplate, template.media != nil else {
            throw ManifestError(
                .noPlayableContent,
                """
                representation \(representation.id) has no SegmentTemplate@media (SegmentBase/SegmentList are not \
                supported)
                """
            )
        }
        guard template.duration != nil || template.timeline != nil else {
            throw ManifestError(
                .invalidValue,
                "representation \(representation.id): SegmentTemplate has neither @duration nor SegmentTimeline")
        }
        self.representation = representation
        self.template = template
        let periodStart = Self.periodStart(mpd: mpd, index: periodIndex)
        self.periodStart = periodStart
        self.periodDuration =
            period.duration
            ?? (periodIndex + 1 < mpd.periods.count ? mpd.periods[periodIndex + 1].start.map { $0 - periodStart } : nil)
            ?? mpd.mediaPresentationDuration.map { $0 - periodStart }
        self.availabilityStartTime = mpd.availabilityStartTime
        self.isLive = mpd.isLive
        self.timeShiftBufferDepth = mpd.timeShiftBufferDepth
        var bases = [mpd.documentURL ?? manifestURL]
        for layer in [mpd.baseURLs, period.baseURLs, adaptationSet.baseURLs, representation.baseURLs]
        where !layer.isEmpty {
            let next = bases.flatMap { base in layer.compactMap { URL(string: $0, relativeTo: base)?.absoluteURL } }
            if !next.isEmpty { bases = Array(next.prefix(Self.maxLocations)) }
        }
        self.baseURLs = bases
        self.baseURL = bases[0]
        let start = self.periodStart
        let limit = self.periodDuration.map { start + $0 } ?? liveEdge
        if let timeline = template.timeline {
            self.entries = Self.expand(timeline, template: template, periodStart: start, until: limit)
        } else {
            self.entries = []
        }
    }

    /// Where period `index` of `mpd` starts (presentation seconds): its `@start`, else the end
    /// of the one before (its start + `@duration`), the first at 0.
    package static func periodStart(mpd: MPD, index: Int) -> Double {
        if let start = mpd.periods[index].start { return start }
        var start = 0.0
        for i in 0..<index {
            start = (mpd.periods[i].start ?? start) + (mpd.periods[i].duration ?? 0)
        }
        return start
    }

    /// The most segments a timeline is expanded to (a hostile `r` or `r = -1` over years would
    /// otherwise fill the memory): over a day of 0.1 s segments.
    static let maxEntries = 1_000_000

    /// Expands S elements; `r = -1` repeats up to the next `S@t` or `until` (presentation seconds).
    /// Stops where `$Time$` or `$Number$` would leave UInt64, and at ``maxEntries``.
    private static func expand(
        _ timeline: [SegmentTimelineEntry], template: SegmentTemplate, periodStart: Double, until: Double?
    ) -> [(number: UInt64, time: UInt64, duration: UInt64)] {
        var out: [(number: UInt64, time: UInt64, duration: UInt64)] = []
        var time = template.presentationTimeOffset
        var number = template.startNumber
        let ts = Double(template.timescale)
        for (index, s) in timeline.enumerated() {
            if let t = s.t { time = t }
            if let n = s.n { number = n }
            var count = s.r < 0 ? 1 : Int(min(UInt64(s.r), UInt64(maxEntries))) + 1
            if s.r < 0 {
                let nextT = index + 1 < timeline.count ? timeline[index + 1].t : nil
                if let nextT, nextT > time {
                    let span = nextT - time
                    count = Int(min(span / s.d + (span % s.d == 0 ? 0 : 1), UInt64(maxEntries)))
                } else if let until {
                    let endTicks = (until - periodStart) * ts + Double(template.presentationTimeOffset)
                    let repeats = ((endTicks - Double(time)) / Double(s.d)).rounded(.up)
                    count = repeats > 0 ? Int(min(repeats, Double(maxEntries))) : 0  // NaN: none
                } else {
                    count = 1
                }
            }
            for _ in 0..<min(count, maxEntries - out.count) {
                let (end, overflow) = time.addingReportingOverflow(s.d)
                guard !overflow, number < .max else { return out }
                out.append((number, time, s.d))
                time = end
                number += 1
            }
        }
        return out
    }

    /// `url` (a segment of this timeline, resolved against ``baseURL``) served from location
    /// `index` of ``baseURLs``; unchanged when it is not under ``baseURL`` (an absolute URL)
    /// or there is no such location.
    package func relocated(_ url: URL, to index: Int) -> URL {
        guard index > 0, index < baseURLs.count, let from = URL(string: "./", relativeTo: baseURL)?.absoluteString,
            let to = URL(string: "./", relativeTo: baseURLs[index])?.absoluteString
        else { return url }
        let text = url.absoluteString
        guard text.hasPrefix(from) else { return url }
        return URL(string: to + text.dropFirst(from.count)) ?? url
    }

    /// Seconds to add to a sample's media time in seconds (`tfdt / timescale`, what a demuxer
    /// reports as `pts_time`) to get its presentation time.
    package var ptsOffset: Double {
        periodStart - Double(template.presentationTimeOffset) / Double(template.timescale)
    }

    package var usesTimeline: Bool { template.timeline != nil }

    /// The initialization segment's URL, if the template names one.
    package var initializationURL: URL? {
        guard let pattern = template.initialization else { return nil }
        return URL(string: expand(pattern, number: nil, time: nil), relativeTo: baseURL)?.absoluteURL
    }

    /// The bytes of ``initializationURL`` that are the init segment (HLS `EXT-X-MAP:BYTERANGE`),
    /// nil: all of it.
    package var initializationRange: ByteRange? { template.initializationRange }

    /// The segment whose presentation interval contains `presentationTime` (the first one
    /// when it is earlier than the first segment), or `nil` past the end.
    package func segment(containing presentationTime: Double) -> SegmentReference? {
        let ts = Double(template.timescale)
        if usesTimeline {
            guard !entries.isEmpty else { return nil }
            let ticks = (presentationTime - periodStart) * ts + Double(template.presentationTimeOffset)
            var lo = 0
            var hi = entries.count - 1
            if ticks < Double(entries[0].time) { return reference(entries[0]) }
            while lo < hi {  // last entry with time <= ticks
                let mid = (lo + hi + 1) / 2
                if Double(entries[mid].time) <= ticks { lo = mid } else { hi = mid - 1 }
            }
            let e = entries[lo]
            return ticks < Double(e.time + e.duration) ? reference(e) : nil
        }
        let d = Double(template.duration ?? 1)
        let index = max(0, ((presentationTime - periodStart) * ts / d).rounded(.down))
        // Past the numbers there are (or NaN from a hostile timescale): no segment.
        guard index < Double(UInt64.max - template.startNumber) else { return nil }
        return segment(number: template.startNumber + UInt64(index))
    }

    /// The segment with `$Number$` `number`, or `nil` outside the period.
    package func segment(number: UInt64) -> SegmentReference? {
        guard number >= template.startNumber else { return nil }
        if let endNumber = template.endNumber, number > endNumber { return nil }
        if usesTimeline {
            guard let first = entries.first, number >= first.number else { return nil }
            let offset = number - first.number
            if offset < UInt64(entries.count), entries[Int(offset)].number == number {
                return reference(entries[Int(offset)])
            }
            return entries.first { $0.number == number }.map(reference)
        }
        let d = template.duration ?? 1
        let index = number - template.startNumber
        // `$Time$` of a number so far out that it leaves UInt64: no such segment.
        let (offset, pastProduct) = index.multipliedReportingOverflow(by: d)
        let (time, pastSum) = template.presentationTimeOffset.addingReportingOverflow(offset)
        guard !pastProduct, !pastSum, time <= UInt64.max - d else { return nil }
        let ref = reference((number, time, d))
        if let periodDuration, ref.start >= periodStart + periodDuration - 1e-9 { return nil }
        return ref
    }

    /// The segment after `segment`, or `nil` when the period (or the known timeline) ends.
    package func segment(after segment: SegmentReference) -> SegmentReference? {
        if usesTimeline {
            return self.segment(containing: segment.end + 1e-9).flatMap { $0.start > segment.start ? $0 : nil }
        }
        return segment.number < .max ? self.segment(number: segment.number + 1) : nil
    }

    /// The segment that follows one which ended at `end`, found in a reloaded timeline: the
    /// first listed segment starting at `end`, allowing for the start being rounded differently
    /// in the new listing (HLS program date-times have millisecond precision) by up to 0.1 s or
    /// a quarter of its duration; `nil` when the listing does not reach it yet.
    package func segment(following end: Double) -> SegmentReference? {
        guard usesTimeline else { return segment(containing: end + 1e-6) }
        let ts = Double(template.timescale)
        let ticks = (end - periodStart) * ts + Double(template.presentationTimeOffset)
        let entry = entries.first { e in
            Double(e.time) >= ticks - min(0.1 * ts, Double(e.duration) / 4)
        }
        return entry.map(reference)
    }

    /// The last segment the timeline lists (SegmentTimeline), or `nil` with number addressing.
    package var lastListedSegment: SegmentReference? { entries.last.map(reference) }

    /// When `segment` can first be fetched, on the server's clock (live only; on demand: always).
    package func availabilityStart(of segment: SegmentReference) -> Date? {
        guard isLive, let ast = availabilityStartTime else { return nil }
        let ato =
            template.availabilityTimeOffset.isFinite ? template.availabilityTimeOffset : segment.end - segment.start
        return ast.addingTimeInterval(segment.end - ato)
    }

    /// The newest segment available at server time `now` (live), i.e. the live edge.
    package func liveEdgeSegment(at now: Date) -> SegmentReference? {
        guard isLive, let ast = availabilityStartTime else { return nil }
        let present = now.timeIntervalSince(ast)
        guard var candidate = segment(containing: present) ?? lastListedSegment else { return nil }
        while let available = availabilityStart(of: candidate), available > now {
            guard let previous = previousSegment(candidate) else { return nil }
            candidate = previous
        }
        return candidate
    }

    private func previousSegment(_ segment: SegmentReference) -> SegmentReference? {
        if usesTimeline {
            return self.segment(containing: segment.start - 1e-9).flatMap { $0.start < segment.start ? $0 : nil }
        }
        return segment.number > template.startNumber ? self.segment(number: segment.number - 1) : nil
    }

    private func reference(_ e: (number: UInt64, time: UInt64, duration: UInt64)) -> SegmentReference {
        let ts = Double(template.timescale)
        let start = periodStart + (Double(e.time) - Double(template.presentationTimeOffset)) / ts
        let url: URL
        if let listed = template.segmentURLs?[e.number] {
            url = listed
        } else {
            let path = expand(template.media ?? "", number: e.number, time: e.time)
            url = URL(string: path, relativeTo: baseURL)?.absoluteURL ?? baseURL
        }
        return SegmentReference(
            number: e.number, time: e.time, duration: e.duration, timescale: template.timescale, start: start, url: url,
            range: template.segmentRanges?[e.number], key: template.segmentKeys?[e.number],
            discontinuity: template.discontinuities?.contains(e.number) ?? false)
    }

    func expand(_ pattern: String, number: UInt64?, time: UInt64?) -> String {
        SegmentTemplateExpander.expand(
            pattern, representationID: representation.id, bandwidth: representation.bandwidth, number: number,
            time: time)
    }
}

/// `$Identifier$` / `$Identifier%0Nd$` substitution of ISO/IEC 23009-1 §5.3.9.4.4.
package enum SegmentTemplateExpander {
    package static func expand(
        _ pattern: String, representationID: String, bandwidth: Int, number: UInt64?, time: UInt64?
    ) -> String {
        var out = ""
        var rest = Substring(pattern)
        while let open = rest.firstIndex(of: "$") {
            out += rest[..<open]
            let afterOpen = rest.index(after: open)
            guard let close = rest[afterOpen...].firstIndex(of: "$") else {
                out += rest[open...]
                return out
            }
            let token = rest[afterOpen..<close]
            rest = rest[rest.index(after: close)...]
            if token.isEmpty {
                out += "$"
                continue
            }
            let parts = token.split(separator: "%", maxSplits: 1, omittingEmptySubsequences: false)  // "$%$": ["", ""]
            let name = parts[0]
            let format = parts.count > 1 ? String(parts[1]) : nil
            let value: UInt64?
            switch name {
            case "RepresentationID":
                out += representationID
                continue
            case "Number": value = number
            case "Time": value = time
            case "Bandwidth": value = UInt64(max(0, bandwidth))
            default:
                out += "$\(token)$"
                continue
            }
            guard let value else {
                out += "$\(token)$"
                continue
            }
            out += formatted(value, format)
        }
        out += rest
        return out
    }

    private static func formatted(_ value: UInt64, _ format: String?) -> String {
        let digits = String(value)
        guard let format, format.hasSuffix("d") else { return digits }
        // A hostile width (`%09999999999d`) would pad without end: a UInt64 has 20 digits.
        let width = min(Int(format.dropLast().drop { $0 == "0" }) ?? 0, 32)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}
