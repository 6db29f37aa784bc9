import Foundation

/// The options of a live URL, `/live/<key>_<value>/.../<asset>/<path>`, modelled on the DASH-IF
/// live simulator (livesim2). Options are path components, so relative segment URLs in the MPD
/// repeat them and the origin stays stateless.
///
/// - `ast_<s>`: availabilityStartTime, Unix seconds. Default: 0 (1970-01-01: numbers follow the wall clock).
/// - `tsbd_<s>`: timeShiftBufferDepth (0 < s ≤ 48 h). Default: 60.
/// - `mup_<s>`: minimumUpdatePeriod (> 0). Default: 2 with SegmentTimeline, omitted with `$Number$` (the MPD never
///   changes).
/// - `snr_<n>`: startNumber; `$Number$` of live segment i is n + i. Default: 0.
/// - `spd_<s>`: suggestedPresentationDelay. Default: omitted.
/// - `segtimeline_1`: SegmentTimeline + `$Time$` instead of `$Number$` + `@duration`. Default: 0.
/// - `ato_<s>`: availabilityTimeOffset: segments available that much earlier; a segment requested before its end is
///   sent chunk by chunk (CMAF chunks, chunked transfer), each chunk when its last sample's time comes. Default: 0
///   (omitted).
/// - `late_<s>`: segments are published `s` seconds after their end (404 before, listed in a SegmentTimeline only
///   then), and the MPD does not say so: a packager that writes a segment when the next keyframe comes, an AST rounded
///   down. Default: 0.
/// - `drift_<ppm>`: the encoder's media clock runs `ppm` parts per million fast (negative: slow) against the wall clock
///   (−20000…20000): each segment holds its media duration but is produced in `duration / (1 + ppm·10⁻⁶)` wall
///   seconds; availability follows the wall clock, HLS program date-times are wall-clock times (a capture card's clock
///   under an encoder that dates segments by the system clock), media timestamps and the DASH MPD stay in media time.
///   Default: 0.
/// - `timeoffset_<s>`: the origin's clock runs that far off real time (availability, MPD times, time endpoints, Date
///   headers). Default: 0.
/// - `ltgt_<ms>`: `ServiceDescription/Latency@target`. Default: omitted.
/// - `outage_<from>-<to>`: every request of this URL (manifest, segments) is a 503 from Unix second `from` until `to`
///   (origin clock). Default: none.
/// - `hang_<from>-<to>`: every request of this URL arriving between Unix seconds `from` and `to` (origin clock) gets no
///   answer until `to` (then a 503): a hung server. Default: none.
/// - `bw_<kbps>`: every segment is sent at no more than this many kbit/s (each response paced on its own: a
///   per-connection limit, for ABR tests). Default: unlimited.
/// - `bwlow_<kbps>-<from>-<to>`: segments requested between Unix seconds `from` and `to` (origin clock) are sent at no
///   more than `kbps` (a link that degrades, then recovers). Default: none.
/// - `mute_<period>-<start>-<len>`: the broadcaster mutes for `len` s from `k·period + start` (presentation time,
///   every `period` s): an MPD `EventStream` of scheme `urn:marquee:broadcast:2026` listing the mutes from the
///   time-shift buffer's start to 10 min ahead. Default: none.
/// - `ad_<period>-<start>-<len>`: an ad break of `len` s at `k·period + start`: a SCTE-35 `splice_insert` (out of
///   network, break_duration) in an `emsg` v1 box (`urn:scte:scte35:2013:bin`) at the start of the segment holding the
///   splice point and of the one before it, in every representation, announced by `InbandEventStream`. Default: none.
/// - `baseurl_<a-b-…>`: the MPD lists these `BaseURL`s in order (alternative locations of the segments): `self`
///   (`./`, this origin), `dead` (`http://127.0.0.1:9/dead/`: nothing listens), `gone` (`/gone/` on this origin: every
///   request a 404). Default: none (no `BaseURL`).
/// - `periods_<s>`: a new `Period` every `s` seconds of presentation time (rounded to whole segments of the asset; at
///   least one): `@id` `p<k>`, `@start` its time, each representation's `presentationTimeOffset` the period's start (so
///   the segments' own `tfdt` go on) and, with `$Number$`, `startNumber` its first segment's number; a period is listed
///   once it has begun (an encoder restart, a splice), at most 16, and the MPD changes then (`minimumUpdatePeriod` 2
///   unless `mup_` says otherwise). Segment URLs are unchanged. Default: one period.
/// - `restart_<s>`: the packager restarts every `s` seconds of origin time (from `ast_`) and republishes the MPD with a
///   new `availabilityStartTime` (the restart): segment numbers and times start again there, and `minimumUpdatePeriod`
///   is 2 unless `mup_` says otherwise. Default: none.
/// - `location_1`: the manifest has moved: the MPD carries a `Location` (absolute: this stream's URL without
///   `location_1`), and a manifest request with `location_1` is answered only once per origin process, then 410 Gone.
///   Default: 0.
/// - `utc_<a-b-…>`: the UTCTiming elements, in order: `xsdate`, `iso`, `head`, `direct`, `ntp` (the origin's SNTP
///   server; not with `timeoffset_`), `none`. Default: `xsdate-iso`.
///
/// Faults (``Faults``). A share-based fault strikes a request when a hash of (`seed_`, the option,
/// the request's fate key) falls below the share, so the same URL meets the same fate every time.
/// The fate key of a segment is its path after the asset (`0/123.m4s`, `0/t4567.m4s`,
/// `ts/123.ts`); of a manifest, its name and the whole origin-clock second of the request. Unless
/// an entry says otherwise a fault strikes only media segments the origin would serve (200); a HEAD
/// gets the status and headers its GET would.
/// When several strike one segment: `status_`, then the content faults (`corrupt_`, `hugebox_`,
/// `flip_`), then one delivery fault (`reset_`, `badlength_`, `truncate_`, `endless_`, `trickle_`,
/// `stall_`, `silent_`, the first that strikes). Delivery faults, like `status_`, are the network's: they strike a
/// segment's first request in this origin process only (a retry gets it whole); content faults
/// are the packager's and strike every request.
///
/// - `seed_<n>`: the seed of every choice below. Default: 1.
/// - `status_<code>-<pct>`: that share of segments is answered `<code>` (400–599) the first time this origin process
///   serves that URL path; a retry succeeds (the origin remembers up to 65,536 such paths, then forgets the older
///   half). Default: none.
/// - `mstatus_<code>-<n>`: the first `n` requests of each manifest URL path (MPD or playlist) in this origin process
///   are answered `<code>` (400–599). Default: none.
/// - `reset_<pct>`: the headers (full `Content-Length`) and the first half of the body, then a TCP reset (`SO_LINGER`
///   0). Default: none.
/// - `trickle_<kbps>-<pct>`: the body sent at no more than `<kbps>`, a piece every 50 ms from its first byte (a stuck
///   CDN edge: 320 is 2 kB every 50 ms; with `bw_` the slower wins). Default: none.
/// - `truncate_<pct>`: a well-formed 200 carrying only the first half of the segment (`Content-Length` says so).
///   Default: none.
/// - `badlength_<pct>`: the full `Content-Length`, the first half of the body, then the connection closed (FIN).
///   Default: none.
/// - `corrupt_<pct>`: the segment replaced by seeded random bytes of the same length. Default: none.
/// - `hugebox_<pct>`: the first 4 bytes set to 0x7fffffff: in fMP4 the first box's size field. Default: none.
/// - `flip_<pct>`: 8 seeded bits flipped inside the `mdat` payload (fMP4) or the TS packet payloads: a stream should
///   play through. Default: none.
/// - `endless_<pct>`: the segment, then zero bytes without end (1 KiB every 100 ms, chunked), until the client closes.
///   Default: none.
/// - `stall_<pct>`: the headers (full `Content-Length`) and the first half of the body, then nothing for 120 s with the
///   connection open (a stalled edge), then a close. Default: none.
/// - `silent_<pct>`: the request accepted, then no answer at all (not even the head) for 120 s with the connection open
///   (a server or edge that hangs on one request). Default: none.
/// - `redirect_<pct>`: that share of all `/live` requests (manifests, init and media segments) is a 302 loop: `<path>`
///   → `<path>?hop=1` → `<path>` …. Default: none.
/// - `badinit_1`: every init segment replaced by seeded random bytes of the same length. Default: 0.
/// - `nest_<depth>`: the MPD carries `<depth>` nested `Nest` elements before its `Period` (a hostile manifest).
///   Default: none.
/// - `rotate_<s>`: the share-based faults above take turns: each strikes alone for `s` seconds, then `s` seconds
///   without faults, then the next (in this list's order, from Unix second 0 of the origin clock); for soaks. Default:
///   all at once.
struct LiveOptions: Sendable, Equatable {
    var availabilityStartTime: Double = 0
    var timeShiftBufferDepth: Double = 60
    var minimumUpdatePeriod: Double?
    var startNumber: UInt64 = 0
    var suggestedPresentationDelay: Double?
    var segmentTimeline = false
    var availabilityTimeOffset: Double = 0
    /// `late_`: seconds after its end a segment is published (unannounced).
    var publishDelay: Double = 0
    /// `drift_`: parts per million the media clock runs fast against the wall clock.
    var driftPPM: Double = 0
    /// Media seconds produced per wall second.
    var mediaRate: Double { 1 + driftPPM / 1_000_000 }
    /// `periods_`: seconds between the starts of periods, nil: one period.
    var periodDuration: Double?
    /// `restart_`: seconds between the packager's restarts (a new availabilityStartTime), nil: none.
    var restartEvery: Double?
    /// `location_1`: the MPD names its new place in a `Location`; this URL serves it once.
    var moved = false
    var timeOffset: Double = 0
    var latencyTarget: Int?
    var utcTimings = ["xsdate", "iso"]
    /// `baseurl_`: the MPD's `BaseURL`s (`self`, `dead`, `gone`), none when empty.
    var baseURLs: [String] = []
    var outage: Range<Double>?
    var hang: Range<Double>?
    var bandwidth: Double?
    var lowBandwidth: LowBandwidth?

