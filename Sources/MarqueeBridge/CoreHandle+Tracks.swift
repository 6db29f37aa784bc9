internal import CCore

/// What a core track carries (`mq_track_kind`).
package enum CoreTrackKind: Sendable {
    case audio, video
}

/// The core's tracks: added (staged, activated), fed (init segments, media segments,
/// discontinuities, their end), reset, placed and removed.
extension CoreHandle {
    package func addTrack(_ kind: CoreTrackKind, ptsOffset: Double) throws(CoreError) -> Int32 {
        var id: Int32 = -1
        try call { mq_player_add_track($0, kind == .audio ? MQ_TRACK_AUDIO : MQ_TRACK_VIDEO, ptsOffset, &id) }
        return id
    }

    /// A staged track (`mq_player_add_staged_track`): decoded ahead from `start` on, its first
    /// picture or sound held until ``activateTracks()``.
    package func addStagedTrack(_ kind: CoreTrackKind, ptsOffset: Double, start: Double) throws(CoreError) -> Int32 {
        var id: Int32 = -1
        try call {
            mq_player_add_staged_track($0, kind == .audio ? MQ_TRACK_AUDIO : MQ_TRACK_VIDEO, ptsOffset, start, &id)
        }
        return id
    }

    /// The staged tracks replace every other (`mq_player_activate_tracks`); returns the
    /// ``epoch`` they begin.
    @discardableResult
    package func activateTracks() throws(CoreError) -> UInt64 {
        var begun: UInt64 = 0
        let rc: Int32 = player.withEpochLock { p, epoch in
            guard let p else { return MQ_ERR_CLOSED.rawValue }
            let rc = mq_player_activate_tracks(p)
            if rc >= 0 { epoch += 1 }
            begun = epoch
            return rc
        }
        if rc < 0 { throw CoreError(code: rc) }
        return begun
    }

    /// Removes a track (`mq_player_remove_track`).
    package func removeTrack(_ track: Int32) throws(CoreError) {
        try call { mq_player_remove_track($0, track) }
    }

    package func push(track: Int32, bytes: UnsafeRawBufferPointer) throws(CoreError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        try call { mq_player_push($0, track, base.assumingMemoryBound(to: UInt8.self), bytes.count) }
    }

    /// Pushes the same bytes to several tracks with one copy they share (a muxed transport
    /// stream's tracks: `mq_player_push_shared`).
    package func push(tracks: [Int32], bytes: UnsafeRawBufferPointer) throws(CoreError) {
        guard let base = bytes.baseAddress, bytes.count > 0, !tracks.isEmpty else { return }
        try tracks.withUnsafeBufferPointer { (ids) throws(CoreError) in
            guard let first = ids.baseAddress else { return }
            let data = base.assumingMemoryBound(to: UInt8.self)
            try call { mq_player_push_shared($0, first, Int32(ids.count), data, bytes.count) }
        }
    }

    /// Pushes an init segment; the core keeps a copy to resume on after a damaged segment
    /// (`mq_player_push_init`).
    package func pushInit(track: Int32, bytes: UnsafeRawBufferPointer) throws(CoreError) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        try call { mq_player_push_init($0, track, base.assumingMemoryBound(to: UInt8.self), bytes.count) }
    }

    /// Marks the end of a media segment: a damaged one costs only itself (`mq_player_end_segment`).
    package func endSegment(track: Int32) throws(CoreError) {
        try call { mq_player_end_segment($0, track) }
    }

    package func resetTrack(_ track: Int32) throws(CoreError) {
        try call { mq_player_reset_track($0, track) }
    }

    /// Reuses a track for a new source: discards its queue, restarts its demuxer (the next bytes
    /// are an init segment) and sets its pts offset.
    package func reuseTrack(_ track: Int32, ptsOffset: Double) throws(CoreError) {
        try call { mq_player_reset_track($0, track) }
        try call { mq_player_set_track_offset($0, track, ptsOffset) }
    }

    /// What a track's bytes are (`mq_player_set_track_container`): before its first push or
    /// right after a reset.
    package func setTrackContainer(_ track: Int32, transportStream: Bool) throws(CoreError) {
        try call {
            mq_player_set_track_container(
                $0, track, Int32(transportStream ? MQ_CONTAINER_MPEGTS.rawValue : MQ_CONTAINER_FMP4.rawValue))
        }
    }

    /// The track's bytes are one whole file in any format libavformat recognises (a still
    /// image, a progressive MP4): `MQ_CONTAINER_PROBED`.
    package func setTrackContainerProbed(_ track: Int32) throws(CoreError) {
        try call { mq_player_set_track_container($0, track, Int32(MQ_CONTAINER_PROBED.rawValue)) }
    }

    /// Changes the offset added to a track's media time (`mq_player_set_track_offset`), read as
    /// each frame is decoded.
    package func setTrackOffset(_ track: Int32, ptsOffset: Double) throws(CoreError) {
        try call { mq_player_set_track_offset($0, track, ptsOffset) }
    }

    /// The bytes pushed next begin a new stream (`mq_player_push_discontinuity`): what is queued
    /// plays to its end, then a new demuxer and decoder take over, placed with `ptsOffset`
    /// (`nil`: the current one, or one set later with ``setTrackOffset(_:ptsOffset:)``).
    package func pushDiscontinuity(_ track: Int32, ptsOffset: Double?) throws(CoreError) {
        try call { mq_player_push_discontinuity($0, track, ptsOffset ?? .nan) }
    }

    package func endTrack(_ track: Int32) throws(CoreError) {
        try call { mq_player_end_track($0, track) }
    }
}
