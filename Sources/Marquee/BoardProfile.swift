public import Foundation

/// A device's defaults, read from a board profile (`boards/<name>.json`, documented field by
/// field in `boards/README.md`): the DRM card, connector, plane, mode and rotation, the ALSA
/// PCM and its buffering, the decoders to try first, the largest stream the board takes and the
/// memory budget. Fields absent from the file take the defaults below; unknown fields and
/// out-of-range values are refused, so a typo never silently becomes a default.
public struct BoardProfile: Sendable, Hashable, Codable {
    /// Display output settings (`video` in the file).
    package struct Video: Sendable, Hashable, Codable {
        /// `drm` or `headless`.
        package var output: String = "drm"
        /// DRM device path (`/dev/dri/card1`); `nil`: the first card with a connected connector.
        package var card: String?
        /// Connector name as the kernel spells it (`HDMI-A-1`); `nil`: the first connected.
        package var connector: String?
        /// Scan-out plane. Checked, not yet read by the output: it draws converted pictures on
        /// the primary plane and sends 4:2:0 and hardware pictures to the first overlay plane
        /// that takes YCbCr, when there is one (`boards/README.md`).
        package var plane: Plane = .primary
        /// `preferred`, `highest`, `WxH` or `WxH@R`.
        package var mode: String = "preferred"
        /// Clockwise picture rotation in degrees: 0, 90, 180 or 270.
        package var rotation: Int = 0
        /// Rotations the plane does in hardware (always holds 0).
        package var hardwareRotations: [Int] = [0]
        /// DRM fourcc of the scan-out buffers (`XRGB8888`). Checked, not yet read by the output:
        /// the primary plane scans XRGB8888, the video plane the layout of the decoder's pictures.
        package var format: String = "XRGB8888"
        /// Decoded pictures queued ahead of presentation, 2…240 (C: `video_queue_frames`); 0
        /// (auto): as many of up to 6 as fit in 4.5 MiB, at least 3 (``PlayerOptions/videoQueueFrames``).
        package var queueFrames: Int = 0

        /// The defaults: DRM on the first connected connector of the first card, primary plane,
        /// preferred mode, no rotation, XRGB8888, the queue sized by the pictures' bytes.
        package init() {}

        /// The C core's video output spec: `headless`, or `drm[:<card>[,<connector>[,<WxH>]]]`.
        package var outputSpec: String {
            guard output == "drm" else { return output }
            var parts = [card ?? "", connector ?? ""]
            if let size = mode.split(separator: "@").first, size.contains("x") { parts.append(String(size)) }
            while parts.last == "" { parts.removeLast() }
            return parts.isEmpty ? "drm" : "drm:" + parts.joined(separator: ",")
        }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case output, card, connector, plane, mode, rotation, format
            case hardwareRotations = "hardware_rotations"
            case queueFrames = "queue_frames"
        }
    }

    /// A scan-out plane: the first primary, the first overlay, or an index among the CRTC's.
    package enum Plane: Sendable, Hashable, Codable {
        /// The CRTC's first primary plane (`"primary"` in the file).
        case primary
        /// The CRTC's first overlay plane (`"overlay"` in the file).
        case overlay
        /// The plane at this index among the CRTC's planes, 0…63 (a number in the file).
        case index(Int)

        /// Decodes `"primary"`, `"overlay"` or a plane index.
        package init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let i = try? c.decode(Int.self) {
                self = .index(i)
                return
            }
            switch try c.decode(String.self) {
            case "primary": self = .primary
            case "overlay": self = .overlay
            case let other:
                throw DecodingError.dataCorruptedError(
                    in: c, debugDescription: "\"\(other)\" is not primary, overlay or an index")
            }
        }

        /// Encodes as the file spells it: `"primary"`, `"overlay"` or the index.
        package func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self {
            case .primary: try c.encode("primary")
            case .overlay: try c.encode("overlay")
            case .index(let i): try c.encode(i)
            }
        }
    }

    /// ALSA output settings (`audio` in the file).
    package struct Audio: Sendable, Hashable, Codable {
        /// ALSA PCM name (`default`, `sysdefault:CARD=vc4hdmi0`, `hw:0,0`, `null`).
        package var pcm: String = "default"
        /// Output rate in Hz: 44100, 48000 or 96000.
        package var sampleRate: Int = 48000
        /// Output channels, 1...8.
        package var channels: Int = 2
        /// Audio kept queued in the device, ms (C: `audio_buffer_ms`).
        package var bufferTimeMs: Int = 60
        /// ALSA period, ms; at most half the buffer.
        package var periodTimeMs: Int = 10

        /// The defaults: PCM `default`, 48000 Hz, 2 channels, 60 ms buffer, 10 ms period.
        package init() {}

        /// The C core's audio output spec: `alsa:<pcm>`.
        package var outputSpec: String { "alsa:\(pcm)" }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case pcm, channels
            case sampleRate = "sample_rate"
            case bufferTimeMs = "buffer_time_ms"
            case periodTimeMs = "period_time_ms"
        }
    }

    /// Decoding settings (`decode` in the file).
    package struct Decode: Sendable, Hashable, Codable {
        /// libavcodec decoder names tried first, in order (C: `mq_player_config.decoders`).
        package var decoders: [String] = []
        /// Software decoder threads per track; 0: auto (one up to 1080p30 while it keeps well
        /// ahead of real time, frame threads above; ``PlayerOptions/decodeThreads``).
        package var threads: Int = 0
        /// The widest representation ABR may pick, pixels. Default 1920.
        package var maxWidth: Int = 1920
        /// The tallest representation ABR may pick, pixels (``ABROptions/maxHeight``). Default 1080.
        package var maxHeight: Int = 1080
        /// The highest frame rate ABR may pick, frames per second (``ABROptions/maxFrameRate``).
        /// Default 60.
        package var maxFps: Int = 60

        /// The defaults: software decoding, automatic threads, up to 1920×1080 at 60 fps.
        package init() {}

        /// `decoders` as the C core takes them (comma-separated), `nil` when empty.
        package var decoderList: String? { decoders.isEmpty ? nil : decoders.joined(separator: ",") }

        enum CodingKeys: String, CodingKey, CaseIterable {
            case decoders, threads
            case maxWidth = "max_width"
            case maxHeight = "max_height"
            case maxFps = "max_fps"
        }
    }

    /// Schema version of the file (1).
    package var schema: Int
    /// The profile's name: its file name without `.json`.
    public var name: String
    /// One line saying which device the profile is for.
    public var description: String
    /// `x86_64`, `aarch64` or `armhf`.
    public var arch: String
    /// Display output settings.
    package var video: Video
    /// ALSA output settings.
    package var audio: Audio
    /// Decoding settings.
    package var decode: Decode
    /// RSS the player may use, MiB.
    package var memoryBudgetMiB: Int

    /// A schema-1 profile with every section at its defaults and a 64 MiB memory budget.
    package init(name: String, description: String, arch: String) {
        self.schema = 1
        self.name = name
        self.description = description
        self.arch = arch
        self.video = Video()
        self.audio = Audio()
        self.decode = Decode()
        self.memoryBudgetMiB = 64
    }

    enum CodingKeys: String, CodingKey, CaseIterable {
        case schema, name, description, arch, video, audio, decode
        case memoryBudgetMiB = "memory_budget_mib"
    }
}

