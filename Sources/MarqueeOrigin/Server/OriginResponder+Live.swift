import Foundation
import HTTPTypes
import MarqueeStreaming

/// `/live/...`: the live stream's manifests, HLS playlists, init and media segments (DASH and
/// MPEG-TS) as the URL's options and the clock make them.
extension OriginResponder {
    func live(_ components: [String], path: String, query: String?, authority: String) -> Reply {
        var options = LiveOptions()
        var index = 0
        while index < components.count, assets[components[index]] == nil {
            let component = components[index]
            guard LiveOptions.looksLikeOption(Substring(component)) else {
                return Reply(
                    .notFound, "no asset \"\(component)\" (assets: \(assets.keys.sorted().joined(separator: ", ")))")
            }
            do {
                try options.apply(Substring(component))
            } catch {
                return Reply(.badRequest, error.message)
            }
            index += 1
        }
        let clock = OriginClock(offset: options.timeOffset)
        options.availabilityStartTime = options.availabilityStart(at: clock.now())  // restart_
        if let hang = options.hang, hang.contains(clock.now()) {
            var reply = Reply(
                .serviceUnavailable, "hung until \(LiveOptions.format(hang.upperBound)) (hang_ option)", clock: clock)
            reply.hangUntil = hang.upperBound
            return reply
        }
        if let outage = options.outage, outage.contains(clock.now()) {
            return Reply(
                .serviceUnavailable, "outage until \(LiveOptions.format(outage.upperBound)) (outage_ option)",
                clock: clock)
        }
        guard index < components.count, let asset = assets[components[index]] else {
            return Reply(
                .notFound, "no asset in the URL (assets: \(assets.keys.sorted().joined(separator: ", ")))", clock: clock
            )
        }
        let rest = Array(components[(index + 1)...])
        let target = FaultTarget(rest, path: path, query: query, now: clock.now())
        if options.moved, target?.resource == .manifest, visits.visit("moved " + path) > 0 {
            return Reply(.gone, "this manifest has moved (location_1): see its Location", clock: clock)
        }
        if let target, let redirect = redirect(options.faults, target, clock: clock) { return redirect }
        let reply = resource(asset, rest, options: options, clock: clock, authority: authority)
        guard let target, reply.status == .ok else { return reply }
        return injectingFaults(options.faults, into: reply, target, now: clock.now())
    }

    /// The manifest, playlist or segment that `rest` (the path after the asset) names.
    private func resource(
        _ asset: LoopAsset, _ rest: [String], options: LiveOptions, clock: OriginClock, authority: String
    ) -> Reply {
        if rest.count == 1, rest[0].hasSuffix(".m3u8") {  // the same live stream as HLS
            let writer = LiveHLSWriter(asset: asset, options: options)
            let text: String
            if rest[0] == LiveHLSWriter.masterName {
                text = writer.master()
            } else if rest[0] == LiveHLSWriter.transportStreamMasterName
                || rest[0] == LiveHLSWriter.transportStreamMediaName
            {
                guard let ts = asset.transportStream else {
                    return Reply(
                        .notFound, "asset \"\(asset.name)\" has no MPEG-TS segments (ts/seg-<n>.ts)", clock: clock)
                }
                text =
                    rest[0] == LiveHLSWriter.transportStreamMediaName
                    ? writer.transportStreamMedia(ts, now: clock.now()) : writer.transportStreamMaster(ts)
            } else if let rep = asset.representation(id: String(rest[0].dropLast(5))) {
                text = writer.media(rep, now: clock.now())
            } else {
                return Reply(
                    .notFound,
                    "no HLS playlist \"\(rest[0])\" in asset \"\(asset.name)\" (master.m3u8, <representation>.m3u8)",
                    clock: clock)
            }
            return Reply(bytes: Array(text.utf8), contentType: "application/vnd.apple.mpegurl", clock: clock)
        }
        if rest.count == 1 {
            guard rest[0] == asset.manifestName else {
                return Reply(
                    .notFound, "asset \"\(asset.name)\" has the manifest \"\(asset.manifestName)\", not \"\(rest[0])\"",
                    clock: clock)
            }
            let text = LiveManifestWriter(asset: asset, options: options, sntpPort: sntpPort.port, authority: authority)
                .write(now: clock.now())
            return Reply(bytes: Array(text.utf8), contentType: "application/dash+xml", clock: clock)
        }
        if rest.count == 2, rest[0] == "ts", let ts = asset.transportStream {
            return transportStreamSegment(ts, name: rest[1], options: options, clock: clock)
        }
        guard rest.count == 2, let rep = asset.representation(id: rest[0]) else {
            return Reply(
                .notFound, "no such resource in asset \"\(asset.name)\": \(rest.joined(separator: "/"))", clock: clock)
        }
        return segment(asset, rep, name: rest[1], options: options, clock: clock)
    }

