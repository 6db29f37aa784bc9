import Foundation
import MarqueeStreaming

/// Loads a VOD DASH asset: parses its MPD with ``MPDParser``, picks the main video and audio
/// AdaptationSets and indexes every segment of their representations from the segment boxes
/// (tfdt, trun sample durations).
struct AssetLoader {
    var name: String
    var directory: String

    func load() throws(OriginError) -> LoopAsset {
        let manifestName = try chooseManifest()
        let manifestPath = (directory as NSString).appendingPathComponent(manifestName)
        let mpd: MPD
        do {
            mpd = try MPDParser().parse(try Self.read(manifestPath))
        } catch let error as ManifestError {
            throw OriginError(.badManifest, "asset \"\(name)\": \(manifestPath): \(error.message)")
        } catch {
            throw OriginError(.assetNotFound, "asset \"\(name)\": \(error)")
        }
        guard let period = mpd.periods.first else { throw OriginError(.badAsset, "asset \"\(name)\": no Period") }
        let sets = [MediaKind.video, .audio].compactMap { kind in mainSet(period, kind).map { (kind, $0) } }
        guard !sets.isEmpty else { throw OriginError(.badAsset, "asset \"\(name)\": no audio or video AdaptationSet") }

        var loop = mpd.mediaPresentationDuration ?? period.duration
        var out: [LoopAdaptationSet] = []
        for (kind, set) in sets {
            var reps: [LoopRepresentation] = []
            for rep in set.representations {
                let indexed = try index(rep, loopDuration: loop)
                if loop == nil {
                    // No duration in the MPD: the first (video) representation's summed durations.
                    let total = indexed.segments.reduce(0) { $0 + $1.duration }
                    loop = Double(total) / Double(indexed.track.timescale)
                }
                reps.append(try finish(indexed, loopDuration: loop ?? 0))
            }
            out.append(LoopAdaptationSet(adaptationSet: set, kind: kind, representations: reps))
        }
        guard let loop, loop > 0 else { throw OriginError(.badAsset, "asset \"\(name)\": the loop duration is 0") }
        var asset = LoopAsset(
            name: name, directory: directory, manifestName: manifestName, mpd: mpd, loopDuration: loop,
            adaptationSets: out)
        asset.transportStream = try transportStream(video: out.first { $0.kind == .video }?.representations.first)
        return asset
    }

    /// `ts/seg-1.ts` … `ts/seg-<n>.ts`, one per segment of `video`, when the asset has them.
    private func transportStream(video: LoopRepresentation?) throws(OriginError) -> LoopTransportStream? {
        let dir = (directory as NSString).appendingPathComponent("ts")
        guard let video, FileManager.default.fileExists(atPath: (dir as NSString).appendingPathComponent("seg-1.ts"))
        else { return nil }
        let files = (1...video.segments.count).map { (dir as NSString).appendingPathComponent("seg-\($0).ts") }
        guard files.allSatisfy({ FileManager.default.fileExists(atPath: $0) }) else {
            throw OriginError(
                .badAsset,
                "asset \"\(name)\": ts/ needs seg-1.ts … seg-\(video.segments.count).ts (one per video segment)")
        }
        guard let first = TransportStreamTimestamps.firstPTS(try Self.read(files[0])) else {
            throw OriginError(.badAsset, "asset \"\(name)\": \(files[0]) has no PES timestamp")
        }
        return LoopTransportStream(files: files, firstPTS: first, video: video)
    }

    // MARK: manifest

    private func chooseManifest() throws(OriginError) -> String {
        let files: [String]
        do {
            files = try FileManager.default.contentsOfDirectory(atPath: directory)
        } catch {
            throw OriginError(.assetNotFound, "asset \"\(name)\": cannot list \(directory)")
        }
        let mpds = files.filter { $0.lowercased().hasSuffix(".mpd") }.sorted()
        if let main = mpds.first(where: { $0.lowercased() == "manifest.mpd" }) { return main }
        guard let first = mpds.first else {
            throw OriginError(.assetNotFound, "asset \"\(name)\": no .mpd file in \(directory)")
        }
        return first
    }

    /// The set of `kind` with `Role` "main", else the first with representations of that kind.
    private func mainSet(_ period: Period, _ kind: MediaKind) -> AdaptationSet? {
        let candidates = period.adaptationSets.filter { set in
            !set.representations.isEmpty && set.representations.allSatisfy { $0.kind == kind }
        }
        return candidates.first { $0.roles.contains { $0.value == "main" } } ?? candidates.first
    }

    // MARK: representations