    /// A lower rate limit for a while.
    struct LowBandwidth: Sendable, Equatable {
        var kbps: Double
        var during: Range<Double>
    }
    var mute: Recurring?
    var ad: Recurring?
    var faults = Faults()

    /// Events every `period` seconds from `start`, each `length` long.
    struct Recurring: Sendable, Equatable {
        var period: Double
        var start: Double
        var length: Double

        /// The occurrences whose start lies in `range`, as (index, start).
        func occurrences(in range: ClosedRange<Double>) -> [(index: Int64, time: Double)] {
            let first = Int64(((range.lowerBound - start) / period).rounded(.up))
            let last = Int64(((range.upperBound - start) / period).rounded(.down))
            guard first <= last else { return [] }
            return (max(first, 0)...max(last, 0)).compactMap { k in
                let t = start + Double(k) * period
                return range.contains(t) ? (k, t) : nil
            }
        }

        var component: String {
            "\(LiveOptions.format(period))-\(LiveOptions.format(start))-\(LiveOptions.format(length))"
        }
    }

    static let keys: Set<String> = Faults.keys.union([
        "ast", "tsbd", "mup", "snr", "spd", "segtimeline", "ato", "timeoffset", "ltgt", "utc", "outage", "hang", "bw",
        "bwlow", "mute", "ad", "baseurl", "late", "drift", "periods", "restart", "location",
    ])

