/// Something the core reported (`mq_event`).
package struct CoreEvent: Sendable {
    package enum Kind: Sendable {
        case firstFrame, trackFormat, error, ended, underrun, outputChanged, decoderFallback, clipEnded
        /// The first picture presented under a new label (`message`), at `mediaTime`.
        case labelShown
        /// The closed captions on screen changed (`message`: their text, "" cleared) with the
        /// picture presented at `mediaTime`.
        case caption
        case other(Int32)
    }
    package var kind: Kind
    package var track: Int32?
    package var error: CoreError?
    package var mediaTime: Double?
    package var message: String
}
