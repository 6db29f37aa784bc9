import ArgumentParser
import Foundation
import MarqueeFleet

/// `marquee ctl`: the control socket's client (`marquee play --control PATH`).
struct ControlCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ctl",
        abstract: "Control a playing box through its control socket (marquee play --control PATH).",
        discussion: """
            get PROPERTY | set PROPERTY VALUE | observe PROPERTY|events | pause | play | next | \
            display-off | display-on |
            screenshot FILE.png [MAX-WIDTH]
            Properties: state latency targetLatency buffer position rate volume muted framesPresented framesDropped
            width height timeOffset delay source displayOff fit selectedQuality qoe venue status. Set: volume delay
            displayOff paused, and the options that change while playing: targetLatency selectedQuality fit muted.
            VALUE is JSON (0.5, true, "cover") or a bare word. Prints each answer as a JSON line.
            screenshot: the picture presented last, written to FILE.png here (scaled down to \
            MAX-WIDTH pixels when wider).
            """)

    @Option(
        name: .long, help: "The control socket (default: $XDG_RUNTIME_DIR/marquee.sock, else /tmp/marquee-<uid>.sock).")
    var socket: String?

    @Argument(help: "The command and its arguments.")
    var words: [String]

    func run() throws {
        guard let verb = words.first else {
            throw ValidationError(
                "a command: get, set, observe, pause, play, next, display-off, display-on, screenshot")
        }
        let args = Array(words.dropFirst())
        var request: [String: Any]
        switch (verb, args.count) {
        case ("get", 1), ("observe", 1): request = ["command": verb, "property": args[0]]
        case ("set", 2):
            let value =
                (try? JSONSerialization.jsonObject(with: Data(args[1].utf8), options: .fragmentsAllowed)) ?? args[1]
            request = ["command": "set", "property": args[0], "value": value]
        case ("pause", 0), ("play", 0), ("next", 0): request = ["command": verb]
        case ("screenshot", 1), ("screenshot", 2):
            request = ["command": "screenshot"]
            if args.count == 2 {
                guard let width = Int(args[1]), width >= 2 else {
                    throw ValidationError("screenshot: MAX-WIDTH is a number of pixels, 2 or more")
                }
                request["maxWidth"] = width
            }
        case ("display-off", 0): request = ["command": "displayOff"]
        case ("display-on", 0): request = ["command": "displayOn"]
        default: throw ValidationError("\(words.joined(separator: " ")): see marquee ctl --help")
        }
        let client: ControlClient
        do { client = try ControlClient(path: socket ?? ControlSocket.defaultPath) } catch {
            throw Failure(text: "\(error)")
        }
        var answer = try client.request(request)
        if verb == "screenshot", var data = answer["data"] as? [String: Any],
            let encoded = data.removeValue(forKey: "png") as? String
        {
            guard let png = Data(base64Encoded: encoded) else {
                throw Failure(text: "screenshot: the answer's PNG is not base64")
            }
            do { try png.write(to: URL(fileURLWithPath: args[0])) } catch {
                throw Failure(text: "\(args[0]): \(error.localizedDescription)")
            }
            data["path"] = args[0]
            answer["data"] = data
        }
        say(try line(answer))
        guard answer["ok"] as? Bool == true else { throw ExitCode(1) }
        if verb == "observe" {
            while let next = try client.receive() { say(try line(next)) }
        }
    }

    private func line(_ object: [String: Any]) throws -> String {
        String(
            decoding: try JSONSerialization.data(
                withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]), as: UTF8.self)
    }

    struct Failure: Error, CustomStringConvertible {
        let text: String
        var description: String { text }
    }
}
