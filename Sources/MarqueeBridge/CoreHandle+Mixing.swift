internal import CCore

/// The mixer: clips played on their inputs, gains ramped, the output volume.
extension CoreHandle {
    /// A mixer input: the stream's audio or one of the clip inputs.
    package enum MixInput: Int32, Sendable, CaseIterable {
        case stream = 0
        case music = 1
        case ad = 2
        case spare = 3
    }

    package enum Ramp: Int32, Sendable {
        /// `MQ_RAMP_SHAPE_LINEAR`.
        case linear = 0
        /// `MQ_RAMP_SHAPE_EQUAL_POWER`.
        case equalPower = 1
    }

    /// Plays `path` on a clip input (see `mq_player_play_clip`); `at` nil: now. The file is
    /// opened (`mq_clip_open`, file I/O) on a Dispatch queue without holding the core's lock;
    /// the opened clip is then handed over (`mq_player_set_clip`, which never blocks).
    package func playClip(_ input: MixInput, path: String, offset: Double, loop: Bool, crossfade: Double, at: Double?)
        async throws(CoreError)
    {
        let (rate, channels) = clipFormat
        let opened = await offCooperativePool { () -> CorePointer in
            var clip: OpaquePointer?
            let rc = mq_clip_open(path, rate, channels, offset, loop, crossfade, at ?? .nan, &clip)
            return CorePointer(clip, rc)
        }
        var clip = opened.pointer
        guard opened.rc >= 0, clip != nil else { throw CoreError(code: opened.rc) }
        let rc: Int32 = player.withLock { p in
            guard let p else { return MQ_ERR_CLOSED.rawValue }
            return mq_player_set_clip(p, input.rawValue, &clip)  // takes the clip whatever the result
        }
        mq_clip_destroy(&clip)  // closed meanwhile: it was never handed over (else nil already)
        if rc < 0 { throw CoreError(code: rc) }
    }

    /// Stops a clip input at once (`mq_player_stop_clip`, which never blocks).
    package func stopClip(_ input: MixInput) throws(CoreError) {
        try call { p in mq_player_stop_clip(p, input.rawValue) }
    }

    /// Ramps an input's gain (see `mq_player_set_gain`); `at` nil: now.
    package func setGain(_ input: MixInput, _ gain: Double, ramp: Double, shape: Ramp, at: Double?) throws(CoreError) {
        try call { p in mq_player_set_gain(p, input.rawValue, Float(gain), ramp, shape.rawValue, at ?? .nan) }
    }

    package func cancelTimedGains() throws(CoreError) {
        try call { p in mq_player_cancel_timed_gains(p) }
    }

    package func setVolume(_ volume: Double, muted: Bool) throws(CoreError) {
        try call { p in mq_player_set_volume(p, Float(volume), muted) }
    }

    /// The gain an input has reached, nil when closed.
    package func gain(_ input: MixInput) -> Double? {
        player.withLock { p in
            guard let p else { return nil }
            let g = mq_player_gain(p, input.rawValue)
            return g.isFinite ? Double(g) : nil
        }
    }
}