    /// The availabilityStartTime in force at origin time `now`: with `restart_`, the last restart.
    func availabilityStart(at now: Double) -> Double {
        guard let every = restartEvery, now > availabilityStartTime else { return availabilityStartTime }
        return availabilityStartTime + ((now - availabilityStartTime) / every).rounded(.down) * every
    }

    /// The segment rate limit (kbit/s) for a request at origin time `now`, nil: unlimited.
    func bandwidth(at now: Double) -> Double? {
        guard let low = lowBandwidth, low.during.contains(now) else { return bandwidth }
        return min(low.kbps, bandwidth ?? .infinity)
    }

    /// The minimumUpdatePeriod the MPD announces.
    var effectiveMinimumUpdatePeriod: Double? {
        minimumUpdatePeriod ?? (segmentTimeline || periodDuration != nil || restartEvery != nil ? 2 : nil)
    }

    /// The path components that reproduce these options (only those off their default), for
    /// building URLs.
    var pathComponents: [String] {
        var out: [String] = []
        if availabilityStartTime != 0 { out.append("ast_\(Self.format(availabilityStartTime))") }
        if timeShiftBufferDepth != 60 { out.append("tsbd_\(Self.format(timeShiftBufferDepth))") }
        if let m = minimumUpdatePeriod { out.append("mup_\(Self.format(m))") }
        if startNumber != 0 { out.append("snr_\(startNumber)") }
        if let s = suggestedPresentationDelay { out.append("spd_\(Self.format(s))") }
        if segmentTimeline { out.append("segtimeline_1") }
        if availabilityTimeOffset != 0 { out.append("ato_\(Self.format(availabilityTimeOffset))") }
        if publishDelay != 0 { out.append("late_\(Self.format(publishDelay))") }
        if driftPPM != 0 { out.append("drift_\(Self.format(driftPPM))") }
        if let p = periodDuration { out.append("periods_\(Self.format(p))") }
        if let r = restartEvery { out.append("restart_\(Self.format(r))") }
        if moved { out.append("location_1") }
        if timeOffset != 0 { out.append("timeoffset_\(Self.format(timeOffset))") }
        if let l = latencyTarget { out.append("ltgt_\(l)") }
        if let o = outage { out.append("outage_\(Self.format(o.lowerBound))-\(Self.format(o.upperBound))") }
        if let h = hang { out.append("hang_\(Self.format(h.lowerBound))-\(Self.format(h.upperBound))") }
        if let b = bandwidth { out.append("bw_\(Self.format(b))") }
        if let l = lowBandwidth {
            out.append(
                "bwlow_\(Self.format(l.kbps))-\(Self.format(l.during.lowerBound))-\(Self.format(l.during.upperBound))")
        }
        if let m = mute { out.append("mute_\(m.component)") }
        if let a = ad { out.append("ad_\(a.component)") }
        if !baseURLs.isEmpty { out.append("baseurl_\(baseURLs.joined(separator: "-"))") }
        if utcTimings != ["xsdate", "iso"] {
            out.append("utc_\(utcTimings.isEmpty ? "none" : utcTimings.joined(separator: "-"))")
        }
        return out + faults.pathComponents
    }

