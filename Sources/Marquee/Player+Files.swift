import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming

/// Files and still pictures played in place of a source (a playlist's image and file items).
extension Player {
    /// Plays `file` (the bytes of any file libavformat reads: a PNG or JPEG, an MP4, …) in place
    /// of the source, until the next load (a playlist's image or file item): the source stops
    /// as with ``cut()``, the tracks read the file whole (`MQ_CONTAINER_PROBED`), and its first
    /// picture is shown as soon as it is decoded (the timeline is held until then, then
    /// anchored on that picture's time: no fixed start lead). A `still` (an image) is one
    /// picture held, without sound (its audio track is not fed: no buffering band, no end).
    /// Opens the outputs when nothing played yet. `label` names it in `frames:`. Its end and
    /// later errors are its events (``fileEvents()``): no session follows it. Throws
    /// ``PlayerError/Code-swift.struct/media`` when nothing of it decodes.
    /// Returns when (monotonic seconds) its first picture is due.
    @discardableResult
    /// `from`: seconds into the file its presentation starts at (what comes before is decoded,
    /// not shown).
    package func playFile(_ file: [UInt8], label: String?, still: Bool, from offset: Double = 0)
        async throws(PlayerError)
        -> Double
    {
        if let due = await takeStagedFile(file, label: label, still: still) { return due }
        await discardStaged()
        await cut()
        var core = inner.withLock { $0.core }
        let fresh = core == nil
        if fresh { core = try openOutputs(options) }
        guard let core else { return Monotonic.now() }
        // Before any source measured the server clock: the local one (frames:' wall times).
        if fresh { try? core.setWallOffset(ServerClock.local().offset) }
        let source = FileSource()
        present(source, dropping: true, core: core)  // (the cut source's events dropped)
        inner.withLock { $0.file = source }
        let kinds: [CoreTrackKind] = still ? [.video] : [.video, .audio]
        var tracks: [Int32] = []
        do throws(CoreError) {
            for kind in kinds {
                let known = inner.withLock { inner in
                    inner.session?.plans.flatMap(\.coreTracksByKind).first { $0.0 == kind }?.1 ?? inner.ownTracks[kind]
                }
                let track: Int32
                if let known { track = known } else { track = try core.addTrack(kind, ptsOffset: 0) }
                inner.withLock {
                    $0.core = core
                    if known == nil { $0.ownTracks[kind] = track }
                }
                try core.resetTrack(track)
                try core.setTrackContainerProbed(track)
                try core.setTrackOffset(track, ptsOffset: 0)
                tracks.append(track)
            }
            try core.setLabel(label)
            // Held (nothing due, nothing late) until its first picture or sound is decoded.
            try core.setTimeline(monoAnchor: Monotonic.now() + Self.fileHold, mediaAnchor: 0)
            for track in tracks { try Self.feedWhole(file, to: track, core: core) }
        } catch {
            throw PlayerError(.output, error.message, coreCode: error.code)
        }
        try startOnce(core)
        // (video first)
        defer { source.anchored() }
        return try await anchorOnFirstFrame(
            core, events: source.anchorEvents, video: tracks.first, offset: still ? 0 : max(0, offset))
    }

    /// Decodes `file` ahead on staged core tracks for monotonic instant `at` (a schedule's
    /// switch), and arms the core to show it then by itself (``ArmedActivation``), its first
    /// picture (or sound) due on it, under the `frames:` label `label`: the
    /// ``playFile(_:label:still:from:)`` of the same bytes that follows, however late the
    /// cooperative pool runs it, finds it playing. Nothing is staged before the outputs play
    /// (the first item opens them), or when the core refuses (the play decodes it then).
    package func stageFile(_ file: [UInt8], label: String?, still: Bool, from offset: Double, at: Double) async {
        await discardStaged()
        guard let core = inner.withLock({ $0.coreStarted ? $0.core : nil }) else { return }
        var tracks: [CoreTrackKind: Int32] = [:]
        do throws(CoreError) {
            // (A still's sound track is staged too, never fed: no end, as ``playFile`` has it.)
            for kind in [CoreTrackKind.video, .audio] {
                let track = try core.addStagedTrack(
                    kind, ptsOffset: 0, start: still || offset <= 0 ? -StagedFile.fromAnyTime : offset)
                tracks[kind] = track
                try core.setTrackContainerProbed(track)
                if kind == .video || !still { try Self.feedWhole(file, to: track, core: core) }
            }
        } catch {
            logger.info("the next file is not decoded ahead", metadata: ["error": "\(error)"])
            for track in tracks.values { try? core.removeTrack(track) }
            return
        }
        let armed = ArmedActivation(core: core, at: at, mediaAnchor: nil, wallOffset: nil, label: label)
        let staged = StagedFile(bytes: file, label: label, still: still, tracks: tracks, armed: armed)
        let kept = inner.withLock { inner -> Bool in
            guard inner.core === core, inner.stagedFile == nil, inner.staged == nil else { return false }
            inner.stagedFile = staged
            return true
        }
        if !kept { staged.discard(core) }
    }

