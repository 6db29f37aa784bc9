import ArgumentParser
import Foundation
import Logging
import Marquee
import MarqueeFleet
import MarqueeStreaming
import MarqueeVenue

@main
struct MarqueeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "marquee",
        abstract: "Marquee: a live-stream player for set-top boxes, kiosks and signage.",
        subcommands: [
            PlayCommand.self, DemoCommand.self, OriginCommand.self, BoardsCommand.self, ScheduleCommand.self,
            ProofOfPlayCommand.self,
            ProxyCommand.self, ControlCommand.self, SignCommand.self, OptionsCommand.self,
        ]
    )

    /// Runs the command; once it has finished (the player stopped, its files closed, its
    /// lines printed), the process ends without running every shared library's destructors:
    /// FFmpeg's 137 libraries' exit code paged in ~6 MiB (the process's peak RSS) to tidy
    /// memory the kernel takes back anyway. Errors exit as ArgumentParser does.
    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? AsyncParsableCommand { try await command.run() } else { try command.run() }
        } catch {
            exit(withError: error)
        }
        fflush(nil)
        _exit(0)
    }
}

/// Options shared by `play` and `demo`.
struct OutputOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp(OptionTable.help("audioOutput")))
    var audio: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("videoOutput")))
    var video: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("fit")))
    var fit: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("captions")))
    var captions: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("rotation")))
    var rotation: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("poster")))
    var poster: String?

    @Flag(inversion: .prefixedNo, help: ArgumentHelp(OptionTable.help("joinStill")))
    var joinStill: Bool?

    @Flag(inversion: .prefixedNo, help: ArgumentHelp(OptionTable.help("muted")))
    var muted: Bool?

    @Option(
        name: .long,
        help: """
            Board profile (see `marquee boards`): its ALSA PCM, display, rotation and decoders; explicit \
            --audio/--video/--rotation win.
            """
    )
    var board: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("targetLatency")))
    var targetLatency: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("minRecoveryDelay")))
    var minRecoveryDelay: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("maxRecoveryDelay")))
    var maxRecoveryDelay: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("mainSourceRetryInterval")))
    var mainSourceRetryInterval: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("selectedQuality")))
    var quality: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("mixing.muteMusic")))
    var muteMusic: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("mixing.adCreatives") + "; repeat for several"))
    var adCreative: [String] = []

    @Option(
        name: .long,
        help: """
            Live: play this many seconds later than the latency target (user delay; applied once that much has been \
            collected, up to 300 s).
            """
    )
    var delay: Double?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("audioLanguage")))
    var audioLanguage: String?

    @Option(name: .long, help: "Play this many seconds, then exit 0 (default: until interrupted or the stream ends).")
    var duration: Double?

    @Flag(name: .long, help: ArgumentHelp(OptionTable.help("failFast")))
    var failFast = false

    @Option(name: .long, help: "Log level: trace, debug, info, notice, warning, error.")
    var logLevel: String = "notice"

    @Option(
        name: .long,
        help: """
            Write every player event to this file as one JSON line: {"wall_time": unix seconds, "type": …, fields}.
            """
    )
    var events: String?

    @Option(
        name: .long,
        help: """
            Play through a venue proxy in this process, sharing segments with the venue's other boxes: never, \
            onlyOnLAN or always.
            """
    )
    var venue: String?

    @Option(
        name: .long, help: "With --venue: the proxy's listening address (default 0.0.0.0 when sharing, else 127.0.0.1)."
    )
    var venueHost: String?

    @Option(name: .long, help: "With --venue: the proxy's port (default: any free one; peers need a known one).")
    var venuePort: Int = 0

    @Option(name: .long, help: "With --venue: a peer box's proxy, host:port (repeat for several).")
    var peer: [String] = []

    @Option(name: .long, help: "With --venue: this box's name among its peers (default: the host name).")
    var venueBox: String?

    @Option(name: .long, help: "With --venue: the segment store's size in MiB.")
    var venueStoreMib: Int = 256

    @Flag(
        name: .long,
        help: "With --venue: do not publish this box or find peers with DNS-SD (Avahi); the --peer boxes only.")
    var noDiscovery = false

    @Option(
        name: .long,
        help: """
            With --venue: a file holding the venue's key (at least 16 bytes), which every box of the venue holds: \
            peers prove it and vouch for their bytes with it (default: the venue-key credential).
            """
    )
    var venueKeyFile: String?

    @Option(
        name: .long,
        help: "Serve metrics for a Prometheus scrape at http://<host:port>/metrics (a port alone: on 127.0.0.1).")
    var metrics: String?

    @Option(
        name: .long,
        help: """
            With --metrics: a file holding TOKEN; scrapes must send "Authorization: Bearer TOKEN" (needed for an \
            address other than loopback). Default: the systemd credential metrics-token, when there is one.
            """
    )
    var metricsTokenFile: String?

    @Option(
        name: .long,
        help: """
            Push the metrics as OTLP/HTTP (protobuf) to this collector URL, used as given (e.g. \
            http://collector:4318/v1/metrics), through a queue on disk.
            """
    )
    var otlp: String?

    @Option(
        name: .long,
        help: """
            With --otlp: the queue's directory (default: $STATE_DIRECTORY/otlp under systemd, else \
            $XDG_STATE_HOME/marquee/otlp or ~/.local/state/marquee/otlp).
            """
    )
    var otlpQueue: String?

    @Option(name: .long, help: "With --otlp: seconds between exports.")
    var otlpInterval: Double = 15

    @Option(
        name: .long,
        help: """
            With --otlp: a header sent with every export, "Name: value" (repeatable). Not for credentials (argv is \
            readable by every user of the box): --otlp-headers-file.
            """
    )
    var otlpHeader: [String] = []

    @Option(
        name: .long,
        help: """
            With --otlp: a file of headers sent with every export, one "Name: value" a line, e.g. the collector's \
            Authorization (default: the otlp-headers credential).
            """
    )
    var otlpHeadersFile: String?

    @Option(name: .long, help: "Listen for `marquee ctl` on this Unix socket (mode 0600; the connecting uid checked).")
    var control: String?

    @Option(
        name: .long, help: "The operator's customer id, carried in the QoE record (printed as `qoe: {json}` at exit).")
    var customerId: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("cmcd")))
    var cmcd: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("memoryTrimInterval")))
    var memoryTrim: String?

    @Option(name: .long, help: ArgumentHelp(OptionTable.help("cmcd.contentId")))
    var contentId: String?

    @Flag(name: .long, help: "Print the options the player would be made with, one `name = value` a line, and exit.")
    var showOptions = false
}