// MARK: - Errors

/// Why a board profile could not be used: what the loaders throw inside, and what
/// ``BoardProfile/load(from:)`` turns into a ``PlayerError``.
package struct BoardProfileError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure: one of the constants below, compared with `==`.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable { case notFound, unreadable, invalid }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// No profile of that name in the search paths (or the name is not a profile name).
        package static let notFound = Code(.notFound)
        /// The file could not be read or is not JSON.
        package static let unreadable = Code(.unreadable)
        /// A field is unknown, missing, of the wrong type or out of range.
        package static let invalid = Code(.invalid)

        /// The code's name, as spelled above (`notFound`, `invalid`).
        package var description: String { base.rawValue }
    }

    /// What kind of failure.
    package var code: Code
    /// The profile's name (or path).
    package var board: String
    /// The offending field (`audio.buffer_time_ms`), when one is.
    package var field: String?
    /// What was wrong, in English.
    package var message: String

    /// An error of kind `code` about the profile `board` and, when one, its `field`.
    package init(_ code: Code, board: String, field: String? = nil, _ message: String) {
        self.code = code
        self.board = board
        self.field = field
        self.message = message
    }

    /// `board <name>: <code> <field>: <message>`.
    package var description: String {
        "board \(board): \(code)\(field.map { " \($0)" } ?? ""): \(message)"
    }
}

// MARK: - Decoding with defaults and strict keys

private struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Throws `.invalid` for a key the type does not know.
private func refuseUnknownKeys<K: CodingKey & CaseIterable>(_ decoder: any Decoder, _: K.Type, section: String?) throws
where K: RawRepresentable, K.RawValue == String {
    let known = Set(K.allCases.map(\.rawValue))
    for key in try decoder.container(keyedBy: AnyKey.self).allKeys where !known.contains(key.stringValue) {
        let field = section.map { "\($0).\(key.stringValue)" } ?? key.stringValue
        throw BoardProfileError(.invalid, board: "", field: field, "unknown field")
    }
}

extension BoardProfile.Video {
    /// Decodes the `video` object: absent fields take the defaults; an unknown field throws
    /// `BoardProfileError` (`.invalid`).
    package init(from decoder: any Decoder) throws {
        try refuseUnknownKeys(decoder, CodingKeys.self, section: "video")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        output = try c.decodeIfPresent(String.self, forKey: .output) ?? output
        card = try c.decodeIfPresent(String.self, forKey: .card)
        connector = try c.decodeIfPresent(String.self, forKey: .connector)
        plane = try c.decodeIfPresent(BoardProfile.Plane.self, forKey: .plane) ?? plane
        mode = try c.decodeIfPresent(String.self, forKey: .mode) ?? mode
        rotation = try c.decodeIfPresent(Int.self, forKey: .rotation) ?? rotation
        hardwareRotations = try c.decodeIfPresent([Int].self, forKey: .hardwareRotations) ?? hardwareRotations
        format = try c.decodeIfPresent(String.self, forKey: .format) ?? format
        queueFrames = try c.decodeIfPresent(Int.self, forKey: .queueFrames) ?? queueFrames
    }
}

extension BoardProfile.Audio {
    /// Decodes the `audio` object: absent fields take the defaults; an unknown field throws
    /// `BoardProfileError` (`.invalid`).
    package init(from decoder: any Decoder) throws {
        try refuseUnknownKeys(decoder, CodingKeys.self, section: "audio")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        pcm = try c.decodeIfPresent(String.self, forKey: .pcm) ?? pcm
        sampleRate = try c.decodeIfPresent(Int.self, forKey: .sampleRate) ?? sampleRate
        channels = try c.decodeIfPresent(Int.self, forKey: .channels) ?? channels
        bufferTimeMs = try c.decodeIfPresent(Int.self, forKey: .bufferTimeMs) ?? bufferTimeMs
        periodTimeMs = try c.decodeIfPresent(Int.self, forKey: .periodTimeMs) ?? periodTimeMs
    }
}

extension BoardProfile.Decode {
    /// Decodes the `decode` object: absent fields take the defaults; an unknown field throws
    /// `BoardProfileError` (`.invalid`).
    package init(from decoder: any Decoder) throws {
        try refuseUnknownKeys(decoder, CodingKeys.self, section: "decode")
        let c = try decoder.container(keyedBy: CodingKeys.self)
        decoders = try c.decodeIfPresent([String].self, forKey: .decoders) ?? decoders
        threads = try c.decodeIfPresent(Int.self, forKey: .threads) ?? threads
        maxWidth = try c.decodeIfPresent(Int.self, forKey: .maxWidth) ?? maxWidth
        maxHeight = try c.decodeIfPresent(Int.self, forKey: .maxHeight) ?? maxHeight
        maxFps = try c.decodeIfPresent(Int.self, forKey: .maxFps) ?? maxFps
    }
}

extension BoardProfile {
    /// Decodes a profile file: `schema`, `name`, `description` and `arch` are required, the
    /// sections and `memory_budget_mib` take their defaults when absent; an unknown field
    /// throws `BoardProfileError` (`.invalid`). Values
    /// are range-checked by `validate()`, not here.
    public init(from decoder: any Decoder) throws {
        try refuseUnknownKeys(decoder, CodingKeys.self, section: nil)
        let c = try decoder.container(keyedBy: CodingKeys.self)
        schema = try c.decode(Int.self, forKey: .schema)
        name = try c.decode(String.self, forKey: .name)
        description = try c.decode(String.self, forKey: .description)
        arch = try c.decode(String.self, forKey: .arch)
        video = try c.decodeIfPresent(Video.self, forKey: .video) ?? Video()
        audio = try c.decodeIfPresent(Audio.self, forKey: .audio) ?? Audio()
        decode = try c.decodeIfPresent(Decode.self, forKey: .decode) ?? Decode()
        memoryBudgetMiB = try c.decodeIfPresent(Int.self, forKey: .memoryBudgetMiB) ?? 64
    }
}

// MARK: - Validation

