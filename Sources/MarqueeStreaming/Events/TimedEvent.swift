import Foundation

/// An event placed on the presentation timeline: from the manifest (`EventStream`), from the
/// media (`emsg` boxes) or from the API. What the player does at presented time `t` follows from
/// the events up to `t` (see ``MixTimeline`` in Marquee), so a delay, a jump or a seek over an
/// event applies or undoes it.
package struct TimedEvent: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        /// The broadcaster muted the stream (for `duration` seconds when given, else until
        /// ``streamerUnmuted``).
        case streamerMuted
        case streamerUnmuted
        /// An ad break starts: `duration` seconds when known, else until ``adBreakEnd``.
        /// `creative`: the ad to play when the event names one.
        case adBreakStart(creative: String?)
        case adBreakEnd
        /// Withdraws the ad break announced with the same ``TimedEvent/id`` (a SCTE-35 cancel).
        case adBreakCancel
        /// Anything else, kept for the application.
        case other(scheme: String, value: String?)
    }

    /// Where an event came from.
    package enum Origin: String, Sendable, Hashable {
        case manifest, inband, api
    }

    /// Presentation time, seconds.
    package var time: Double
    package var duration: Double?
    package var kind: Kind
    /// Identifies the event within its scheme (the DASH `@id`, the emsg `id`, the splice event id).
    package var id: String?
    package var origin: Origin

    package init(time: Double, duration: Double? = nil, kind: Kind, id: String? = nil, origin: Origin = .api) {
        self.time = time
        self.duration = duration
        self.kind = kind
        self.id = id
        self.origin = origin
    }
}

/// Event schemes the player understands.
package enum EventScheme {
    /// Marquee's broadcaster mute: `value` "mute" (with a duration, or until "unmute") or "unmute".
    package static let broadcast = "urn:marquee:broadcast:2026"
    /// Marquee's ad break: a duration; message data, when present, is the creative's URL.
    package static let ad = "urn:marquee:ad:2026"
    /// SCTE-35 binary cue, base64 in an `EventStream` event or raw in an `emsg` (SCTE 214-1).
    package static let scte35Binary = "urn:scte:scte35:2013:bin"
    /// SCTE-35 as XML with the binary cue in `<Signal><Binary>` (SCTE 214-1, DASH-IF IOP §10).
    package static let scte35XMLBinary = "urn:scte:scte35:2014:xml+bin"

    /// The timed event for one event of `scheme`: `time`/`duration` in seconds, `message` the
    /// payload (for SCTE-35: the binary section). `nil` for a cue that places nothing (a
    /// `splice_null`, a return to network without a break).
    package static func event(
        scheme: String, value: String?, time: Double, duration: Double?, id: String?, message: [UInt8]?,
        origin: TimedEvent.Origin
    ) throws(ManifestError) -> TimedEvent? {
        switch scheme {
        case broadcast:
            // The event's message ("mute"/"unmute") or else the stream's/box's value.
            let text = message.flatMap { String(bytes: $0, encoding: .utf8) }?.trimmingCharacters(
                in: .whitespacesAndNewlines)
            let value = text?.isEmpty == false ? text : value
            switch value?.lowercased() {
            case "mute": return TimedEvent(time: time, duration: duration, kind: .streamerMuted, id: id, origin: origin)
            case "unmute": return TimedEvent(time: time, kind: .streamerUnmuted, id: id, origin: origin)
            default:
                throw ManifestError(
                    .invalidValue, "\(broadcast) event value \"\(value ?? "")\" is neither mute nor unmute")
            }
        case ad:
            let creative = message.flatMap { String(bytes: $0, encoding: .utf8) }?.trimmingCharacters(
                in: .whitespacesAndNewlines)
            return TimedEvent(
                time: time, duration: duration,
                kind: .adBreakStart(creative: creative?.isEmpty == false ? creative : nil), id: id, origin: origin)
        case scte35Binary, scte35XMLBinary:
            guard let message else { throw ManifestError(.invalidValue, "SCTE-35 event without a cue") }
            return try scte35(SpliceInfo(bytes: message), time: time, duration: duration, origin: origin)
        default:
            return TimedEvent(
                time: time, duration: duration, kind: .other(scheme: scheme, value: value), id: id, origin: origin)
        }
    }

    private static func scte35(_ cue: SpliceInfo, time: Double, duration: Double?, origin: TimedEvent.Origin)
        -> TimedEvent?
    {
        // A splice_insert and a time_signal's segmentation descriptor say the same three things.
        let id: UInt32
        let cancelled: Bool
        let starts: Bool
        let cueDuration: Double?
        switch cue.command {
        case .spliceInsert(let insert):
            (id, cancelled, starts, cueDuration) = (
                insert.eventID, insert.cancelled, insert.outOfNetwork, insert.breakDuration
            )
        case .timeSignal:
            guard let s = cue.segmentations.first(where: { $0.cancelled || $0.startsBreak || $0.endsBreak }) else {
                return nil
            }
            (id, cancelled, starts, cueDuration) = (s.eventID, s.cancelled, s.startsBreak, s.duration)
        case .other:
            return nil
        }
        let kind: TimedEvent.Kind = cancelled ? .adBreakCancel : starts ? .adBreakStart(creative: nil) : .adBreakEnd
        return TimedEvent(
            time: time, duration: starts && !cancelled ? cueDuration ?? duration : nil, kind: kind, id: "scte35:\(id)",
            origin: origin)
    }

    /// The events of a manifest `EventStream` of period starting at `periodStart`; events that
    /// cannot be read are returned as errors beside the rest.
    package static func events(of stream: EventStream, periodStart: Double) -> (
        events: [TimedEvent], errors: [ManifestError]
    ) {
        var events: [TimedEvent] = []
        var errors: [ManifestError] = []
        let scale = Double(stream.timescale)
        for e in stream.events {
            let time = periodStart + (Double(e.presentationTime) - Double(stream.presentationTimeOffset)) / scale
            let message: [UInt8]?
            switch stream.schemeIdUri {
            case scte35Binary, scte35XMLBinary:
                message = e.messageData.flatMap { Data(base64Encoded: $0, options: .ignoreUnknownCharacters) }.map {
                    [UInt8]($0)
                }
            default:
                message = e.messageData.map { Array($0.utf8) }
            }
            do {
                if let event = try event(
                    scheme: stream.schemeIdUri, value: stream.value, time: time,
                    duration: e.duration.map { Double($0) / scale }, id: e.id,
                    message: message, origin: .manifest)
                {
                    events.append(event)
                }
            } catch {
                errors.append(error)
            }
        }
        return (events, errors)
    }
}
