import Foundation
import Marquee
import MarqueeFleet
import TestSupport
import Testing

/// One option table serves every surface: each row's sample value, given on the command line
/// (the real `marquee play`, printing what the player would be made with), in a remote config,
/// in a board profile, or set through the control socket of a playing box, reaches the
/// option; `--help`, docs/cli.md and the DocC article are its text; and every field of
/// `PlayerOptions` has a row or a stated reason not to.
@Suite struct OptionTableTests {
    static let marquee = Tools.packageRoot.appendingPathComponent(".build/debug/marquee").path
    static let source = "https://origin.example/live/a.mpd"

    /// `name = value` lines, as `--show-options` prints them.
    func shown(_ output: String) -> [String: String] {
        var values: [String: String] = [:]
        for line in output.split(separator: "\n") {
            guard let equals = line.range(of: " = ") else { continue }
            values[String(line[..<equals.lowerBound])] = String(line[equals.upperBound...])
        }
        return values
    }

    /// How the command line spells `spec`'s sample.
    func arguments(_ spec: OptionSpec) -> [String] {
        guard let flag = spec.cli else { return [] }
        if flag.hasPrefix("--[no-]") { return [spec.flag(for: .flag(spec.sample == "true")) ?? flag] }
        if flag == "<url>…" { return [spec.sample] }
        return spec.read(PlayerOptions(sources: [])) == .flag(false) ? [flag] : [flag, spec.sample]
    }

    /// `spec`'s sample as a JSON fragment.
    func json(_ spec: OptionSpec) -> String {
        if spec.name == "sources" { return "[\"\(spec.sample)\"]" }
        if spec.sample == "true" || spec.sample == "false" || Double(spec.sample) != nil { return spec.sample }
        return "\"\(spec.sample)\""
    }