extension BoardProfile {
    /// Checks every value's range and the rules between fields (the same as
    /// `boards/check_boards.py`); throws `BoardProfileError` with code `.invalid`.
    package func validate() throws(BoardProfileError) {
        func fail(_ field: String, _ why: String) -> BoardProfileError {
            BoardProfileError(.invalid, board: name, field: field, why)
        }
        func range(_ field: String, _ v: Int, _ r: ClosedRange<Int>) throws(BoardProfileError) {
            guard r.contains(v) else { throw fail(field, "\(v) is not in \(r.lowerBound)...\(r.upperBound)") }
        }
        guard schema == 1 else { throw fail("schema", "\(schema) is not 1") }
        guard name.wholeMatch(of: /[a-z0-9][a-z0-9_-]*/) != nil else {
            throw fail("name", "\"\(name)\" is not [a-z0-9][a-z0-9_-]*")
        }
        guard !description.isEmpty else { throw fail("description", "empty") }
        guard ["x86_64", "aarch64", "armhf"].contains(arch) else {
            throw fail("arch", "\"\(arch)\" is not x86_64, aarch64 or armhf")
        }

        guard ["drm", "headless"].contains(video.output) else {
            throw fail("video.output", "\"\(video.output)\" is not drm or headless")
        }
        if let card = video.card, !card.hasPrefix("/dev/dri/") {
            throw fail("video.card", "\"\(card)\" is not a /dev/dri/ path")
        }
        if video.connector == "" { throw fail("video.connector", "empty") }
        if video.output == "headless", video.card != nil || video.connector != nil {
            throw fail(
                video.card != nil ? "video.card" : "video.connector", "meaningless with video.output \"headless\"")
        }
        if case .index(let i) = video.plane { try range("video.plane", i, 0...63) }
        guard
            video.mode.wholeMatch(of: /preferred|highest|[1-9][0-9]{2,4}x[1-9][0-9]{2,4}(@[1-9][0-9]{0,2}(\.[0-9]+)?)?/)
                != nil
        else {
            throw fail("video.mode", "\"\(video.mode)\" is not preferred, highest, WxH or WxH@R")
        }
        let rotations = [0, 90, 180, 270]
        guard rotations.contains(video.rotation) else {
            throw fail("video.rotation", "\(video.rotation) is not 0, 90, 180 or 270")
        }
        guard video.hardwareRotations.contains(0), video.hardwareRotations.allSatisfy(rotations.contains),
            Set(video.hardwareRotations).count == video.hardwareRotations.count
        else {
            throw fail("video.hardware_rotations", "\(video.hardwareRotations) must be distinct rotations holding 0")
        }
        let formats = ["XRGB8888", "XBGR8888", "ARGB8888", "XRGB2101010", "RGB565", "NV12", "YUYV"]
        guard formats.contains(video.format) else {
            throw fail("video.format", "\"\(video.format)\" is not one of \(formats.joined(separator: ", "))")
        }
        if video.queueFrames != 0 { try range("video.queue_frames", video.queueFrames, 2...240) }

        guard !audio.pcm.isEmpty else { throw fail("audio.pcm", "empty") }
        guard [44100, 48000, 96000].contains(audio.sampleRate) else {
            throw fail("audio.sample_rate", "\(audio.sampleRate) is not 44100, 48000 or 96000")
        }
        try range("audio.channels", audio.channels, 1...8)
        try range("audio.buffer_time_ms", audio.bufferTimeMs, 20...2000)
        try range("audio.period_time_ms", audio.periodTimeMs, 1...500)
        guard audio.periodTimeMs * 2 <= audio.bufferTimeMs else {
            throw fail("audio.period_time_ms", "must be at most half of audio.buffer_time_ms")
        }

        for d in decode.decoders where d.wholeMatch(of: /[a-z0-9_]+/) == nil {
            throw fail("decode.decoders", "\"\(d)\" is not a libavcodec decoder name")
        }
        guard Set(decode.decoders).count == decode.decoders.count else {
            throw fail("decode.decoders", "a name is listed twice")
        }
        try range("decode.threads", decode.threads, 0...64)
        try range("decode.max_width", decode.maxWidth, 16...16384)
        try range("decode.max_height", decode.maxHeight, 16...16384)
        try range("decode.max_fps", decode.maxFps, 1...240)
        try range("memory_budget_mib", memoryBudgetMiB, 16...4096)
    }
}

// MARK: - Loading

