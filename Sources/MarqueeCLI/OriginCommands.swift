import ArgumentParser
import Foundation
import Logging
import MarqueeOrigin

/// Where the repository's generated assets and `../shared/media` are looked up.
func repoRoot() -> String {
    ProcessInfo.processInfo.environment["MARQUEE_ROOT"] ?? FileManager.default.currentDirectoryPath
}

struct OriginCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "origin", abstract: "Serve the test assets as endless live DASH streams on loopback.")

    @Option(help: "Port to listen on (0 picks a free one).")
    var port: Int = 8080

    @Option(help: "Address to listen on (0.0.0.0: every interface, for other hosts).")
    var host: String = "127.0.0.1"

    @Option(help: "Also serve this directory as plain files under /static/.")
    var staticRoot: String?

    func run() async throws {
        var logger = Logger(label: "marquee.origin")
        logger.logLevel = .info
        var configuration = OriginConfiguration(
            host: host, port: port, assetRoots: OriginConfiguration.defaultAssets(repoRoot: repoRoot()))
        configuration.staticRoot = staticRoot
        let origin = try Origin(configuration: configuration, logger: logger)
        let bound = try await origin.start()
        say("origin on http://127.0.0.1:\(bound)")
        for name in configuration.assetRoots.keys.sorted() {
            say("  \(origin.manifestURL(asset: name).absoluteString)")
        }
        await Signals.waitForInterrupt()
        await origin.stop()
    }
}

struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo", abstract: "Start the loopback origin and play its built-in live stream.")

    @Option(help: "Asset to play (generated, testpic_2s, wave).")
    var asset: String?

    @OptionGroup var output: OutputOptions

    func run() async throws {
        var logger = Logger(label: "marquee.origin")
        logger.logLevel = .warning
        let assets = OriginConfiguration.defaultAssets(repoRoot: repoRoot())
        guard let name = asset ?? (assets["generated"] != nil ? "generated" : assets.keys.sorted().first),
            assets[name] != nil
        else {
            throw ValidationError(
                "no demo asset found: run scripts/setup (it generates assets/generated), or pass --asset")
        }
        let origin = try Origin(configuration: OriginConfiguration(assetRoots: assets), logger: logger)
        _ = try await origin.start()
        let url = origin.manifestURL(asset: name)
        say("demo: origin serving \(url.absoluteString)")
        let code = await PlaybackRunner(output: output).play(sources: [url])
        await origin.stop()
        if code != 0 { throw ExitCode(code) }
    }
}

/// Writes a line to stdout unbuffered (scripts read these lines while the command runs).
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