    /// `ts/<number>.ts`: the loop's TS segment with every timestamp moved onto the live
    /// timeline: its PTS (90 kHz, modulo 2³³) is the media time the DASH video segment of that
    /// number has, plus the loop's own first PTS (so the stream keeps a realistic, nonzero start).
    private func transportStreamSegment(
        _ ts: LoopTransportStream, name: String, options: LiveOptions, clock: OriginClock
    ) -> Reply {
        let mime = "video/mp2t"
        guard name.hasSuffix(".ts"), let number = UInt64(name.dropLast(3)) else {
            return Reply(.notFound, "no segment \"\(name)\" (ts/<number>.ts)", clock: clock)
        }
        let rep = ts.video
        let timeline = LiveTimeline(representation: rep, options: options)
        guard let live = timeline.segment(number: number) else {
            return Reply(.notFound, "no segment \"\(name)\" (startNumber \(options.startNumber))", clock: clock)
        }
        if let refusal = Self.refusal(
            timeline.availability(numberedIndex: live.index, now: clock.now()), "segment ts/\(name)", options, clock)
        {
            return refusal
        }
        do {
            let bytes = try AssetLoader.bytes(ts.files[live.vodIndex])
            // Loop start on the live timeline (ticks of the video track) → 90 kHz.
            let loopStart = Int64(clamping: live.mediaTime) - Int64(clamping: rep.segments[live.vodIndex].offset)
            let rate = Int64(TransportStreamTimestamps.clockRate)
            let scale = Int64(rep.timescale)
            let loopStart90k = loopStart / scale * rate + loopStart % scale * rate / scale  // no overflow
            var reply = Reply(
                bytes: TransportStreamTimestamps.shifted(bytes, by: loopStart90k), contentType: mime, clock: clock)
            reply.media = true
            if let kbps = options.bandwidth(at: clock.now()) { reply.limit(kbps) }
            return reply
        } catch {
            return Reply(.internalServerError, error.description, clock: clock)
        }
    }

    /// The answer for a segment not available now (404 before, 410 after the window), nil when it is.
    private static func refusal(
        _ availability: Availability, _ what: String, _ options: LiveOptions, _ clock: OriginClock
    ) -> Reply? {
        switch availability {
        case .tooEarly(let wait):
            Reply(.notFound, "\(what) is available in \(String(format: "%.3f", wait)) s", clock: clock)
        case .expired:
            Reply(
                .gone, "\(what) has left the \(LiveOptions.format(options.timeShiftBufferDepth)) s time-shift buffer",
                clock: clock)
        case .available:
            nil
        }
    }