extension OutputOptions {
    /// The player options given on the command line: each one's row in the option table, the
    /// flag that spelled it and its value, in the order they apply (`--cmcd` before its
    /// `--content-id`).
    var playerOptions: [(spec: OptionSpec, flag: String, value: OptionValue)] {
        let given: [(String, OptionValue?)] = [
            ("targetLatency", targetLatency.map(OptionValue.word)),
            ("minRecoveryDelay", minRecoveryDelay.map(OptionValue.word)),
            ("maxRecoveryDelay", maxRecoveryDelay.map(OptionValue.word)),
            ("mainSourceRetryInterval", mainSourceRetryInterval.map(OptionValue.word)),
            ("failFast", failFast ? .flag(true) : nil),
            ("audioLanguage", audioLanguage.map(OptionValue.word)),
            ("selectedQuality", quality.map(OptionValue.word)),
            ("cmcd", cmcd.map(OptionValue.word)),
            ("cmcd.contentId", contentId.map(OptionValue.word)),
            ("memoryTrimInterval", memoryTrim.map(OptionValue.word)),
            ("audioOutput", audio.map(OptionValue.word)),
            ("videoOutput", video.map(OptionValue.word)),
            ("fit", fit.map(OptionValue.word)),
            ("captions", captions.map(OptionValue.word)),
            ("rotation", rotation.map(OptionValue.word)),
            ("poster", poster.map(OptionValue.word)),
            ("joinStill", joinStill.map(OptionValue.flag)),
            ("muted", muted.map(OptionValue.flag)),
            ("mixing.muteMusic", muteMusic.map(OptionValue.word)),
            ("mixing.adCreatives", adCreative.isEmpty ? nil : .list(adCreative)),
        ]
        return given.compactMap { name, value in
            value.map { value in
                let spec = OptionTable.spec(name)
                return (spec, spec.flag(for: value) ?? name, value)
            }
        }
    }

    /// The scrape token: from --metrics-token-file, else the `metrics-token` credential.
    func metricsToken() throws(ValidationError) -> String? {
        do { return try Secrets.read(file: metricsTokenFile, credential: "metrics-token") } catch {
            throw ValidationError("--metrics-token-file: \(error)")
        }
    }

    /// --metrics as a host and port (a port alone: loopback).
    func metricsAddress() throws(ValidationError) -> (host: String, port: Int)? {
        guard let metrics else {
            guard metricsTokenFile == nil else { throw ValidationError("--metrics-token-file needs --metrics") }
            return nil
        }
        let parts = metrics.split(separator: ":", omittingEmptySubsequences: false)
        let host = parts.count > 1 ? parts.dropLast().joined(separator: ":") : "127.0.0.1"
        guard let port = Int(parts.last ?? ""), (0...65535).contains(port), !host.isEmpty else {
            throw ValidationError("--metrics \(metrics): expected host:port or a port")
        }
        guard try metricsToken()?.isEmpty == false || MetricsEndpoint.isLoopback(host) else {
            throw ValidationError("--metrics \(metrics): an address other than loopback needs --metrics-token-file")
        }
        return (host, port)
    }

