import MarqueeBridge
import MarqueeStreaming

/// The picture: display off and on, screenshots, the fit.
extension Player {
    /// Turns the picture off (black; on DRM the buffers stay, so turning it on is immediate)
    /// while the sound plays on. Pictures keep being decoded on the clock, unseen.
    public func displayOff() {
        let core = inner.withLock { inner -> CoreHandle? in
            inner.displayOff = true
            return inner.core
        }
        try? core?.setOverlay(.blank)
    }

    /// Shows pictures again after ``displayOff()``.
    public func displayOn() {
        let core = inner.withLock { inner -> CoreHandle? in
            inner.displayOff = false
            return inner.core
        }
        try? core?.setOverlay(.none)
    }

    /// Whether ``displayOff()`` is in effect.
    public var isDisplayOff: Bool { inner.withLock { $0.displayOff } }

    /// Keeps (true) the picture presented last for ``snapshot(maxWidth:)`` from now on: a
    /// reference to the decoder's buffer until the next picture replaces it, no copy (one more
    /// buffer in the decoder's pool: about 1.4 MB at 720p). Off by default; the control socket
    /// turns it on.
    public func keepLastPicture(_ keep: Bool) {
        let core = inner.withLock { inner in
            inner.keepsLastPicture = keep
            return inner.core
        }
        try? core?.keepLastPicture(keep)
    }

    /// A screenshot: the picture presented last (what the display shows, before fit, rotation
    /// and overlays), as a PNG, scaled down to `maxWidth` when it is wider. Converted and
    /// encoded on the calling thread: tens of milliseconds at 720p, so not on a cooperative
    /// one. Throws ``PlayerError/Code-swift.struct/state`` unless ``keepLastPicture(_:)`` is on
    /// and a picture was presented since (a reload or a playlist's next item starts afresh).
    public func snapshot(maxWidth: Int? = nil) throws(PlayerError) -> Snapshot {
        if let maxWidth, maxWidth < 2 { throw PlayerError(.invalidArgument, "maxWidth \(maxWidth) is under 2") }
        let (core, keeps) = inner.withLock { ($0.core, $0.keepsLastPicture) }
        guard keeps else { throw PlayerError(.state, "screenshots need keepLastPicture(true)") }
        guard let core else { throw PlayerError(.state, "no picture presented yet") }
        do {
            let shot = try core.snapshotPNG(maxWidth: maxWidth ?? 0)
            return Snapshot(png: shot.png, width: shot.width, height: shot.height, mediaTime: shot.mediaTime)
        } catch {
            if error.isMissingStream { throw PlayerError(.state, "no picture presented yet", coreCode: error.code) }
            throw PlayerError(.output, "screenshot: \(error.message)", coreCode: error.code)
        }
    }

    /// A picture as ``Player/snapshot(maxWidth:)`` took it.
    public struct Snapshot: Sendable {
        /// The PNG file's bytes (RGB, 8 bits per channel).
        public var png: [UInt8]
        /// Its size in pixels.
        public var width: Int, height: Int
        /// The picture's presentation time in the stream (its own pts, as `frames.tsv` has it).
        public var mediaTime: Double
    }

    /// When captions are drawn: ``PlayerOptions/captions`` until ``setCaptions(_:)``.
    public var captions: CaptionDisplay { inner.withLock { $0.captions ?? $0.options.captions } }

    /// Draws the closed captions carried in the video over the pictures `mode`: off, while
    /// muted (auto) or always; applies at once while playing (the picture on screen is drawn
    /// again with or without them), else at ``play()``.
    public func setCaptions(_ mode: CaptionDisplay) {
        inner.withLock { $0.captions = mode }
        applyCaptions()
    }

    /// Tells the core (the player's, or `opening`) whether captions are drawn now: on, or auto
    /// while muted.
    func applyCaptions(to opening: CoreHandle? = nil) {
        let (core, shown) = inner.withLock { inner in
            let mode = inner.captions ?? inner.options.captions
            return (opening ?? inner.core, mode == .on || (mode == .auto && inner.muted))
        }
        try? core?.setCaptions(shown)
    }

    /// How pictures fit the display: ``PlayerOptions/fit`` until ``setFit(_:)``.
    public var fit: VideoFit { inner.withLock { $0.fit ?? $0.options.fit } }

    /// Fits pictures to the display in `fit` from now on (a playlist item's own); the picture
    /// on screen is drawn again in it at once. Applies while playing, else at ``play()``.
    public func setFit(_ fit: VideoFit) {
        let core = inner.withLock { inner in
            inner.fit = fit
            return inner.core
        }
        try? core?.setFit(fit.rawValue)
    }
}