extension PlayerError {
    /// An ``Code-swift.struct/invalidOptions`` error for a board profile that cannot be used.
    init(board error: BoardProfileError) { self.init(.invalidOptions, error.description) }
}

extension BoardProfile {
    /// Where `load(named:)` and `available()` look, in order: `$MARQUEE_BOARDS_DIR`,
    /// `/etc/marquee/boards`, `/usr/local/share/marquee/boards`, `/usr/share/marquee/boards`.
    public static var defaultSearchPaths: [URL] {
        var paths: [URL] = []
        if let dir = ProcessInfo.processInfo.environment["MARQUEE_BOARDS_DIR"], !dir.isEmpty {
            paths.append(URL(fileURLWithPath: dir, isDirectory: true))
        }
        for dir in ["/etc/marquee/boards", "/usr/local/share/marquee/boards", "/usr/share/marquee/boards"] {
            paths.append(URL(fileURLWithPath: dir, isDirectory: true))
        }
        return paths
    }

    /// Reads, decodes and validates one profile file; its `name` must be the file's name. A
    /// profile that cannot be used is ``PlayerError/Code-swift.struct/invalidOptions`` naming the
    /// board and the field (`board pi: invalid audio.buffer_time_ms: …`).
    public static func load(from url: URL) throws(PlayerError) -> BoardProfile {
        do { return try read(from: url) } catch { throw PlayerError(board: error) }
    }

    /// The first profile called `name` in `searchPaths` (as ``load(from:)``).
    public static func load(named name: String, searchPaths: [URL] = defaultSearchPaths) throws(PlayerError)
        -> BoardProfile
    {
        do { return try read(named: name, searchPaths: searchPaths) } catch { throw PlayerError(board: error) }
    }

    /// ``load(from:)``, failing with the board's own error (its code and field).
    package static func read(from url: URL) throws(BoardProfileError) -> BoardProfile {
        let fileName = url.deletingPathExtension().lastPathComponent
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw BoardProfileError(
                .unreadable, board: fileName, "cannot read \(url.path): \(error.localizedDescription)")
        }
        let profile: BoardProfile
        do {
            profile = try JSONDecoder().decode(BoardProfile.self, from: data)
        } catch var error as BoardProfileError {
            error.board = fileName
            throw error
        } catch let DecodingError.keyNotFound(key, context) {
            throw BoardProfileError(.invalid, board: fileName, field: path(context, key), "required")
        } catch let DecodingError.typeMismatch(type, context) {
            throw BoardProfileError(.invalid, board: fileName, field: path(context), "not a \(type)")
        } catch let DecodingError.valueNotFound(type, context) {
            throw BoardProfileError(.invalid, board: fileName, field: path(context), "null where a \(type) is needed")
        } catch let DecodingError.dataCorrupted(context) {
            let field = context.codingPath.isEmpty ? nil : path(context)
            throw BoardProfileError(
                field == nil ? .unreadable : .invalid, board: fileName, field: field, context.debugDescription)
        } catch {
            throw BoardProfileError(.unreadable, board: fileName, "\(error)")
        }
        try profile.validate()
        guard profile.name == fileName else {
            throw BoardProfileError(
                .invalid, board: fileName, field: "name", "\"\(profile.name)\" differs from the file name")
        }
        return profile
    }

    /// ``load(named:searchPaths:)``, failing with the board's own error.
    package static func read(named name: String, searchPaths: [URL]) throws(BoardProfileError) -> BoardProfile {
        guard name.wholeMatch(of: /[a-z0-9][a-z0-9_-]*/) != nil else {
            throw BoardProfileError(.notFound, board: name, "not a board profile name")
        }
        for dir in searchPaths {
            let url = dir.appendingPathComponent("\(name).json")
            if FileManager.default.fileExists(atPath: url.path) { return try read(from: url) }
        }
        throw BoardProfileError(
            .notFound, board: name, "no \(name).json in \(searchPaths.map(\.path).joined(separator: ", "))")
    }

    /// The names of the profiles in `searchPaths` (a name found twice counts once), sorted.
    public static func available(searchPaths: [URL] = defaultSearchPaths) -> [String] {
        var names = Set<String>()
        for dir in searchPaths {
            let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
            for file in files where file.hasSuffix(".json") { names.insert(String(file.dropLast(5))) }
        }
        return names.sorted()
    }

    private static func path(_ context: DecodingError.Context, _ key: (any CodingKey)? = nil) -> String {
        (context.codingPath + (key.map { [$0] } ?? [])).map(\.stringValue).joined(separator: ".")
    }
}
