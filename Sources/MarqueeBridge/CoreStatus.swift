/// A snapshot of the core's presentation state (`mq_status`).
package struct CoreStatus: Sendable {
    package enum State: Sendable { case idle, buffering, playing, ended, error }
    package var state: State
    package var width: Int
    package var height: Int
    package var mono: Double
    /// Presentation time presented now; `nil` before media.
    package var position: Double?
    package var audioDelay: Double
    package var audioQueuedUntil: Double?
    package var videoQueuedUntil: Double?
    package var firstFrameMono: Double?
    package var framesDecoded: Int
    package var framesPresented: Int
    package var framesDropped: Int
    package var audioFramesPlayed: Int
    package var audioFramesDropped: Int
    package var audioSilenceFrames: Int
    /// The largest A/V offset of the last second: the stream audio heard as a picture became
    /// visible minus its presentation time (positive: the picture lags); `nil` without both.
    package var avOffset: Double?
    package var audioUnderruns: Int = 0
    package var audioXruns: Int = 0
    /// The audio device's last failure (an `mq_err`), 0 while it works.
    package var audioError: Int32 = 0
}
