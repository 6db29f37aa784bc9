import Foundation

/// A live segment of a looped representation.
struct LiveSegment: Sendable, Equatable {
    /// 0-based index from the availabilityStartTime (`$Number$` = startNumber + index).
    var index: UInt64
    /// Media time in the track timescale (`$Time$`, and the tfdt written into the segment).
    var mediaTime: UInt64
    var duration: UInt64
    /// Which VOD segment it plays.
    var vodIndex: Int
}

/// Whether a segment can be fetched at a given instant.
enum Availability: Equatable {
    case available
    /// Not yet produced: 404.
    case tooEarly(availableIn: Double)
    /// Fallen out of the time-shift buffer: 410.
    case expired
}

/// The live timeline of one looped representation under one set of options: presentation time
/// 0 is the availabilityStartTime (PTO 0), loop L of VOD segment k plays at media time
/// `L·D + (tfdt_k − tfdt_0)`.
struct LiveTimeline {
    var representation: LoopRepresentation
    var options: LiveOptions

    private var rep: LoopRepresentation { representation }
    private var count: UInt64 { UInt64(rep.segments.count) }
    private var timescale: Double { Double(rep.timescale) }

    // MARK: $Number$ addressing

    /// Live segment `index` (0-based from AST).
    func segment(index: UInt64) -> LiveSegment? {
        let (loop, k) = index.quotientAndRemainder(dividingBy: count)
        let (base, overflow) = loop.multipliedReportingOverflow(by: rep.loopTicks)
        guard !overflow, base <= UInt64.max / 2 else { return nil }
        let seg = rep.segments[Int(k)]
        return LiveSegment(index: index, mediaTime: base + seg.offset, duration: seg.duration, vodIndex: Int(k))
    }

    /// The segment a `$Number$` URL names.
    func segment(number: UInt64) -> LiveSegment? {
        guard number >= options.startNumber else { return nil }
        return segment(index: number - options.startNumber)
    }

    /// `$Number$` addressing: available from AST + (i+1)·d − ato until AST + (i+1)·d + tsbd,
    /// where d is the nominal duration. A segment whose media ends before its nominal end (AAC's
    /// 1024-sample frames make 2 s audio segments 1.984 or 2.005 s) is available from its real
    /// end: the HLS playlists list it then (`listedSegments`), and a client that fetches what
    /// it was just given must not be answered 404. It leaves at the later of the two ends.
    func availability(numberedIndex index: UInt64, now: Double) -> Availability {
        let nominal = Double(index + 1) * Double(rep.nominalDuration) / timescale
        guard let live = segment(index: index) else { return availability(end: nominal, now: now) }
        let real = Double(live.mediaTime + live.duration) / timescale
        return availability(from: min(nominal, real), until: max(nominal, real), now: now)
    }

    // MARK: $Time$ addressing

    /// The segment a `$Time$` URL names, if one starts exactly there.
    func segment(time: UInt64) -> LiveSegment? {
        let (loop, offset) = time.quotientAndRemainder(dividingBy: rep.loopTicks)
        guard let k = rep.segmentIndex(atOffset: offset) else { return nil }
        return LiveSegment(
            index: loop * count + UInt64(k), mediaTime: time, duration: rep.segments[k].duration, vodIndex: k)
    }

    /// `$Time$` addressing: available from AST + end − ato until AST + end + tsbd.
    func availability(timed segment: LiveSegment, now: Double) -> Availability {
        availability(end: Double(segment.mediaTime + segment.duration) / timescale, now: now)
    }

    /// `end` is the segment's end in presentation seconds; `now` is Unix seconds on the origin clock.
    private func availability(end: Double, now: Double) -> Availability {
        availability(from: end, until: end, now: now)
    }

    /// Available once the media up to `from` is produced, until `until` has been in the past
    /// for the time-shift buffer's depth (presentation seconds; `now` on the origin clock).
    private func availability(from: Double, until: Double, now: Double) -> Availability {
        let start =
            options.availabilityStartTime + from / options.mediaRate - options.availabilityTimeOffset
            + options.publishDelay
        if now < start { return .tooEarly(availableIn: start - now) }
        if now >= options.availabilityStartTime + until / options.mediaRate + options.timeShiftBufferDepth {
            return .expired
        }
        return .available
    }

    /// The segments listed in a SegmentTimeline at `now`: available, in media-time order (the
    /// last one is the live edge), from the first that *starts* within the time-shift buffer.
    /// A segment is served until its end plus the buffer's depth, so each one listed is served
    /// for at least its own duration after the listing: a client that fetches the oldest entry
    /// a moment after reading the manifest is not answered 410. (Listed by their ends, the
    /// oldest entries could leave the buffer just after the listing; at a loop point whose
    /// segments overlap it, as WAVE's audio's do, the two oldest ended 64 ms apart.)
    func listedSegments(now: Double) -> [LiveSegment] {
        let elapsed = (now - options.availabilityStartTime) * options.mediaRate  // media seconds produced
        let high = elapsed + options.availabilityTimeOffset - options.publishDelay  // newest end allowed
        let low = elapsed - options.timeShiftBufferDepth * options.mediaRate  // starts must be after this
        guard high > 0 else { return [] }
        let loopSeconds = Double(rep.loopTicks) / timescale
        let maxDuration = Double(rep.maxSegmentDuration) / timescale
        let firstLoop = UInt64(max(0, ((low - maxDuration) / loopSeconds).rounded(.down)))
        let lastLoop = UInt64(max(0, (high / loopSeconds).rounded(.down)))
        guard lastLoop >= firstLoop else { return [] }
        var out: [LiveSegment] = []
        for loop in firstLoop...lastLoop {
            for k in 0..<rep.segments.count {
                guard let seg = segment(index: loop * count + UInt64(k)) else { continue }
                let start = Double(seg.mediaTime) / timescale
                let end = Double(seg.mediaTime + seg.duration) / timescale
                if start > low && end <= high { out.append(seg) }
            }
        }
        return out.sorted { $0.mediaTime < $1.mediaTime }
    }
}