    static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
    }

    /// Whether a path component looks like an option (`key_value` with a known or unknown key).
    static func looksLikeOption(_ component: Substring) -> Bool {
        guard let underscore = component.firstIndex(of: "_") else { return false }
        return component[..<underscore].allSatisfy { $0.isLetter || $0.isNumber } && underscore != component.startIndex
    }

    /// Applies one `key_value` component; the error text is the 400 response body.
    mutating func apply(_ component: Substring) throws(OptionError) {
        guard let underscore = component.firstIndex(of: "_") else {
            throw OptionError("\"\(component)\" is not a key_value option")
        }
        let key = String(component[..<underscore])
        let value = String(component[component.index(after: underscore)...])
        func number(_ range: ClosedRange<Double>) throws(OptionError) -> Double {
            guard let v = Double(value), v.isFinite, range.contains(v) else {
                throw OptionError(
                    """
                    option \(key)_: "\(value)" is not a number in \
                    \(Self.format(range.lowerBound))...\(Self.format(range.upperBound))
                    """
                )
            }
            return v
        }
        switch key {
        case "ast": availabilityStartTime = try number(0...4e9)
        case "tsbd":
            timeShiftBufferDepth = try number(0...172_800)
            guard timeShiftBufferDepth > 0 else { throw OptionError("option tsbd_ must be positive") }
        case "mup":
            let v = try number(0...86_400)
            guard v > 0 else { throw OptionError("option mup_ must be positive") }
            minimumUpdatePeriod = v
        case "snr":
            guard let n = UInt64(value), n < 1 << 40 else {
                throw OptionError("option snr_: \"\(value)\" is not a non-negative integer")
            }
            startNumber = n
        case "spd": suggestedPresentationDelay = try number(0...86_400)
        case "segtimeline":
            guard value == "0" || value == "1" else {
                throw OptionError("option segtimeline_ takes 0 or 1, not \"\(value)\"")
            }
            segmentTimeline = value == "1"
        case "ato": availabilityTimeOffset = try number(0...86_400)
        case "late": publishDelay = try number(0...60)
        case "drift": driftPPM = try number(-20_000...20_000)
        case "location":
            guard value == "0" || value == "1" else {
                throw OptionError("option location_ takes 0 or 1, not \"\(value)\"")
            }
            moved = value == "1"
        case "restart":
            let v = try number(0...86_400 * 365)
            guard v >= 10 else { throw OptionError("option restart_ must be at least 10 s") }
            restartEvery = v
        case "periods":
            let v = try number(0...86_400)
            guard v > 0 else { throw OptionError("option periods_ must be positive") }
            periodDuration = v
        case "timeoffset": timeOffset = try number(-1e9...1e9)
        case "ltgt":
            guard let ms = Int(value), ms >= 0, ms <= 86_400_000 else {
                throw OptionError("option ltgt_: \"\(value)\" is not a latency in ms")
            }
            latencyTarget = ms
        case "outage", "hang":
            let parts = value.split(separator: "-").compactMap { Double($0) }
            guard parts.count == 2, parts[0] < parts[1] else {
                throw OptionError("option \(key)_: \"\(value)\" is not <from>-<to> in Unix seconds")
            }
            if key == "outage" { outage = parts[0]..<parts[1] } else { hang = parts[0]..<parts[1] }
        case "bw":
            let kbps = try number(1...10_000_000)
            bandwidth = kbps
        case "bwlow":
            let parts = value.split(separator: "-").compactMap { Double($0) }
            guard parts.count == 3, parts[0] >= 1, parts[0] <= 10_000_000, parts[1] < parts[2] else {
                throw OptionError("option bwlow_: \"\(value)\" is not <kbps>-<from>-<to> (Unix seconds)")
            }
            lowBandwidth = LowBandwidth(kbps: parts[0], during: parts[1]..<parts[2])
        case "mute", "ad":
            let parts = value.split(separator: "-").compactMap { Double($0) }
            guard parts.count == 3, parts[0] > 0, parts[1] >= 0, parts[2] > 0, parts[2] < parts[0],
                parts.allSatisfy(\.isFinite)
            else {
                throw OptionError(
                    "option \(key)_: \"\(value)\" is not <period>-<start>-<length> in seconds with 0 < length < period")
            }
            let r = Recurring(period: parts[0], start: parts[1], length: parts[2])
            if key == "mute" { mute = r } else { ad = r }
        case "utc":
            let schemes = value.split(separator: "-").map(String.init)
            let known: Set<String> = ["xsdate", "iso", "head", "direct", "ntp", "none"]
            guard !schemes.isEmpty, schemes.allSatisfy(known.contains) else {
                throw OptionError(
                    "option utc_: \"\(value)\" is not a list of \(known.sorted().joined(separator: ", ")) joined by -")
            }
            utcTimings = schemes.filter { $0 != "none" }
        case "baseurl":
            let names = value.split(separator: "-").map(String.init)
            guard !names.isEmpty, names.count <= 8, names.allSatisfy(["self", "dead", "gone"].contains) else {
                throw OptionError("option baseurl_: \"\(value)\" is not a list of self, dead, gone joined by -")
            }
            baseURLs = names
        default:
            guard try faults.apply(key: key, value: value) else {
                throw OptionError(
                    """
                    unknown option "\(component)" \
                    (known: \(Self.keys.sorted().map { $0 + "_" }.joined(separator: ", ")))
                    """
                )
            }
        }
    }
}

/// A bad URL option; its text is the body of the 400 response.
struct OptionError: Error, Sendable {
    var message: String
    init(_ message: String) { self.message = message }
}
