/// What a playing session tells the stall supervisor, as it happens (no one polls for it).
enum SessionReport: Sendable {
    /// A control step's reading of the core: the media presented so far (video frames plus
    /// stream audio sample frames; it stops growing in a stall). The supervisor times it itself.
    case progress(presented: Int)
    /// The packager restarted (a new `availabilityStartTime`): every presentation time moved, so
    /// the source is loaded afresh.
    case restart
    /// Playback is over for good (an on-demand end, an output failure): nothing left to watch.
    case over
    /// No session runs any more (a reload failed): reloads go on by the recovery policy's clock.
    case noSession
}

/// Stall recovery's decisions, a pure state machine fed with the sessions' progress readings
/// (``SessionReport/progress(presented:)``) or, while no session runs, with the time alone.
///
/// Stalled means nothing presented for half a second after playback began, or no session
/// running; the ``RecoveryPolicy`` says when a stall has lasted long enough to reload. Playing a
/// backup source, it asks for a probe of the main source every `mainRetryInterval`.
struct StallWatch: Sendable {
    var policy: RecoveryPolicy
    private var lastCount = -1
    private var lastProgress: Double
    private var played = false
    /// A reload was made and playback has not resumed since ("RECONNECTING..." is shown).
    private(set) var recovering = false
    private var lastMainProbe: Double

    /// What to do after a step.
    struct Step: Equatable {
        /// Playback resumed after a reload: clear the slate, report ``PlayerEvent/recovered``.
        var recovered = false
        /// Playing a backup and the main source's probe is due.
        var probeMain = false
        /// Reload now; the delay before the next reload if this one does not help.
        var reload: Double?
    }

    init(policy: RecoveryPolicy, now: Double) {
        self.policy = policy
        lastProgress = now
        lastMainProbe = now
    }

    /// One step at monotonic `now`: `presented` is the session's progress reading, `nil` when
    /// no session runs; `onBackup` whether a backup source plays.
    mutating func step(now: Double, presented: Int?, onBackup: Bool, mainRetryInterval: Double) -> Step {
        var step = Step()
        if let presented, presented != lastCount {
            lastCount = presented
            lastProgress = now
            played = played || presented > 0
        }
        let stalled = presented == nil || (played && now - lastProgress > 0.5)
        if !stalled && recovering {
            recovering = false
            step.recovered = true
        }
        if !stalled, !recovering, onBackup, now - lastMainProbe >= mainRetryInterval {
            lastMainProbe = now
            step.probeMain = true
            return step
        }
        if policy.update(now: now, stalled: stalled) {
            recovering = true
            step.reload = policy.delay
        }
        return step
    }

    /// A reload finished at `now`: the new session's progress and the stall's clock count from here.
    mutating func reloaded(now: Double) {
        lastProgress = now
        policy.reloaded(now: now)
    }

    /// When the next reload falls due if the stall goes on (monotonic seconds), nil when not stalled.
    var reloadDue: Double? { policy.reloadDue }
}
