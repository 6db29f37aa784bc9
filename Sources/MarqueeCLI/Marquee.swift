import ArgumentParser

@main
struct MarqueeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "marquee", abstract: "Marquee live-stream player")
    func run() async throws {}
}