    /// The OTLP export's options from --otlp and its options (nil without --otlp).
    func otlpOptions() throws(ValidationError) -> OTLPOptions? {
        guard let otlp else {
            guard otlpQueue == nil, otlpHeader.isEmpty, otlpHeadersFile == nil else {
                throw ValidationError("--otlp-queue, --otlp-header and --otlp-headers-file need --otlp")
            }
            return nil
        }
        guard otlpInterval >= 0.1, otlpInterval <= 86_400 else {
            throw ValidationError("--otlp-interval \(otlpInterval): expected 0.1 to 86400 seconds")
        }
        var headers = [(name: String, value: String)]()
        let secret: String?
        do { secret = try Secrets.read(file: otlpHeadersFile, credential: "otlp-headers") } catch {
            throw ValidationError("--otlp-headers-file: \(error)")
        }
        let fromFile = (secret ?? "").split(whereSeparator: \.isNewline).map(String.init).filter { !$0.isEmpty }
        for (header, secret) in otlpHeader.map({ ($0, false) }) + fromFile.map({ ($0, true) }) {
            guard let colon = header.firstIndex(of: ":"), colon != header.startIndex else {
                // A line of the secret file is not repeated: it may be a credential.
                throw ValidationError(
                    secret
                        ? "--otlp-headers-file: a line is not \"Name: value\""
                        : "--otlp-header \(header): expected \"Name: value\"")
            }
            headers.append(
                (String(header[..<colon]), header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        let environment = ProcessInfo.processInfo.environment
        let queue =
            otlpQueue
            ?? environment["STATE_DIRECTORY"].map { "\($0.split(separator: ":").first ?? "")/otlp" }
            ?? environment["XDG_STATE_HOME"].map { "\($0)/marquee/otlp" }
            ?? "\(NSHomeDirectory())/.local/state/marquee/otlp"
        return OTLPOptions(
            endpoint: otlp, queueDirectory: queue, interval: .milliseconds(Int(otlpInterval * 1000)), headers: headers)
    }

    /// The venue proxy's configuration from --venue and its options (nil without --venue).
    func venueConfiguration() throws(ValidationError) -> VenueConfiguration? {
        guard let venue else {
            guard peer.isEmpty, venueBox == nil, venueHost == nil else {
                throw ValidationError("--peer, --venue-box and --venue-host need --venue")
            }
            return nil
        }
        guard let sharing = SharingPolicy(rawValue: venue) else {
            throw ValidationError("--venue \(venue): expected never, onlyOnLAN or always")
        }
        var configuration = VenueConfiguration(
            host: venueHost ?? (sharing == .never ? "127.0.0.1" : "0.0.0.0"), port: venuePort, upstreams: [],
            storeBytes: venueStoreMib << 20,
            sharing: sharing, peers: peer)
        if let venueBox { configuration.boxId = venueBox }
        configuration.venueKey = try VenueKey.read(file: venueKeyFile)
        configuration.discovery = !noDiscovery
        return configuration
    }
}

struct OptionsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "options",
        abstract: "Print the player's options: each one's flag, remote-config key, control property and board key.")

    func run() throws { print(OptionTable.markdown, terminator: "") }
}

struct BoardsCommand: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "boards", abstract: "List the board profiles.")

    func run() throws {
        let paths = BoardProfile.searchPaths(repoRoot: repoRoot())
        let names = BoardProfile.available(searchPaths: paths)
        if names.isEmpty { throw ValidationError("no board profiles in \(paths.map(\.path).joined(separator: ", "))") }
        for name in names {
            do {
                let board = try BoardProfile.load(named: name, searchPaths: paths)
                let decoders = board.decode.decoders.joined(separator: ",")
                say(
                    """
                    \(name)\t\(board.arch)\taudio \(board.audio.outputSpec)\tvideo \(board.video.outputSpec)\t\
                    decoders \(decoders.isEmpty ? "software" : decoders)
                    """
                )
            } catch {
                say("\(name)\tINVALID: \(error)")
            }
        }
    }
}

extension BoardProfile {
    /// The default search paths, then the repository's `boards/` (running from a checkout).
    static func searchPaths(repoRoot: String) -> [URL] {
        defaultSearchPaths + [URL(fileURLWithPath: repoRoot).appendingPathComponent("boards", isDirectory: true)]
    }
}

/// The venue key from --venue-key-file, else the `venue-key` credential (nil: peers are not
/// authenticated; a warning says so when sharing).
enum VenueKey {
    static func read(file: String?) throws(ValidationError) -> [UInt8]? {
        do { return try Secrets.read(file: file, credential: "venue-key").map { Array($0.utf8) } } catch {
            throw ValidationError("--venue-key-file: \(error)")
        }
    }
}
