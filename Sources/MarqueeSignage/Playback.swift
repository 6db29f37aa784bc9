public import Marquee

/// One contract for playing, whatever plays: a stream's `Player`, a ``PlaylistPlayer`` or a
/// ``SchedulePlayer``. An app (or a control surface) that starts, pauses and stops "what plays
/// on this screen" holds it as `any Playback`.
public protocol Playback: AnyObject, Sendable {
    /// Starts playing; returns once the first source (or item) is loading. Throws what cannot
    /// be played at all (wrong options, outputs that cannot open).
    func play() async throws(PlayerError)
    /// Pauses what plays; throws `PlayerError.Code.state` when nothing can be paused now.
    func pause() throws(PlayerError)
    /// Resumes after ``pause()``.
    func resume()
    /// Stops and closes the outputs.
    func stop() async
}

extension Player: Playback {}
extension PlaylistPlayer: Playback {}
extension SchedulePlayer: Playback {}
