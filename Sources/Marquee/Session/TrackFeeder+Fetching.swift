import Foundation
import Logging
import MarqueeBridge
import MarqueeStreaming
import NIOCore

/// Obtaining segments: from the store or fetched in the rendition ABR chooses (init segments,
/// encrypted segments, CMCD, abandonment), and the live edge collected for the delay.
extension TrackFeeder {
    /// Pushes `segment` from the store when it is kept there, else fetches it in the rendition
    /// ABR chooses.
    func obtain(_ segment: SegmentReference) async -> Outcome {
        if initSuspect.withLock({ s in
            defer { s = false }
            return s
        }) {
            inits.withLock { $0.removeAll() }
            pushedInit.withLock { $0 = nil }
        }
        guard let kept = store?.entry(track: plan.coreTrack, time: segment.time) else {
            let (rep, repSegment) = rendition(for: segment)
            if let key = repSegment.key {
                return await fetchEncrypted(segment, rep: rep, url: repSegment.url, range: repSegment.range, key: key)
            }
            return await fetch(segment, rep: rep, url: repSegment.url, range: repSegment.range)
        }
        let rep = plan.renditions.first { $0.id == kept.representation } ?? plan.representation
        guard await pushInit(rep) else { return .cancelled }
        return pushWhole(kept.bytes, of: segment, rep: rep) ? .pushed : .cancelled
    }

    /// Pushes a whole segment that is in memory (from the store, or decrypted): a transport
    /// stream's offset first when it is pending, then its in-band events. False when the core
    /// is closed.
    private func pushWhole(_ bytes: ByteBuffer, of segment: SegmentReference, rep: Representation) -> Bool {
        if rep.measuresTimestamps, offsetPending.withLock({ $0 }) { measureOffset(bytes, segment: segment, rep: rep) }
        do {
            try push(bytes)
            try endSegment()
        } catch { return false }
        var scanner = EventMessageScanner()
        let boxes = bytes.withUnsafeReadableBytes { scanner.feed($0) }
        if !boxes.isEmpty { inbandEvents(boxes, segment: segment) }
        reportRefused(scanner)
        return true
    }

    /// Keeps the live edge in the store while the presentation is behind it (a user delay, a
    /// pause): every segment at the latency target is fetched whole, as it becomes available.
    func collect() async {
        guard let store else { return }
        var timeline = plan.timeline
        var next: SegmentReference?
        while !Task.isCancelled {
            let version = shift.version
            guard shift.delay > 0 || shift.paused else {
                next = nil  // the presenter fetches (and keeps) the live edge itself
                await shift.changed(from: version)
                continue
            }
            let live = livePosition()
            if next == nil || next!.end < live - (next!.end - next!.start) { next = timeline.segment(containing: live) }
            guard let segment = next else {
                timeline = await reloadedTimeline() ?? timeline
                try? await Task.sleep(for: .milliseconds(500))
                continue
            }
            if store.entry(track: plan.coreTrack, time: segment.time) == nil {
                await waitUntilAvailable(segment, timeline)
                if Task.isCancelled { return }
                // In the rendition playing last (a choice made for the live edge holds).
                let rep = plan.renditions.first { $0.id == active.withLock { $0 } } ?? plan.representation
                let other =
                    rep.id == plan.representation.id
                    ? nil : self.timeline(for: rep)?.segment(containing: segment.start + 1e-3)
                let source = other ?? segment
                do {
                    var bytes = try await fetcher.get(
                        source.url, timeout: .seconds(max(4, (segment.end - segment.start) * 3)), range: source.range
                    ).body
                    if let key = source.key {  // kept in the clear
                        guard
                            let clear = try? CoreHandle.decryptAES128(
                                Array(bytes.readableBytesView), key: try await loader.key(key.url), iv: key.iv)
                        else {
                            next = timeline.segment(after: segment)
                            continue
                        }
                        bytes = ByteBuffer(bytes: clear)
                    }
                    store.put(
                        track: plan.coreTrack, time: segment.time, start: segment.start, end: segment.end, bytes: bytes,
                        representation: other == nil ? plan.representation.id : rep.id)
                } catch {
                    if error.code == .cancelled { return }
                    logger.debug(
                        "collector: segment missed",
                        metadata: ["url": "\(Redact.url(source.url))", "error": "\(error)"])
                }
            }
            next = timeline.segment(after: segment)
        }
    }