    /// The file staged for `file` (``stageFile(_:label:still:from:at:)``) when the core showed it
    /// on its instant: it is the file playing from now on; returns when its first picture was
    /// due. Nil (and any staged file discarded) when none was, or the core did not.
    private func takeStagedFile(_ file: [UInt8], label: String?, still: Bool) async -> Double? {
        let staged = inner.withLock { inner in
            defer { inner.stagedFile = nil }
            return inner.stagedFile
        }
        guard let staged, let core = inner.withLock({ $0.core }) else { return nil }
        guard staged.label == label, staged.still == still, staged.bytes == file,
            staged.armed.cancel() == .activated
        else {
            staged.discard(core)
            return nil
        }
        await discardStaged()
        await cut()  // (the tracks it replaced are gone: the session's feeders stop)
        let source = FileSource()
        present(source, dropping: true, core: core)  // (the cut source's events dropped)
        source.anchored()
        inner.withLock { inner in
            inner.file = source
            inner.session = nil  // (its tracks went with the activation)
            inner.task = nil
            inner.ownTracks = staged.tracks
        }
        return staged.armed.at
    }

    /// Gives `track` the whole of `file` and ends its input.
    private static func feedWhole(_ file: [UInt8], to track: Int32, core: CoreHandle) throws(CoreError) {
        let pushed = file.withUnsafeBytes { bytes -> CoreError? in
            do throws(CoreError) { try core.push(track: track, bytes: bytes) } catch { return error }
            return nil
        }
        if let pushed { throw pushed }
        try core.endTrack(track)
    }

    /// How far ahead a file's timeline is held while its first frame decodes, seconds.
    static let fileHold = 3600.0

    /// Anchors the timeline on the first decoded frame of a file (its video's, or its sound's
    /// when it has no picture): that time plus `offset` is due 5 ms from then (what comes before
    /// is decoded and dropped as late). Follows the file's core events as they come (`events`,
    /// from the player's pump); waits at most 2 s (then from 0). Returns when it is due.
    private func anchorOnFirstFrame(
        _ core: CoreHandle, events: AsyncStream<CoreEvent>, video: Int32?, offset: Double
    ) async throws(PlayerError) -> Double {
        // The earliest decoded time seen, and a failure that ends the wait.
        let found = Locked<(first: Double?, failure: PlayerError?)>((nil, nil))
        if let video {
            await withTaskGroup(of: Void.self) { group in
                group.addTask {
                    for await event in events {
                        switch event.kind {
                        case .trackFormat:
                            if let t = event.mediaTime, t.isFinite {
                                found.withLock { $0.first = min($0.first ?? t, t) }
                            }
                            if event.track == video { return }
                        case .error where event.error?.isMissingStream == true:
                            // a sound file: no picture; a file without sound: its pictures
                            if event.track == video { return }
                        case .error where event.track == video && found.withLock({ $0.first }) != nil:
                            return  // a sound file: no picture
                        case .error:
                            if event.track == video { continue }  // (its sound may still come)
                            found.withLock { $0.failure = PlayerError(.media, event.message) }
                            return
                        case .ended:
                            found.withLock { $0.failure = PlayerError(.media, "nothing in the file decodes") }
                            return
                        default:
                            continue
                        }
                    }
                }
                group.addTask { try? await Task.sleep(for: .seconds(2)) }
                await group.next()
                group.cancelAll()
            }
        }
        let (first, failure) = found.withLock { $0 }
        if let failure { throw failure }
        do {
            let due = Monotonic.now() + 0.005
            try core.setTimeline(monoAnchor: due, mediaAnchor: (first ?? 0) + offset)
            return due
        } catch {
            throw PlayerError(.output, error.message, coreCode: error.code)
        }
    }

    /// The events of the file playing (``playFile(_:label:still:from:)``) from its first frame
    /// on, as the core queues them (the player's event pump, no timer): its end, a decode error.
    /// The sequence ends when another source presents, or the outputs close.
    package func fileEvents() -> AsyncStream<FileEvent> {
        guard let file = inner.withLock({ $0.file }) else { return AsyncStream { $0.finish() } }
        return file.events()
    }

    /// Names what is presented from now on: the `frames:` output's `item` column (a playlist
    /// item's id; nil: none).
    package func setLabel(_ label: String?) {
        try? inner.withLock { $0.core }?.setLabel(label)
    }
}

/// What a file or a still played in place of a source reports (``Player/fileEvents()``).
package enum FileEvent: Sendable, Equatable {
    /// It played to its end (every track ended and was presented).
    case ended
    /// A track of it failed; `missingStream`: it has no such stream (a file without sound, an
    /// image), which is no failure of the file.
    case failed(String, missingStream: Bool)
}

/// A file or still decoded ahead on staged core tracks for a switch's instant, the core armed
/// to show it then (``Player/stageFile(_:label:still:from:at:)``).
struct StagedFile: Sendable {
    /// A file staged from its start: its first picture held whatever its first time (seconds).
    static let fromAnyTime = 1e9

    /// The file's bytes (the play that takes it is of the same bytes, not only the same size:
    /// an array shares its storage, so comparing the very same is quick).
    let bytes: [UInt8]
    let label: String?
    let still: Bool
    let tracks: [CoreTrackKind: Int32]
    let armed: ArmedActivation

    /// Not shown after all: the activation cancelled (unless it began), the tracks removed.
    func discard(_ core: CoreHandle) {
        if armed.cancel() == .activated { return }  // (on screen: they are the core's tracks now)
        for track in tracks.values { try? core.removeTrack(track) }
    }
}
