import ArgumentParser
import Foundation
import Logging

@main
struct MarqueeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "marquee",
        abstract: "Marquee: a live-stream player for set-top boxes, kiosks and signage.",
        subcommands: [PlayCommand.self, DemoCommand.self, OriginCommand.self]
    )
}

/// Options shared by `play` and `demo`.
struct OutputOptions: ParsableArguments {
    @Option(name: .long, help: "Audio output: alsa[:<pcm>], wav:<path>, null (default: alsa when a sound card exists, else null).")
    var audio: String?

    @Option(name: .long, help: "Video output: headless, frames:<dir>, drm[:<card>[,<connector>[,<WxH>]]] (default: headless).")
    var video: String = "headless"

    @Option(name: .long, help: "Display fit: contain, cover, fill, scaledown.")
    var fit: String = "contain"

    @Option(name: .long, help: "Display rotation in degrees clockwise: 0, 90, 180, 270.")
    var rotation: Int = 0

    @Option(name: .long, help: "PNG or JPEG shown on the display until the first frame.")
    var poster: String?

    @Option(name: .long, help: "Seconds behind live to present at.")
    var targetLatency: Double = 3

    @Option(name: .long, help: "Play this many seconds, then exit 0 (default: until interrupted or the stream ends).")
    var duration: Double?

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error.")
    var logLevel: String = "notice"
}