    /// `rep`'s init segment, fetched once (retried until it comes or the task ends:
    /// ``SegmentLoader/initSegment(_:timeline:onError:)``); empty for a transport stream.
    func initSegment(_ rep: Representation) async -> ByteBuffer? {
        if rep.isTransportStream { return ByteBuffer() }  // no init segment
        if let cached = inits.withLock({ $0[rep.id] }) { return cached }
        let repTimeline = timeline(for: rep)
        guard let url = repTimeline?.initializationURL else {
            events.send(
                .error(PlayerError(.manifest, "representation \(rep.id) has no initialization segment"), fatal: false))
            return nil
        }
        let events = self.events
        let loader = self.loader
        let fetched = await CMCDSession.$object.withValue(CMCDSession.Object(type: "i", bitrate: rep.bandwidth)) {
            await loader.initSegment(
                url, range: repTimeline?.initializationRange, timeline: repTimeline,
                onError: { events.send(.error(PlayerError($0), fatal: false)) })
        }
        guard let body = fetched else {
            return nil
        }
        inits.withLock { $0[rep.id] = body }
        return body
    }

    /// Gives the core's track `rep`'s init segment unless it has it already (a rendition
    /// switch: the core starts a new demuxer session there, without a gap), and reports a
    /// change of the active rendition. False when cancelled or the core is closed.
    private func pushInit(_ rep: Representation) async -> Bool {
        guard pushedInit.withLock({ $0 }) != rep.id else { return true }
        guard let bytes = await initSegment(rep) else { return false }
        do { try push(bytes, init: true) } catch { return false }
        pushedInit.withLock { $0 = rep.id }
        let previous = active.withLock { a in
            defer { a = rep.id }
            return a
        }
        if previous != rep.id {
            let before = plan.renditions.first { $0.id == previous }
            if let before, rep.bandwidth > before.bandwidth, let estimate = abr?.withLock({ $0.estimate }) {
                events.send(.bandwidthTest(bitsPerSecond: estimate, quality: Quality(rep)))
            }
            events.send(.activeQualityChanged(Quality(rep)))
            logger.info("rendition", metadata: ["id": "\(rep.id)", "bandwidth": "\(rep.bandwidth)"])
        }
        return true
    }

    /// The rendition ABR wants for `segment` (a segment of the plan's timeline) and that
    /// rendition's segment covering the same time.
    private func rendition(for segment: SegmentReference) -> (Representation, SegmentReference) {
        guard let abr, plan.renditions.count > 1 else { return (plan.representation, segment) }
        let buffer = max(0, (pushedEnd.withLock { $0 } ?? segment.start) - (position() ?? segment.start))
        let choice = abr.withLock {
            $0.choose(buffer: buffer, segmentDuration: isLive ? segment.end - segment.start : nil)
        }
        guard choice.id != plan.representation.id else { return (plan.representation, segment) }
        guard let rep = plan.renditions.first(where: { $0.id == choice.id }),
            let other = timeline(for: rep)?.segment(containing: segment.start + 1e-3)
        else { return (plan.representation, segment) }
        return (rep, other)
    }

    enum Outcome { case pushed, skipped, abandoned, cancelled }

    /// What the loader asks while it loads `segment` as `rep`: the init segment given first,
    /// the buffer, whether it is late, when its first byte came, ABR's abandonment rule.
    private func loadContext(_ segment: SegmentReference, rep: Representation) -> SegmentLoadContext {
        let feeder = self
        let prepare: @Sendable () async -> Bool = { await feeder.pushInit(rep) }
        let buffer: @Sendable () -> (ahead: Double?, beforeSegment: Double) = {
            let pushed = feeder.pushedEnd.withLock { $0 } ?? segment.start
            return (feeder.bufferAhead(from: segment.start), max(0, pushed - (feeder.position() ?? segment.start)))
        }
        let isLate: @Sendable () -> Bool = { segment.end < feeder.wantedPosition() }
        let firstByte: @Sendable () -> Void = {
            guard feeder.isLive else { return }
            let now = feeder.serverSeconds()
            feeder.firstByteAt.withLock { $0 = $0 ?? now }
        }
        var shouldAbandon: (@Sendable (Int, Int, Double, Double) -> Bool)?
        if let abr {
            shouldAbandon = { bytes, total, elapsed, buffer in
                abr.withLock {
                    $0.shouldAbandon(bytes: bytes, of: total, elapsed: elapsed, buffer: buffer)
                        && $0.renditions.first?.id != rep.id
                }
            }
        }
        return SegmentLoadContext(
            prepare: prepare, buffer: buffer, isLate: isLate, firstByte: firstByte, shouldAbandon: shouldAbandon)
    }

    /// What CMCD says of a request for `segment` as `rep`: its type, bitrate, duration and the
    /// buffer ahead of it.
    private func cmcdObject(_ segment: SegmentReference, rep: Representation) -> CMCDSession.Object {
        let type: String
        switch rep.kind {
        case .video: type = rep.isTransportStream ? "av" : "v"
        case .audio: type = "a"
        case .text: type = "c"
        default: type = "o"
        }
        return CMCDSession.Object(
            type: type, bitrate: rep.bandwidth, duration: segment.end - segment.start,
            buffer: bufferAhead(from: segment.start))
    }

