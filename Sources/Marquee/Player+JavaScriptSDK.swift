public import Foundation

/// The names and units of Marquee's JavaScript SDK, for firmware ported from it. Each is a
/// spelling of a Swift member named in its comment; unlike the rest of the API (seconds as
/// `Double` everywhere), ``latency``, ``buffer`` and ``timeOffset`` are milliseconds, as there.
extension Player {
    /// ``source``.
    public var currentSrc: URL? { source }
    /// ``state``.
    public var playbackState: PlaybackState { state }
    /// ``PlaybackStatus/position`` of ``status``, seconds.
    public var currentTime: Double? { status.position }
    /// ``PlaybackStatus/latency`` of ``status``, in milliseconds.
    public var latency: Double? { status.latency.map { $0 * 1000 } }
    /// ``PlaybackStatus/buffer`` of ``status``, in milliseconds.
    public var buffer: Double { status.buffer * 1000 }
    /// ``PlaybackStatus/timeOffset`` of ``status``, in milliseconds.
    public var timeOffset: Double { status.timeOffset * 1000 }
    /// ``PlaybackStatus/playbackRate`` of ``status``.
    public var playbackRate: Double { status.playbackRate }
    /// ``isMuted``.
    public var muted: Bool { isMuted }
    /// ``close()``.
    public func dispose() async { await close() }
}
