internal import CCore

/// The display: how pictures fit it, the last picture kept (screenshots), what is shown over
/// the pictures, and the label of what is presented.
extension CoreHandle {
    /// How pictures fit the display from now on (`mq_player_set_fit`; `mq_fit`'s values).
    package func setFit(_ fit: Int32) throws(CoreError) {
        try call { mq_player_set_fit($0, fit) }
    }

    /// Whether the captions carried in the video are drawn over the pictures (`mq_player_set_captions`).
    package func setCaptions(_ shown: Bool) throws(CoreError) {
        try call { mq_player_set_captions($0, shown) }
    }

    /// Keeps a reference to the picture presented last, for ``snapshotPNG(maxWidth:)``
    /// (`mq_player_keep_last_picture`).
    package func keepLastPicture(_ keep: Bool) throws(CoreError) {
        try call { mq_player_keep_last_picture($0, keep) }
    }

    /// The picture presented last as a PNG (`mq_player_snapshot_png`): converts and encodes on
    /// the calling thread, tens of milliseconds at 720p.
    package func snapshotPNG(maxWidth: Int) throws(CoreError) -> (
        png: [UInt8], mediaTime: Double, width: Int, height: Int
    ) {
        var bytes: UnsafeMutablePointer<UInt8>?
        var size = 0
        var pts = 0.0
        var width: Int32 = 0
        var height: Int32 = 0
        try call { mq_player_snapshot_png($0, Int32(clamping: maxWidth), &bytes, &size, &pts, &width, &height) }
        defer { mq_free(bytes) }
        let png = bytes.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
        return (png, pts, Int(width), Int(height))
    }

    /// What a display shows over the pictures (`mq_player_set_overlay`).
    package enum Overlay: Sendable {
        /// Pictures only (`MQ_OVERLAY_NONE`).
        case none
        /// A band at the bottom over the held picture (`MQ_OVERLAY_BUFFERING`); nil message: "BUFFERING".
        case buffering(String?)
        /// A full-screen slate (`MQ_OVERLAY_SLATE`); nil message: "RECONNECTING...".
        case slate(String?)
        /// `MQ_OVERLAY_BLANK`: the display is off (black); pictures are consumed unseen.
        case blank
    }

    package func setOverlay(_ overlay: Overlay) throws(CoreError) {
        let (kind, message): (Int32, String?) =
            switch overlay {
            case .none: (Int32(MQ_OVERLAY_NONE.rawValue), nil)
            case .buffering(let m): (Int32(MQ_OVERLAY_BUFFERING.rawValue), m)
            case .slate(let m): (Int32(MQ_OVERLAY_SLATE.rawValue), m)
            case .blank: (Int32(MQ_OVERLAY_BLANK.rawValue), nil)
            }
        try call { p in withOptionalCString(message) { mq_player_set_overlay(p, kind, $0) } }
    }

    /// Names what is presented from now on (a playlist item's id; nil: nothing): the
    /// `frames:` output's `item` column (`mq_player_set_label`).
    package func setLabel(_ label: String?) throws(CoreError) {
        try call { p in withOptionalCString(label) { mq_player_set_label(p, $0) } }
    }
}