    private func segment(
        _ asset: LoopAsset, _ rep: LoopRepresentation, name: String, options: LiveOptions, clock: OriginClock
    ) -> Reply {
        let mime = rep.representation.kind == .audio ? "audio/mp4" : "video/mp4"
        if name == "init.mp4" {
            do {
                var reply = Reply(bytes: try AssetLoader.bytes(rep.initFile), contentType: mime, clock: clock)
                reply.media = true
                return reply
            } catch {
                return Reply(.internalServerError, error.description, clock: clock)
            }
        }
        guard name.hasSuffix(".m4s") else { return Reply(.notFound, "no segment \"\(name)\"", clock: clock) }
        let stem = name.dropLast(4)
        let timeline = LiveTimeline(representation: rep, options: options)
        let now = clock.now()
        let live: LiveSegment
        let availability: Availability
        if stem.hasPrefix("t"), let time = UInt64(stem.dropFirst()) {
            guard let found = timeline.segment(time: time) else {
                return Reply(.notFound, "no segment starts at media time \(time) in \"\(rep.id)\"", clock: clock)
            }
            live = found
            availability = timeline.availability(timed: found, now: now)
        } else if let number = UInt64(stem), let found = timeline.segment(number: number) {
            live = found
            availability = timeline.availability(numberedIndex: found.index, now: now)
        } else {
            return Reply(
                .notFound, "no segment \"\(name)\" in \"\(rep.id)\" (startNumber \(options.startNumber))", clock: clock)
        }
        if let refusal = Self.refusal(availability, "segment \(name) of \"\(rep.id)\"", options, clock) {
            return refusal
        }
        let vod = rep.segments[live.vodIndex]
        do {
            let bytes = try AssetLoader.bytes(vod.file)
            let rewriter = DecodeTimeRewriter(trackID: rep.track.trackID, trackTimescale: rep.timescale)
            let delta = Int64(clamping: live.mediaTime) - Int64(clamping: vod.baseMediaDecodeTime)
            var body = try rewriter.rewrite(bytes, delta: delta, name: vod.file)
            if let ad = options.ad {
                body = Self.insertingCues(ad, into: body, segment: live, timescale: rep.timescale)
            }
            var reply = Reply(bytes: body, contentType: mime, clock: clock)
            reply.media = true
            // Still being "produced" (available early through availabilityTimeOffset): each CMAF
            // chunk goes out when its last sample exists, as a low-latency encoder would send it.
            // (Wall-clock times: media time over the media clock's rate, `drift_`.)
            let wall = { (media: UInt64) in
                options.availabilityStartTime + Double(media) / Double(rep.timescale) / options.mediaRate
            }
            if wall(live.mediaTime + live.duration) > now {
                let chunks = try MediaSegmentTiming.chunks(
                    MP4Reader(bytes: reply.body, name: vod.file), track: rep.track)
                reply.schedule = chunks.map { ($0.bytes, wall(live.mediaTime + $0.end)) }
            }
            if let kbps = options.bandwidth(at: now) { reply.limit(kbps) }
            return reply
        } catch {
            return Reply(.internalServerError, error.description, clock: clock)
        }
    }

    /// `body` with an `emsg` SCTE-35 splice_insert for each ad break starting in this segment
    /// or the next one (same length assumed), placed before the first `moof` (after `styp`).
    static func insertingCues(_ ad: LiveOptions.Recurring, into body: [UInt8], segment: LiveSegment, timescale: UInt64)
        -> [UInt8]
    {
        let start = Double(segment.mediaTime) / Double(timescale)
        let length = Double(segment.duration) / Double(timescale)
        let breaks = ad.occurrences(in: start...(start + 2 * length - 1e-9)).filter { $0.time < start + 2 * length }
        guard !breaks.isEmpty else { return body }
        var boxes: [UInt8] = []
        for (k, t) in breaks {
            let id = UInt32(truncatingIfNeeded: k)
            let cue = SpliceInfo.spliceInsertSection(eventID: id, outOfNetwork: true, duration: ad.length)
            boxes += EventMessageBox.version1(
                scheme: EventScheme.scte35Binary, timescale: 1000, time: UInt64((t * 1000).rounded()),
                duration: UInt32((ad.length * 1000).rounded()),
                id: id, message: cue)
        }
        // After a leading styp (if any).
        var at = 0
        if body.count >= 8, body[4...7].elementsEqual("styp".utf8) {
            at = Int(body[0]) << 24 | Int(body[1]) << 16 | Int(body[2]) << 8 | Int(body[3])
        }
        return Array(body[..<at]) + boxes + Array(body[at...])
    }
}