    private func index(_ rep: Representation, loopDuration: Double?) throws(OriginError) -> LoopRepresentation {
        let location = "asset \"\(name)\", representation \"\(rep.id)\""
        guard let template = rep.segmentTemplate, let media = template.media,
            let initialization = template.initialization
        else {
            throw OriginError(
                .badAsset, "\(location): only SegmentTemplate with @media and @initialization is supported")
        }
        let initFile = path(
            SegmentTemplateExpander.expand(
                initialization, representationID: rep.id, bandwidth: rep.bandwidth, number: nil, time: nil))
        let initReader = MP4Reader(bytes: try Self.bytes(initFile), name: initFile)
        let track = try InitSegmentInfo.parse(initReader)

        var files: [String] = []
        let vodEnd = loopDuration.map { $0 * Double(template.timescale) }
        if let timeline = template.timeline {
            var t: UInt64 = 0
            var number = template.startNumber
            outer: for entry in timeline {
                if let start = entry.t { t = start }
                var repeats = entry.r
                while true {
                    if let vodEnd, Double(t) >= vodEnd { break outer }
                    files.append(
                        path(
                            SegmentTemplateExpander.expand(
                                media, representationID: rep.id, bandwidth: rep.bandwidth, number: number, time: t)))
                    t += entry.d
                    number += 1
                    if repeats == 0 { break }
                    if repeats > 0 { repeats -= 1 } else if vodEnd == nil { break }
                }
            }
        } else if let duration = template.duration {
            let count: UInt64
            if let end = template.endNumber, end >= template.startNumber {
                count = end - template.startNumber + 1
            } else if let vodEnd {
                count = UInt64((vodEnd / Double(duration)).rounded(.up))
            } else {
                count = 0
            }
            var number = template.startNumber
            while count == 0 ? number - template.startNumber < 100_000 : number - template.startNumber < count {
                let file = path(
                    SegmentTemplateExpander.expand(
                        media, representationID: rep.id, bandwidth: rep.bandwidth, number: number, time: nil))
                if count == 0 && !FileManager.default.fileExists(atPath: file) { break }
                files.append(file)
                number += 1
            }
        } else {
            throw OriginError(.badAsset, "\(location): the SegmentTemplate has neither @duration nor a SegmentTimeline")
        }
        guard !files.isEmpty else { throw OriginError(.badAsset, "\(location): no segments") }

        var segments: [LoopSegment] = []
        for file in files {
            let timing = try MediaSegmentTiming.parse(MP4Reader(bytes: try Self.bytes(file), name: file), track: track)
            segments.append(
                LoopSegment(
                    file: file, baseMediaDecodeTime: timing.baseMediaDecodeTime, offset: 0, duration: timing.duration))
        }
        segments.sort { $0.baseMediaDecodeTime < $1.baseMediaDecodeTime }
        let first = segments[0].baseMediaDecodeTime
        for i in segments.indices { segments[i].offset = segments[i].baseMediaDecodeTime - first }
        return LoopRepresentation(
            representation: rep, initFile: initFile, track: track, segments: segments, loopTicks: 0, nominalDuration: 0)
    }

    /// Keeps the segments that start inside the loop and sets the loop and nominal durations.
    private func finish(_ rep: LoopRepresentation, loopDuration: Double) throws(OriginError) -> LoopRepresentation {
        var rep = rep
        rep.loopTicks = UInt64((loopDuration * Double(rep.timescale)).rounded())
        rep.segments = rep.segments.filter { $0.offset < rep.loopTicks }
        guard rep.loopTicks > 0, !rep.segments.isEmpty else {
            throw OriginError(
                .badAsset,
                "asset \"\(name)\", representation \"\(rep.id)\": no segment starts inside the \(loopDuration) s loop")
        }
        let covered = rep.segments.last.map { $0.offset + $0.duration } ?? 0
        guard covered >= rep.loopTicks else {
            throw OriginError(
                .badAsset,
                """
                asset "\(name)", representation "\(rep.id)": segments end at \(covered) of \(rep.loopTicks) ticks, a \
                gap at the loop point
                """
            )
        }
        rep.nominalDuration = max(1, (rep.loopTicks + UInt64(rep.segments.count) / 2) / UInt64(rep.segments.count))
        return rep
    }

    // MARK: files

    private func path(_ relative: String) -> String {
        let clean = relative.removingPercentEncoding ?? relative
        return (directory as NSString).appendingPathComponent(clean)
    }

    static func read(_ path: String) throws(OriginError) -> Data {
        do {
            return try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw OriginError(.assetNotFound, "cannot read \(path)")
        }
    }

    static func bytes(_ path: String) throws(OriginError) -> [UInt8] {
        [UInt8](try read(path))
    }
}
