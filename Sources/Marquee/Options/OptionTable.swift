import Foundation
import MarqueeStreaming

/// A value as a surface hands it in: a command-line argument is a word, read as the option
/// wants it; a JSON document gives a typed number, boolean, string or array of strings (a
/// string where a number is wanted is refused).
package enum OptionValue: Sendable, Equatable, CustomStringConvertible {
    /// A command-line argument.
    case word(String)
    case text(String)
    case number(Double)
    case flag(Bool)
    case list([String])
    /// A JSON value of another type (an object, an array of non-strings, null), by its name.
    case other(String)

    /// The value as the command line would spell it.
    package var description: String {
        switch self {
        case .word(let word): word
        case .text(let text): text
        case .number(let number): OptionSpec.format(number)
        case .flag(let flag): flag ? "true" : "false"
        case .list(let items): items.joined(separator: " ")
        case .other(let type): type
        }
    }
}

/// One ``PlayerOptions`` field, as every surface that offers it spells it: its command-line
/// flag, its key in a remote config (``MarqueeConfig``), whether the control socket sets it on
/// a playing box, and its key in a board profile. The value is parsed and range-checked here,
/// once, whichever surface it came from; ``PlayerOptions/validated(requiringSources:)`` checks
/// a value set in Swift by the same code.
///
/// `--help`, `docs/cli.md`'s option table and the DocC article "Options" are generated from or
/// checked against ``OptionTable/all`` by `OptionTableTests`.
package struct OptionSpec: Sendable {
    /// The field's path in ``PlayerOptions`` (`targetLatency`, `abr.maxHeight`); also the
    /// control socket's property name.
    package let name: String
    /// What it does, one sentence (`--help`, the tables).
    package let summary: String
    /// The values it takes and its default (`seconds, 0…300; default 3`).
    package let values: String
    /// The `marquee play` flag (`--target-latency`); `<url>…` for the positional sources.
    package let cli: String?
    /// The remote config's key path (`advanced.sync.targetLatency`).
    package let config: String?
    /// The board profile's key paths (`video.rotation`).
    package let board: [String]
    /// A value every surface of the option is tested with, as the command line spells it…
    package let sample: String
    /// …and as ``read`` shows it once applied.
    package let shown: String
    /// For a board key: a board file's sections with a sample value, and what ``read`` shows.
    package let boardSample: (json: String, shown: String)?
    /// Parses `value` and sets the field; throws ``PlayerError/Code-swift.struct/invalidOptions``
    /// whose message says what was wrong (the caller prefixes its own spelling).
    package let apply: @Sendable (inout PlayerOptions, OptionValue) throws(PlayerError) -> Void
    /// The field's value, as ``apply`` takes it back; nil while it is unset (its default is none).
    package let read: @Sendable (PlayerOptions) -> OptionValue?
    /// Changes it on a player while it plays (the control socket's `set`); nil: not live.
    package let live: (@Sendable (Player, OptionValue) throws(PlayerError) -> Void)?
    /// The value a board profile gives it (``PlayerOptions/applying(_:)``); nil: no board key.
    package let fromBoard: (@Sendable (BoardProfile) -> OptionValue)?
    /// Another option that must be set for this one to mean anything (`cmcd` for its content id).
    package let requires: String?
    /// Whether its values are URLs (sources, music, creatives): an error shows them redacted.
    package let redactsURLs: Bool

    package init(
        _ name: String, _ summary: String, values: String, cli: String? = nil, config: String? = nil,
        board: [String] = [], sample: String, shown: String? = nil, boardSample: (json: String, shown: String)? = nil,
        apply: @escaping @Sendable (inout PlayerOptions, OptionValue) throws(PlayerError) -> Void,
        read: @escaping @Sendable (PlayerOptions) -> OptionValue?,
        live: (@Sendable (Player, OptionValue) throws(PlayerError) -> Void)? = nil,
        fromBoard: (@Sendable (BoardProfile) -> OptionValue)? = nil, requires: String? = nil,
        redactsURLs: Bool = false
    ) {
        self.name = name
        self.summary = summary
        self.values = values
        self.cli = cli
        self.config = config
        self.board = board
        self.sample = sample
        self.shown = shown ?? sample
        self.boardSample = boardSample
        self.apply = apply
        self.read = read
        self.live = live
        self.fromBoard = fromBoard
        self.requires = requires
        self.redactsURLs = redactsURLs
    }

    /// The flag as a command line spelled `value`: `--no-muted` for a false `--[no-]muted`, else
    /// ``cli``; nil for an option with no flag.
    package func flag(for value: OptionValue) -> String? {
        guard let cli, cli.hasPrefix("--[no-]") else { return cli }
        let name = cli.dropFirst("--[no-]".count)
        return value == .flag(false) ? "--no-\(name)" : "--\(name)"
    }

    /// The `--help` text: the summary and the values.
    package var help: String { "\(summary) (\(values))" }

    /// `value` applied to `options`, the error's message prefixed with `said` (the flag, the
    /// config path or the property that carried it).
    package func apply(_ value: OptionValue, to options: inout PlayerOptions, as said: String) throws(PlayerError) {
        do { try apply(&options, value) } catch {
            throw PlayerError(
                error.code, "\(said) \(redactsURLs ? Redact.urls(in: value) : value.description): \(error.message)")
        }
    }

    // MARK: Parsers shared by the entries

    /// A number from JSON or text, finite and within `range`.
    static func number(_ value: OptionValue, _ range: ClosedRange<Double>, unit: String = "") throws(PlayerError)
        -> Double
    {
        let number: Double?
        switch value {
        case .number(let n): number = n
        case .word(let word): number = Double(word.trimmingCharacters(in: .whitespaces))
        default: number = nil
        }
        guard let number, number.isFinite else { throw PlayerError(.invalidOptions, "expected a number") }
        guard range.contains(number) else {
            throw PlayerError(
                .invalidOptions, "outside \(format(range.lowerBound))…\(format(range.upperBound))\(unit)")
        }
        return number
    }

    /// A whole number within `range`.
    static func integer(_ value: OptionValue, _ range: ClosedRange<Int>) throws(PlayerError) -> Int {
        let number = try Self.number(value, Double(range.lowerBound)...Double(range.upperBound))
        guard number.rounded() == number else { throw PlayerError(.invalidOptions, "expected a whole number") }
        return Int(number)
    }

    /// `true`/`false` from JSON, or `true`, `false`, `yes`, `no`, `on`, `off`, `1`, `0` as text.
    static func flag(_ value: OptionValue) throws(PlayerError) -> Bool {
        switch value {
        case .flag(let flag): return flag
        case .word(let word):
            switch word.lowercased() {
            case "true", "yes", "on", "1": return true
            case "false", "no", "off", "0": return false
            default: break
            }
        default: break
        }
        throw PlayerError(.invalidOptions, "expected a boolean")
    }

    /// A string of at most `maxLength` characters, not empty.
    static func text(_ value: OptionValue, maxLength: Int = 4096) throws(PlayerError) -> String {
        let text: String
        switch value {
        case .text(let string), .word(let string): text = string
        default: throw PlayerError(.invalidOptions, "expected a string")
        }
        guard !text.isEmpty, text.count <= maxLength else {
            throw PlayerError(.invalidOptions, "empty, or longer than \(maxLength) characters")
        }
        return text
    }

    /// Strings from a JSON array, or one from text.
    static func list(_ value: OptionValue) throws(PlayerError) -> [String] {
        switch value {
        case .list(let items): return items
        case .text(let text), .word(let text): return [text]
        default: throw PlayerError(.invalidOptions, "expected an array of strings")
        }
    }

    /// A media path or URL: a URL when it has a scheme, else a file path.
    static func media(_ text: String) -> URL {
        if let url = URL(string: text), url.scheme != nil { return url }
        return URL(fileURLWithPath: text)
    }

    /// `5`, `2.5`, `0.05`: as short as it reads back.
    package static func format(_ number: Double) -> String {
        number.rounded() == number && abs(number) < 1e15 ? String(Int(number)) : String(number)
    }
}

