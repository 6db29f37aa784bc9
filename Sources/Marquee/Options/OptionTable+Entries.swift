import Foundation
import MarqueeStreaming

/// The table's rows. Each says once how its value is parsed and checked; the surfaces
/// (command line, remote config, control socket, board profile) only name it.
extension OptionTable {
    /// Where the stream comes from and how it is played.
    static let streaming: [OptionSpec] = [
        OptionSpec(
            "sources", "Manifest URLs (DASH, HLS), main first, then backups",
            values: "http(s) URLs, 1…32; required", cli: "<url>…", config: "sources",
            sample: "https://origin.example/live/a.mpd",
            apply: { o, v throws(PlayerError) in
                let texts = try OptionSpec.list(v)
                guard (1...32).contains(texts.count) else {
                    throw PlayerError(.invalidOptionsSources, "\(texts.count) URLs: 1 to 32 are taken")
                }
                var urls: [URL] = []
                for text in texts {
                    guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
                        url.host?.isEmpty == false
                    else {
                        throw PlayerError(.invalidOptionsSources, "\(Redact.url(text)) is not an http(s) URL")
                    }
                    urls.append(url)
                }
                o.sources = urls
            },
            read: { .list($0.sources.map(\.absoluteString)) }, redactsURLs: true),
        OptionSpec(
            "targetLatency", "Seconds behind the live edge (server time) to present at",
            values: "seconds, 0…300, 0: no sync; default 3", cli: "--target-latency",
            config: "advanced.sync.targetLatency", sample: "5",
            apply: { o, v throws(PlayerError) in o.targetLatency = try OptionSpec.number(v, 0...300, unit: " s") },
            read: { .number($0.targetLatency) },
            live: { player, v throws(PlayerError) in
                let seconds = try OptionSpec.number(v, 0...300, unit: " s")
                guard seconds > 0 else { throw PlayerError(.invalidOptions, "0 (no sync) is set before playing") }
                try player.setTargetLatency(seconds)
            }),
        OptionSpec(
            "minRecoveryDelay", "A stall this long reloads the stream; each reload doubles it",
            values: "seconds, above 0, ≤ 86400; default 10", cli: "--min-recovery-delay",
            config: "advanced.stall.minRecoveryDelay", sample: "4",
            apply: { o, v throws(PlayerError) in o.minRecoveryDelay = try positive(v) },
            read: { .number($0.minRecoveryDelay) }),
        OptionSpec(
            "maxRecoveryDelay", "The longest stall before a reload",
            values: "seconds, ≥ minRecoveryDelay, ≤ 86400; default 90", cli: "--max-recovery-delay",
            config: "advanced.stall.maxRecoveryDelay", sample: "120",
            apply: { o, v throws(PlayerError) in o.maxRecoveryDelay = try positive(v) },
            read: { .number($0.maxRecoveryDelay) }),
        OptionSpec(
            "mainSourceRetryInterval", "While a backup plays, the main source is tried again this often",
            values: "seconds, 0.5…86400; default 60", cli: "--main-source-retry-interval", sample: "30",
            apply: { o, v throws(PlayerError) in
                o.mainSourceRetryInterval = try OptionSpec.number(v, 0.5...86_400, unit: " s")
            },
            read: { .number($0.mainSourceRetryInterval) }),
        OptionSpec(
            "failFast", "When no source plays at start, fail instead of retrying under the recovery delays",
            values: "boolean; default false", cli: "--fail-fast", sample: "true",
            apply: { o, v throws(PlayerError) in o.failFast = try OptionSpec.flag(v) },
            read: { .flag($0.failFast) }),
        OptionSpec(
            "audioLanguage", "The audio language wanted: that DASH adaptation set or HLS rendition",
            values: "a language tag (fr, en-GB, fra); default the stream's", cli: "--audio-language",
            sample: "fr-CA",
            apply: { o, v throws(PlayerError) in
                let tag = try OptionSpec.text(v, maxLength: 35)
                guard tag.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") }) else {
                    throw PlayerError(.invalidOptions, "not a language tag (letters, digits and -, at most 35)")
                }
                o.audioLanguage = tag
            },
            read: { $0.audioLanguage.map { .text($0) } }),
        OptionSpec(
            "selectedQuality", "A video rendition (representation id) to play instead of choosing by throughput",
            values: "a rendition id; default automatic", cli: "--quality", sample: "v720",
            apply: { o, v throws(PlayerError) in o.selectedQuality = try OptionSpec.text(v, maxLength: 256) },
            read: { $0.selectedQuality.map { .text($0) } },
            live: { player, v throws(PlayerError) in
                let id = try OptionSpec.text(v, maxLength: 256)
                try player.selectQuality(id == "auto" ? nil : id)
            }),
        OptionSpec(
            "cmcd", "Send Common Media Client Data (CTA-5004) with every request",
            values: "query, headers or off; default off", cli: "--cmcd", sample: "headers",
            apply: { o, v throws(PlayerError) in
                let name = try OptionSpec.text(v, maxLength: 16)
                if name == "off" {
                    o.cmcd = nil
                    return
                }
                guard let transmission = CMCDOptions.Transmission(rawValue: name) else {
                    throw PlayerError(.invalidOptions, "expected query, headers or off")
                }
                var cmcd = o.cmcd ?? CMCDOptions()
                cmcd.transmission = transmission
                o.cmcd = cmcd
            },
            read: { .text($0.cmcd?.transmission.rawValue ?? "off") }),
        OptionSpec(
            "cmcd.contentId", "The content id (cid) CMCD sends", values: "text, at most 128; default none",
            cli: "--content-id", sample: "stream-7",
            apply: { o, v throws(PlayerError) in
                let id = try OptionSpec.text(v, maxLength: 128)
                guard o.cmcd != nil else { throw PlayerError(.invalidOptions, "needs cmcd") }
                o.cmcd?.contentId = id
            },
            read: { $0.cmcd?.contentId.map { .text($0) } }, requires: "cmcd"),
        OptionSpec(
            "documentSecurity.caFile", "Trust this PEM file's CA certificates too (a venue's private origin)",
            values: "a file path; default the system's CAs only", cli: "--ca-file", config: "advanced.tls.caFile",
            sample: "/etc/marquee/venue-ca.pem",
            apply: { o, v throws(PlayerError) in o.documentSecurity.caFile = try OptionSpec.text(v) },
            read: { $0.documentSecurity.caFile.map { .text($0) } }),
        OptionSpec(
            "memoryTrimInterval", "Give back memory playing does not use this often (the whole process's)",
            values: "seconds, 1…3600, or off; default off (`marquee`: 10)", cli: "--memory-trim", sample: "20",
            apply: { o, v throws(PlayerError) in
                if v == .word("off") || v == .text("off") {
                    o.memoryTrimInterval = nil
                } else {
                    o.memoryTrimInterval = try OptionSpec.number(v, 1...3600, unit: " s")
                }
            },
            read: { $0.memoryTrimInterval.map { .number($0) } ?? .text("off") }),
    ]

    /// Where sound and pictures go and how they look.
    static let output: [OptionSpec] = [
        OptionSpec(
            "audioOutput", "Where audio goes",
            values: "alsa[:PCM], wav:PATH, null; default null (`marquee`: alsa when a card exists)",
            cli: "--audio", board: ["audio.pcm"], sample: "wav:/tmp/out.wav",
            boardSample: (#"{"audio": {"pcm": "hw:1,0"}}"#, "alsa:hw:1,0"),
            apply: { o, v throws(PlayerError) in
                guard let output = AudioOutput(spec: try OptionSpec.text(v)) else {
                    throw PlayerError(.invalidOptions, "expected alsa[:<pcm>], wav:<path> or null")
                }
                o.audioOutput = output
            },
            read: { .text($0.audioOutput.spec) },
            fromBoard: { .text($0.audio.outputSpec) }),
        OptionSpec(
            "videoOutput", "Where video goes",
            values: "headless, frames:DIR, drm[:CARD[,CONNECTOR[,WxH]]]; default headless",
            cli: "--video", board: ["video.output", "video.card", "video.connector", "video.mode"],
            sample: "frames:/tmp/frames",
            boardSample: (
                #"{"video": {"card": "/dev/dri/card1", "connector": "HDMI-A-2"}}"#, "drm:/dev/dri/card1,HDMI-A-2"
            ),
            apply: { o, v throws(PlayerError) in
                guard let output = VideoOutput(spec: try OptionSpec.text(v)) else {
                    throw PlayerError(.invalidOptions, "expected headless, frames:<dir> or drm[:<card>[,<connector>]]")
                }
                o.videoOutput = output
            },
            read: { .text($0.videoOutput.spec) },
            fromBoard: { .text($0.video.outputSpec) }),
        OptionSpec(
            "fit", "How pictures fit the screen", values: "contain, cover, fill, scaledown; default contain",
            cli: "--fit", config: "fit", sample: "cover",
            apply: { o, v throws(PlayerError) in o.fit = try fit(v) },
            read: { .text($0.fit.description) },
            live: { player, v throws(PlayerError) in player.setFit(try fit(v)) }),
        OptionSpec(
            "captions", "When closed captions are drawn over the pictures on a display",
            values: "off, auto (while muted), on; default auto", cli: "--captions", config: "captions", sample: "on",
            apply: { o, v throws(PlayerError) in o.captions = try captions(v) },
            read: { .text($0.captions.description) },
            live: { player, v throws(PlayerError) in player.setCaptions(try captions(v)) }),
        OptionSpec(
            "rotation", "Clockwise rotation of the picture on a display", values: "degrees: 0, 90, 180, 270; default 0",
            cli: "--rotation", board: ["video.rotation"], sample: "90",
            boardSample: (#"{"video": {"rotation": 180}}"#, "180"),
            apply: { o, v throws(PlayerError) in
                let degrees = try OptionSpec.integer(v, 0...270)
                guard degrees % 90 == 0 else { throw PlayerError(.invalidOptions, "not 0, 90, 180 or 270") }
                o.rotation = degrees
            },
            read: { .number(Double($0.rotation)) },
            fromBoard: { .number(Double($0.video.rotation)) }),
        OptionSpec(
            "poster", "A PNG or JPEG shown on a display until the first picture", values: "a file path; default black",
            cli: "--poster", config: "poster", sample: "/opt/poster.png",
            apply: { o, v throws(PlayerError) in o.poster = try OptionSpec.text(v) },
            read: { $0.poster.map { .text($0) } }),
        OptionSpec(
            "joinStill", "Show a live start's keyframe at once, as a still, while the decoder catches up",
            values: "boolean; default true", cli: "--[no-]join-still", sample: "false",
            apply: { o, v throws(PlayerError) in o.joinStill = try OptionSpec.flag(v) },
            read: { .flag($0.joinStill) }),
        OptionSpec(
            "muted", "Start muted", values: "boolean; default false", cli: "--[no-]muted", config: "muted",
            sample: "true",
            apply: { o, v throws(PlayerError) in o.muted = try OptionSpec.flag(v) },
            read: { .flag($0.muted) },
            live: { player, v throws(PlayerError) in try player.setVolume(muted: try OptionSpec.flag(v)) }),
        OptionSpec(
            "mixing.muteMusic", "Played, looped, while the broadcaster mutes the stream (cached on disk)",
            values: "a file or URL; default none", cli: "--mute-music", sample: "/opt/music.mp3",
            apply: { o, v throws(PlayerError) in o.mixing.muteMusic = OptionSpec.media(try OptionSpec.text(v)) },
            read: { $0.mixing.muteMusic.map { .text(shown($0)) } }, redactsURLs: true),
        OptionSpec(
            "mixing.adCreatives", "Played in turn in ad breaks whose cue names none",
            values: "files or URLs; default none", cli: "--ad-creative", sample: "/opt/ad.mp4",
            apply: { o, v throws(PlayerError) in
                o.mixing.adCreatives = try OptionSpec.list(v).map(OptionSpec.media)
            },
            read: { .list($0.mixing.adCreatives.map(shown)) }, redactsURLs: true),
    ]

    /// What a board decodes and how (board profiles set them).
    static let device: [OptionSpec] = [
        OptionSpec(
            "decoders", "Decoders to try first (hardware), the codec's software decoder after them",
            values: "decoder names; default software only", board: ["decode.decoders"], sample: "h264_v4l2m2m",
            boardSample: (#"{"decode": {"decoders": ["hevc_v4l2m2m"]}}"#, "hevc_v4l2m2m"),
            apply: { o, v throws(PlayerError) in o.decoders = try OptionSpec.list(v) },
            read: { .list($0.decoders) },
            fromBoard: { .list($0.decode.decoders) }),
        OptionSpec(
            "decodeThreads", "Software decoder threads per track", values: "0…64, 0: by the picture size; default 0",
            board: ["decode.threads"], sample: "2", boardSample: (#"{"decode": {"threads": 4}}"#, "4"),
            apply: { o, v throws(PlayerError) in o.decodeThreads = try OptionSpec.integer(v, 0...64) },
            read: { .number(Double($0.decodeThreads)) },
            fromBoard: { .number(Double($0.decode.threads)) }),
        OptionSpec(
            "videoQueueFrames", "Decoded pictures queued ahead of presentation",
            values: "2…240, 0: by the pictures' bytes; default 0", board: ["video.queue_frames"], sample: "8",
            boardSample: (#"{"video": {"queue_frames": 12}}"#, "12"),
            apply: { o, v throws(PlayerError) in
                let frames = try OptionSpec.integer(v, 0...240)
                guard frames != 1 else { throw PlayerError(.invalidOptions, "outside 2…240 (0: the default)") }
                o.videoQueueFrames = frames
            },
            read: { .number(Double($0.videoQueueFrames)) },
            fromBoard: { .number(Double($0.video.queueFrames)) }),
        OptionSpec(
            "abr.maxHeight", "Renditions taller than this are never chosen", values: "pixels, 16…16384; default any",
            board: ["decode.max_height"], sample: "720", boardSample: (#"{"decode": {"max_height": 1080}}"#, "1080"),
            apply: { o, v throws(PlayerError) in o.abr.maxHeight = try OptionSpec.integer(v, 16...16384) },
            read: { $0.abr.maxHeight.map { .number(Double($0)) } },
            fromBoard: { .number(Double($0.decode.maxHeight)) }),
        OptionSpec(
            "abr.maxFrameRate", "Renditions above this frame rate are never chosen",
            values: "frames per second, 1…240; default any", board: ["decode.max_fps"], sample: "30",
            boardSample: (#"{"decode": {"max_fps": 50}}"#, "50"),
            apply: { o, v throws(PlayerError) in o.abr.maxFrameRate = try OptionSpec.number(v, 1...240) },
            read: { $0.abr.maxFrameRate.map { .number($0) } },
            fromBoard: { .number(Double($0.decode.maxFps)) }),
    ]

    /// Seconds above 0, at most a day.
    private static func positive(_ value: OptionValue) throws(PlayerError) -> Double {
        let seconds = try OptionSpec.number(value, 0...86_400, unit: " s")
        guard seconds > 0 else { throw PlayerError(.invalidOptions, "outside 0…86400 s (above 0)") }
        return seconds
    }

    private static func captions(_ value: OptionValue) throws(PlayerError) -> CaptionDisplay {
        guard let mode = CaptionDisplay(rawValue: try OptionSpec.text(value, maxLength: 8).lowercased()) else {
            throw PlayerError(.invalidOptions, "expected off, auto or on")
        }
        return mode
    }

    private static func fit(_ value: OptionValue) throws(PlayerError) -> VideoFit {
        guard let fit = VideoFit(name: try OptionSpec.text(value, maxLength: 16)) else {
            throw PlayerError(.invalidOptions, "expected contain, cover, fill or scaledown")
        }
        return fit
    }

    /// A media URL as the command line gave it: a file's path, else the URL.
    private static func shown(_ url: URL) -> String { url.isFileURL ? url.path : url.absoluteString }
}