    /// The request for `segment` (of the plan's timeline) as `rep` from `url` (its bytes `range`).
    private func request(_ segment: SegmentReference, rep: Representation, url: URL, range: ByteRange?)
        -> SegmentRequest
    {
        let duration = segment.end - segment.start
        // Sent as it is produced (low latency): its rate says little about the link.
        let paced =
            isLive
            && (plan.timeline.availabilityStartTime.map { $0.addingTimeInterval(segment.end) > clock.now() } ?? false)
        return SegmentRequest(
            url: url, range: range, timeline: timeline(for: rep), duration: duration,
            expectedBytes: rep.bandwidth * Int(duration * 1000) / 8000,
            transportStream: rep.isTransportStream, live: isLive, paced: paced)
    }

    /// An encrypted segment (HLS AES-128): fetched whole with its key, decrypted by the core,
    /// then pushed like any other. A key that cannot be fetched or does not decrypt the
    /// segment is reported and the segment skipped.
    private func fetchEncrypted(
        _ segment: SegmentReference, rep: Representation, url: URL, range: ByteRange?, key: SegmentKey
    ) async -> Outcome {
        let (outcome, clear) = await CMCDSession.$object.withValue(cmcdObject(segment, rep: rep)) {
            await loader.loadEncrypted(
                request(segment, rep: rep, url: url, range: range), key: key, context: loadContext(segment, rep: rep),
                decrypt: { try CoreHandle.decryptAES128($0, key: $1, iv: key.iv) })
        }
        switch outcome {
        case .delivered(let bytes, let seconds):
            guard let clear else { return .cancelled }
            abr?.withLock { $0.downloaded(bytes: bytes, seconds: seconds, weight: segment.end - segment.start) }
            guard pushWhole(clear, of: segment, rep: rep) else { return .cancelled }
            store?.put(
                track: plan.coreTrack, time: segment.time, start: segment.start, end: segment.end, bytes: clear,
                representation: rep.id)
            return .pushed
        default:
            return settle(outcome)
        }
    }

    /// Fetches `segment` (of the plan's timeline) as `rep` from `url` into the core
    /// (``SegmentLoader/load(_:into:context:)``): what it hands on goes through a
    /// ``SegmentSink``; the download is measured for ABR and the segment kept for the delay.
    private func fetch(_ segment: SegmentReference, rep: Representation, url: URL, range: ByteRange?) async -> Outcome {
        let request = request(segment, rep: rep, url: url, range: range)
        var sink = SegmentSink(feeder: self, segment: segment, rep: rep, url: url)
        let context = loadContext(segment, rep: rep)
        let outcome = await CMCDSession.$object.withValue(cmcdObject(segment, rep: rep)) {
            await loader.load(request, into: &sink, context: context)
        }
        switch outcome {
        case .delivered(let bytes, let seconds):
            guard sink.finish() else { return .cancelled }
            abr?.withLock {
                $0.downloaded(bytes: bytes, seconds: seconds, paced: request.paced, weight: request.duration)
            }
            store?.put(
                track: plan.coreTrack, time: segment.time, start: segment.start, end: segment.end, bytes: sink.whole,
                representation: rep.id)
            return .pushed
        case .abandoned(let bytes, let seconds):
            // What came so far is the link's speed now.
            abr?.withLock { $0.downloaded(bytes: bytes, seconds: seconds, weight: request.duration) }
            return .abandoned
        default:
            return settle(outcome)
        }
    }

    /// A load that ended without a segment: reported (a partial low-latency segment in the core
    /// is ended there: it decodes what is whole and skips a box cut short).
    private func settle(_ outcome: SegmentLoadOutcome) -> Outcome {
        switch outcome {
        case .skipped(let error, let partial):
            if partial { try? endSegment() }
            events.send(.error(PlayerError(error), fatal: false))
            return .skipped
        case .unusable(let why):
            events.send(.error(PlayerError(.media, why), fatal: false))
            return .skipped
        case .abandoned: return .abandoned
        case .delivered, .cancelled: return .cancelled
        }
    }

    /// Seconds of media pushed ahead of the position presented now (live, before the first
    /// picture: the position wanted); nil before the first picture of an on-demand stream.
    private func bufferAhead(from start: Double) -> Double? {
        guard let presented = position() ?? (isLive ? wantedPosition() : nil) else { return nil }
        return max(0, (pushedEnd.withLock { $0 } ?? start) - presented)
    }
}
