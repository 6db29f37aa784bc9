internal import CCore

/// A text track's cues (WebVTT): decoded by FFmpeg in the core, shown by the video thread over
/// the pictures their times cover.
package struct TextCue: Sendable, Equatable {
    /// Seconds: the file's own cue times until placed, then the presentation timeline's.
    package var start: Double
    package var end: Double
    /// Its plain text, lines separated by "\n".
    package var text: String
    /// Its ASS event lines as FFmpeg's decoder writes them (what the core draws).
    package var ass: String

    package init(start: Double, end: Double, text: String, ass: String) {
        (self.start, self.end, self.text, self.ass) = (start, end, text, ass)
    }
}

extension CoreHandle {
    /// The largest WebVTT file or segment decoded (bytes; `MQ_WEBVTT_MAX`).
    package static let webVTTMaxBytes = Int(MQ_WEBVTT_MAX)
    /// The most cues one file gives (more are dropped, the core logs how many).
    package static let webVTTMaxCues = 256

    /// Decodes a WebVTT file or segment (`mq_webvtt_decode`): its cues in the file's times, and
    /// what its `X-TIMESTAMP-MAP` adds to them to put them on the media's 90 kHz MPEG-2 clock
    /// (seconds; nil when it has none). `.demux` when the bytes are not WebVTT,
    /// `.invalidArgument` when there are more than ``webVTTMaxBytes``.
    package static func decodeWebVTT(_ bytes: [UInt8]) throws(CoreError) -> (cues: [TextCue], mapOffset: Double?) {
        var cues = [mq_text_cue](repeating: mq_text_cue(), count: webVTTMaxCues)
        var count: Int32 = 0
        var map = Double.nan
        let rc = bytes.withUnsafeBufferPointer { data in
            cues.withUnsafeMutableBufferPointer { out in
                guard let data = data.baseAddress, let out = out.baseAddress else {
                    return Int32(MQ_ERR_DEMUX.rawValue)
                }
                return mq_webvtt_decode(data, bytes.count, out, Int32(webVTTMaxCues), &count, &map)
            }
        }
        if rc < 0 { throw CoreError(code: rc) }
        let decoded = cues.prefix(Int(count)).map { cue in
            var cue = cue
            let text = withUnsafeBytes(of: &cue.text) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let ass = withUnsafeBytes(of: &cue.ass) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            return TextCue(start: cue.start, end: cue.end, text: text, ass: ass)
        }
        return (decoded, map.isFinite ? map : nil)
    }

    /// Shows `cue` (its times on the presentation timeline) over the pictures it covers; from
    /// the first on, the text track's cues are the caption screen (`mq_player_push_text_cue`).
    package func pushTextCue(_ cue: TextCue) throws(CoreError) {
        try call { mq_player_push_text_cue($0, cue.start, cue.end, cue.ass) }
    }

    /// Drops the cues pushed; `active` false gives the screen back to the captions carried in
    /// the video (`mq_player_clear_text_cues`).
    package func clearTextCues(active: Bool) throws(CoreError) {
        try call { mq_player_clear_text_cues($0, active) }
    }
}
