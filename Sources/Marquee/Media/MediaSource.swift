import Foundation
import MarqueeBridge
import MarqueeStreaming

/// What the player presents on its outputs: a stream (its ``PlaybackSession``), or a file or a
/// still (a ``FileSource``). The player holds the one presenting and, for streams, one staged
/// (decoding ahead on staged core tracks, ``Player/prepare(_:targetLatency:startAt:)``), and
/// runs one event pump for its outputs (``Player/pumpEvents(_:)``): each core event goes to
/// the source presenting, and to no other.
protocol MediaSource: AnyObject, Sendable {
    /// Reacts to a core event while it presents (on the pump's task, the dispatch lock held:
    /// quick, and never back into the player).
    func handle(_ event: CoreEvent)
    /// It no longer presents (another source took the outputs, or they closed): its event
    /// sequences end.
    func retire()
}

extension Player {
    /// The player's one event pump, from the outputs' opening to ``stop()``: each core event, as
    /// the core queues it (its wakeup, no timer), goes to the source presenting. Events are
    /// polled and handed on with ``presenting``'s lock held, which a switch of sources takes
    /// too (``present(_:dropping:)``): no event of one source reaches the next.
    func pumpEvents(_ core: CoreHandle) -> Task<Void, Never> {
        let signals = core.eventSignals()
        return Task { [presenting, pictures] in
            func drain() {
                presenting.withLock { source in
                    while let event = core.pollEvent() {
                        if case .labelShown = event.kind {
                            pictures.signal()  // (the player's: what shows is the outputs')
                        } else {
                            source?.handle(event)
                        }
                    }
                }
            }
            drain()  // (queued before the signals were taken)
            for await _ in signals { drain() }  // one signal stands for any number of events
        }
    }

    /// Makes `source` the one the core's events go to (nil: none), the one before retired;
    /// `dropping`: the events queued so far (the source before's) are dropped first.
    func present(_ source: (any MediaSource)?, dropping: Bool, core: CoreHandle?) {
        let before = presenting.withLock { current -> (any MediaSource)? in
            if dropping { core?.dropEvents() }
            defer { current = source }
            return current
        }
        if let before, before !== source { before.retire() }
    }
}

extension PlaybackSession: MediaSource {
    /// The session's reaction (``handle(_:)``), and its end when playback is over (ended,
    /// failed for good): ``run()`` returns.
    func handle(_ event: CoreEvent) {
        if react(to: event) { over.signal() }
    }

    /// Nothing to end: its run is cancelled by whoever replaced it.
    func retire() {}
}

/// A file or a still played in place of a stream (``Player/playFile(_:label:still:from:)``):
/// the core events while its first picture is awaited, then its end and failures
/// (``FileEvent``), kept until they are read (``events()``).
final class FileSource: MediaSource {
    private struct State {
        /// While its first frame is awaited: every core event goes there.
        var anchoring: AsyncStream<CoreEvent>.Continuation?
        /// Its events not yet read, and the reader's stream.
        var pending: [FileEvent] = []
        var reader: AsyncStream<FileEvent>.Continuation?
        var retired = false
    }
    private let state: Locked<State>
    /// The core events while its first frame is awaited (one reader: the anchoring).
    let anchorEvents: AsyncStream<CoreEvent>

    init() {
        let (events, continuation) = AsyncStream<CoreEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        anchorEvents = events
        state = Locked(State(anchoring: continuation))
    }

    func handle(_ event: CoreEvent) {
        state.withLock { state in
            if let anchoring = state.anchoring {
                anchoring.yield(event)
                return
            }
            let file: FileEvent
            switch event.kind {
            case .ended: file = .ended
            case .error: file = .failed(event.message, missingStream: event.error?.isMissingStream == true)
            default: return
            }
            if let reader = state.reader {
                reader.yield(file)
            } else if state.pending.count < 64 {
                state.pending.append(file)
            }
        }
    }

    /// Its first frame was found (or given up on): the events from now on are its own.
    func anchored() {
        state.withLock { state in
            state.anchoring?.finish()
            state.anchoring = nil
        }
    }

    /// Its end and failures from its first frame on (those before this call first); the
    /// sequence ends when another source presents or the outputs close. A second call ends the
    /// first sequence.
    func events() -> AsyncStream<FileEvent> {
        let (stream, continuation) = AsyncStream<FileEvent>.makeStream(bufferingPolicy: .bufferingNewest(64))
        let old = state.withLock { state -> AsyncStream<FileEvent>.Continuation? in
            defer {
                for event in state.pending { continuation.yield(event) }
                state.pending = []
                if state.retired { continuation.finish() } else { state.reader = continuation }
            }
            return state.reader
        }
        old?.finish()
        return stream
    }

    func retire() {
        let (anchoring, reader) = state.withLock { state in
            defer {
                state.retired = true
                state.anchoring = nil
                state.reader = nil
            }
            return (state.anchoring, state.reader)
        }
        anchoring?.finish()
        reader?.finish()
    }
}