extension Redact {
    /// A value fit for an error message: each URL in it without its user-info and query.
    static func urls(in value: OptionValue) -> String {
        switch value {
        case .list(let items): items.map { Redact.url($0) }.joined(separator: " ")
        case .word(let text), .text(let text): Redact.url(text)
        default: value.description
        }
    }
}

/// Every option a surface offers (``OptionSpec``), in the order the tables list them.
package enum OptionTable {
    /// The options.
    package static let all: [OptionSpec] = streaming + output + device

    /// The option named `name` (a ``PlayerOptions`` path); a name not in the table is a
    /// programming error.
    package static func spec(_ name: String) -> OptionSpec {
        guard let spec = all.first(where: { $0.name == name }) else { preconditionFailure("no option \(name)") }
        return spec
    }

    /// The `--help` text of the option named `name`.
    package static func help(_ name: String) -> String { spec(name).help }

    /// The options the control socket sets on a playing box.
    package static var live: [OptionSpec] { all.filter { $0.live != nil } }

    /// The option table as Markdown: `name | flag | config key | control | board key | values`
    /// and a line for each option (docs/cli.md and the DocC article hold it verbatim).
    package static var markdown: String {
        func code(_ text: String?) -> String { text.map { "`\($0)`" } ?? "" }
        var lines = [
            "| option | `marquee play` | remote config | control socket | board profile | values | what it does |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for spec in all {
            let cells = [
                code(spec.name), code(spec.cli), code(spec.config), spec.live == nil ? "" : "set",
                spec.board.map { "`\($0)`" }.joined(separator: ", "), spec.values, spec.summary,
            ]
            lines.append("| " + cells.joined(separator: " | ") + " |")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}