    @Test func everyFlagReachesTheOptions() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.marquee), "swift build first")
        let flagged = OptionTable.all.filter { $0.cli != nil }
        #expect(flagged.count >= 18, "\(flagged.count) options on the command line")
        for spec in flagged {
            var args = ["play", "--show-options"]
            if spec.name != "sources" { args.append(Self.source) }
            if let needed = spec.requires { args += arguments(OptionTable.spec(needed)) }
            args += arguments(spec)
            let values = shown(try Tools.run(Self.marquee, args))
            #expect(
                values[spec.name] == spec.shown,
                "marquee \(args.joined(separator: " ")) → \(values[spec.name] ?? "?")")
        }
        // A value a row refuses is refused on the command line, naming the flag.
        #expect(throws: ToolFailure.self) {
            _ = try Tools.run(Self.marquee, ["play", "--show-options", Self.source, "--target-latency", "301"])
        }
        do {
            _ = try Tools.run(Self.marquee, ["play", "--show-options", Self.source, "--rotation", "45"])
            Issue.record("--rotation 45 accepted")
        } catch let failure as ToolFailure {
            #expect(failure.message.contains("--rotation 45: not 0, 90, 180 or 270"), "\(failure.message)")
        }
    }

    @Test func everyConfigKeyReachesTheOptions() throws {
        let keyed = OptionTable.all.filter { $0.config != nil }
        #expect(keyed.count >= 8, "\(keyed.count) options in a remote config")
        for spec in keyed {
            let key = try #require(spec.config)
            var fragment = "\"\(key.split(separator: ".").last!)\": \(json(spec))"
            for part in key.split(separator: ".").dropLast().reversed() { fragment = "\"\(part)\": {\(fragment)}" }
            let document = spec.name == "sources" ? "{\(fragment)}" : "{\"sources\": [\"\(Self.source)\"], \(fragment)}"
            let config = try MarqueeConfig.parse(Data(document.utf8))
            let options = PlayerOptions(config: config)
            #expect(
                spec.read(options)?.description == spec.shown,
                "\(document) → \(String(describing: spec.read(options)))"
            )
            // The wrong type is refused, naming the key.
            guard spec.name != "sources" else { continue }
            let wrong =
                "{\"sources\": [\"\(Self.source)\"], \(fragment.replacingOccurrences(of: json(spec), with: "{}"))}"
            do {
                _ = try MarqueeConfig.parse(Data(wrong.utf8))
                Issue.record("\(wrong) accepted")
            } catch {
                #expect(error.code == .invalidConfig && error.message.hasPrefix(key), "\(wrong) → \(error)")
            }
        }
    }

    @Test func everyBoardKeyReachesTheOptions() throws {
        let boarded = OptionTable.all.filter { !$0.board.isEmpty }
        #expect(boarded.count >= 7, "\(boarded.count) options in a board profile")
        let dir = try Tools.tempDirectory("boards")
        for spec in boarded {
            let sample = try #require(spec.boardSample, "\(spec.name) has board keys and no board sample")
            let sections = sample.json.dropFirst().dropLast()
            let file = dir.appendingPathComponent("sample.json")
            try """
            {"schema": 1, "name": "sample", "description": "one option", "arch": "x86_64", \(sections)}
            """.write(to: file, atomically: true, encoding: .utf8)
            let board = try BoardProfile.load(from: file)
            let options = PlayerOptions(sources: []).applying(board)
            #expect(
                spec.read(options)?.description == sample.shown,
                "\(sample.json) → \(String(describing: spec.read(options)))")
        }
    }

    /// Options made in Swift are checked by the same rows: a sample is taken, a value out of
    /// each row's range is refused.
    @Test func swiftOptionsAreCheckedByTheRows() throws {
        for spec in OptionTable.all {
            var options = PlayerOptions(sources: [URL(string: Self.source)!])
            if let needed = spec.requires {
                try OptionTable.spec(needed).apply(.word(OptionTable.spec(needed).sample), to: &options, as: needed)
            }
            try spec.apply(.word(spec.sample), to: &options, as: spec.name)
            _ = try options.validated()
        }
        var options = PlayerOptions(sources: [URL(string: Self.source)!])
        options.rotation = 45
        #expect(throws: PlayerError.self) { _ = try Player(options: options) }
        options.rotation = 0
        options.maxRecoveryDelay = 5
        #expect(throws: PlayerError.self) { _ = try Player(options: options) }
        options.maxRecoveryDelay = 90
        options.targetLatency = .nan
        #expect(throws: PlayerError.self) { _ = try Player(options: options) }
    }

    /// Every `PlayerOptions` field has a row, or is one of these, which only Swift sets.
    @Test func everyFieldHasARowOrAReason() {
        let apiOnly: [String: String] = [
            "sync": "rate bounds, a structure of its own",
            "mixing": "its music and creatives have rows; the ramps are Swift's",
            "maxDelay": "the delay's reach: set by the app that offers a delay (the CLI derives it from --delay)",
            "maxDelayBytes": "a memory bound beside maxDelay",
            "httpHeaders": "tokens and cookies: never on a command line or in a config a box shows",
            "documentSecurity": "its CA file has a row; keys and directories are the command's own flags",
            "abr": "its caps have rows; the controller's margins are tuning",
            "cmcd": "has rows (its mode and content id)",
        ]
        let rows = Set(OptionTable.all.map { $0.name.split(separator: ".").first.map(String.init) ?? $0.name })
        for child in Mirror(reflecting: PlayerOptions(sources: [])).children {
            guard let label = child.label else { continue }
            #expect(
                rows.contains(label) || apiOnly[label] != nil, "PlayerOptions.\(label) has no row in the option table")
        }
    }

    @Test func helpAndTheTablesAreTheRows() throws {
        try #require(FileManager.default.isExecutableFile(atPath: Self.marquee), "swift build first")
        let help = try Tools.run(Self.marquee, ["play", "--help"]).split(whereSeparator: \.isWhitespace).joined(
            separator: " ")
        for spec in OptionTable.all {
            guard let flag = spec.cli, flag != "<url>…" else { continue }
            let spelled = flag.hasPrefix("--[no-]") ? "--\(flag.dropFirst(7))/--no-\(flag.dropFirst(7))" : flag
            #expect(help.contains(spelled), "--help has no \(spelled)")
            let words = spec.help.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            #expect(help.contains(words), "--help does not say \"\(words)\" for \(flag)")
        }
        let table = OptionTable.markdown
        for path in ["docs/cli.md", "Sources/Marquee/Marquee.docc/Options.md"] {
            let text = try String(contentsOf: Tools.packageRoot.appendingPathComponent(path), encoding: .utf8)
            #expect(text.contains(table), "\(path) does not hold the option table as the rows print it:\n\(table)")
        }
    }

    /// The control socket sets each live option on a playing box, and reading it back through
    /// the socket shows the value.
    @Test func everyLiveOptionIsSetThroughTheControlSocket() async throws {
        let origin = try await LivePlaybackTests.origin()
        defer { Task { await origin.stop() } }
        let dir = try Tools.tempDirectory("options-live")
        let player = try Player(options: PlayerOptions(sources: [origin.manifestURL(asset: "testpic_2s")]))
        let socket = dir.appendingPathComponent("control.sock").path
        let fleet = try await Fleet.start(player: player, controlPath: socket)
        try await player.play()
        defer { Task { await player.stop() } }
        let client = try ControlClient(path: socket)
        #expect(OptionTable.live.count >= 4)
        for spec in OptionTable.live {
            let value: Any
            switch spec.name {
            case "selectedQuality": value = try #require(player.qualities.last { $0.kind == "video" }?.id)
            case "muted": value = true
            case "targetLatency": value = 5.0
            default: value = spec.sample
            }
            let answer = try client.request(["command": "set", "property": spec.name, "value": value])
            #expect(answer["ok"] as? Bool == true, "set \(spec.name) \(value): \(answer)")
            // JSON's numbers and booleans come back as NSNumbers: compared as what was sent.
            func same(_ read: Any?) -> Bool {
                switch value {
                case let number as Double: (read as? NSNumber)?.doubleValue == number
                case let flag as Bool: (read as? NSNumber)?.boolValue == flag
                default: read as? String == value as? String
                }
            }
            var read: Any?
            for _ in 0..<40 {
                read = try client.request(["command": "get", "property": spec.name])["data"]
                if same(read) { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            #expect(same(read), "get \(spec.name) after set \(value): \(String(describing: read))")
        }
        let refused = try client.request(["command": "set", "property": "fit", "value": "zoom"])
        #expect(
            refused["ok"] as? Bool == false && (refused["error"] as? String)?.hasPrefix("fit: ") == true, "\(refused)")
        _ = await fleet.stop()
    }
}
