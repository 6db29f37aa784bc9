import ArgumentParser
import Crypto
import Foundation
import Logging
import Marquee
import MarqueeFleet
import MarqueeSignage
import MarqueeStreaming
import MarqueeVenue

struct PlayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "play", abstract: "Play a live DASH stream.")

    @Argument(help: "Manifest URL(s); later ones are backups. None with --stream-id or --playlist.")
    var urls: [String] = []

    @Option(
        name: .long,
        help: """
            Play a playlist: a JSON document (file or URL; a URL is refreshed every minute) of {"items": [{"url": …, \
            "id": …, "tags": […], "duration": …}], "repeat": …}.
            """
    )
    var playlist: String?

    @Option(
        name: .long,
        help: """
            Play a schedule: a JSON document (file or URL; a URL is refreshed every minute; see `marquee schedule`), \
            followed by the server's clock.
            """
    )
    var schedule: String?

    @Option(
        name: .long,
        help: "With --schedule: the server clock's source, a URL answering an ISO 8601 time (default: the local clock)."
    )
    var timeSource: String?

    @Option(
        name: .long,
        help: """
            With --schedule: record each completed play in this journal (append-only, fsync'd JSON lines, \
            hash-chained).
            """
    )
    var proofOfPlay: String?

    @Option(
        name: .long,
        help: "With --proof-of-play: upload the records to this URL (POST, JSON batches; the backlog after an outage).")
    var proofOfPlayUrl: String?

    @Option(
        name: .long,
        help: """
            With --proof-of-play-url: a file holding the bearer token the receiver expects (default: the \
            proof-of-play-token credential).
            """
    )
    var proofOfPlayTokenFile: String?

    @Option(
        name: .long,
        help: """
            With --proof-of-play: a file holding the box's key; records are chained with HMAC-SHA256 under it \
            (default: the proof-of-play-key credential; without one, SHA-256).
            """
    )
    var proofOfPlayKeyFile: String?

    @Option(
        name: .long,
        help: "With --proof-of-play: this box's name in the records (default: box- and an HMAC of /etc/machine-id).")
    var box: String?

    @Option(
        name: .long,
        help: """
            With --schedule: keep the images and files of the next 24 h in this directory (fetched ahead; played from \
            there offline).
            """
    )
    var cache: String?

    @Option(name: .long, help: "With --cache: its size bound in MiB.")
    var cacheMib: Int = 2048

    @Option(
        name: .long,
        help: "With --playlist: play the items whose tags match this expression, e.g. \"(and sport (or food comedy))\"."
    )
    var filter: String?

    @Flag(name: .long, help: "With --playlist: play the items in a shuffled order.")
    var shuffle = false

    @Option(name: .long, help: "With --playlist: off, all or one (default: the playlist's, else off).")
    var `repeat`: String?

    @Option(
        name: .long,
        help: "Play what the remote config of this stream id says (MarqueeSDK.initialize); explicit options win.")
    var streamId: String?

    @Option(
        name: .long,
        help: """
            Config URL template for --stream-id; {streamId} is replaced (default: \
            \(MarqueeSDK.defaultConfigURLTemplate)).
            """
    )
    var configUrl: String = MarqueeSDK.defaultConfigURLTemplate

    @Option(
        name: .long,
        help: """
            Documents fetched by URL (--stream-id's config, --playlist, --schedule) must be signed with this \
            Ed25519 key (a file: base64 of 32 bytes, or PEM; default: $CREDENTIALS_DIRECTORY/trust-key when present).
            """)
    var trustKey: String?

    @Option(
        name: .long,
        help: "Documents fetched by URL may name local files in this directory (repeatable; default: none).")
    var allowLocal: [String] = []

    @Flag(name: .long, help: "Documents may be fetched over plain http (default: https only).")
    var allowHttp = false

    @Option(
        name: .long,
        help: ArgumentHelp(OptionTable.help("documentSecurity.caFile") + "; for documents fetched by URL too"))
    var caFile: String?

    @OptionGroup var output: OutputOptions

    func validate() throws {
        if urls.isEmpty && streamId == nil && playlist == nil && schedule == nil {
            throw ValidationError("give manifest URL(s), --stream-id, --playlist or --schedule")
        }
        if schedule != nil && (!urls.isEmpty || streamId != nil || playlist != nil) {
            throw ValidationError("--schedule plays alone: no manifest URLs, --stream-id or --playlist with it")
        }
        if (timeSource != nil || proofOfPlay != nil || cache != nil) && schedule == nil {
            throw ValidationError("--time-source, --proof-of-play and --cache need --schedule")
        }
        if cacheMib < 1 { throw ValidationError("--cache-mib \(cacheMib): at least 1") }
        if (proofOfPlayUrl != nil || box != nil || proofOfPlayKeyFile != nil) && proofOfPlay == nil {
            throw ValidationError("--proof-of-play-url, --proof-of-play-key-file and --box need --proof-of-play")
        }
        if proofOfPlayTokenFile != nil && proofOfPlayUrl == nil {
            throw ValidationError("--proof-of-play-token-file needs --proof-of-play-url")
        }
        if playlist != nil && (!urls.isEmpty || streamId != nil) {
            throw ValidationError("--playlist plays alone: no manifest URLs or --stream-id with it")
        }
        if playlist == nil && (filter != nil || shuffle || `repeat` != nil) {
            throw ValidationError("--filter, --shuffle and --repeat need --playlist")
        }
        if let mode = `repeat`, RepeatMode(rawValue: mode) == nil {
            throw ValidationError("--repeat \(mode): expected off, all or one")
        }
        if let filter {
            do { _ = try TagFilter(filter) } catch { throw ValidationError("--filter: \(error)") }
        }
    }

    /// The policy for documents fetched by URL, from the options (and systemd's credential).
    func documentSecurity() throws -> DocumentSecurity {
        let environment = ProcessInfo.processInfo.environment
        // systemd's LoadCredential=trust-key:… (the unit's credential), when the flag is absent.
        let credential = environment["CREDENTIALS_DIRECTORY"].map { "\($0)/trust-key" }
            .flatMap { FileManager.default.fileExists(atPath: $0) ? $0 : nil }
        var security = DocumentSecurity(allowedLocalDirectories: allowLocal, allowHTTP: allowHttp, caFile: caFile)
        if let path = trustKey ?? credential {
            do { security.trustKey = try TrustKey(contentsOfFile: path) } catch {
                throw ValidationError("--trust-key \(path): \(error.message)")
            }
        }
        security.stateDirectory =
            environment["STATE_DIRECTORY"].map { "\($0.split(separator: ":").first ?? "")/documents" }
            ?? environment["XDG_STATE_HOME"].map { "\($0)/marquee/documents" }
            ?? "\(NSHomeDirectory())/.local/state/marquee/documents"
        return security
    }

    func run() async throws {
        let security = try documentSecurity()
        if let schedule {
            let read: Schedule
            var feed: ScheduleFeed?
            do {
                if let url = URL(string: schedule), url.scheme == "http" || url.scheme == "https" {
                    feed = try await ScheduleFeed(url: url, security: security)
                    read = feed!.current
                } else {
                    let file = URL(fileURLWithPath: schedule)
                    read = try Schedule(json: try Data(contentsOf: file), relativeTo: file)
                }
            } catch {
                FileHandle.standardError.write(Data("marquee: --schedule \(schedule): \(error)\n".utf8))
                throw ExitCode(1)
            }
            defer { feed?.stop() }
            var source: URL?
            if let timeSource {
                guard let url = URL(string: timeSource), url.scheme == "http" || url.scheme == "https" else {
                    throw ValidationError("--time-source \(timeSource): not an http or https URL")
                }
                source = url
            }
            var journal: ProofOfPlayJournal?
            var uploader: ProofOfPlayUploader?
            if let proofOfPlay {
                do {
                    let key = try Secrets.read(file: proofOfPlayKeyFile, credential: "proof-of-play-key").map {
                        SymmetricKey(data: Data($0.utf8))
                    }
                    if key == nil {
                        FileHandle.standardError.write(
                            Data(
                                """
                                marquee: proof of play: no box key (--proof-of-play-key-file or the proof-of-play-key \
                                credential): records are hashed, not keyed\n
                                """
                                .utf8))
                    }
                    journal = try ProofOfPlayJournal(
                        url: URL(fileURLWithPath: proofOfPlay), box: box ?? BoxIdentity.stable(), key: key)
                } catch {
                    FileHandle.standardError.write(Data("marquee: --proof-of-play \(proofOfPlay): \(error)\n".utf8))
                    throw ExitCode(1)
                }
                if let text = proofOfPlayUrl {
                    guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else {
                        throw ValidationError("--proof-of-play-url \(text): not an http or https URL")
                    }
                    let token: String?
                    do { token = try Secrets.read(file: proofOfPlayTokenFile, credential: "proof-of-play-token") } catch
                    {
                        throw ValidationError("--proof-of-play-token-file: \(error)")
                    }
                    uploader = ProofOfPlayUploader(
                        journal: journal!, endpoint: url,
                        headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
                    uploader?.start()
                }
            }
            var store: ContentCache?
            if let cache {
                do {
                    store = try ContentCache(directory: URL(fileURLWithPath: cache), maxBytes: cacheMib << 20)
                } catch {
                    FileHandle.standardError.write(Data("marquee: --cache \(cache): \(error)\n".utf8))
                    throw ExitCode(1)
                }
            }
            let code = await PlaybackRunner(output: output, security: security).play(
                schedule: read, feed: feed, timeSource: source, journal: journal, cache: store)
            if let uploader {
                uploader.stop()
                _ = try? await uploader.upload()  // the last plays, when the endpoint answers
            }
            if code != 0 { throw ExitCode(code) }
            return
        }
        if let playlist {
            let code = await playPlaylist(playlist, security: security)
            if code != 0 { throw ExitCode(code) }
            return
        }
        var sources = try urls.map { text -> URL in
            guard let url = URL(string: text), url.scheme != nil else {
                throw ValidationError("\"\(text)\" is not a URL")
            }
            return url
        }
        var remote: RemoteConfig?
        if let streamId {
            do {
                remote = try await RemoteConfig(streamId: streamId, configURL: configUrl, security: security)
            } catch {
                FileHandle.standardError.write(Data("marquee: stream \(streamId): \(error)\n".utf8))
                throw ExitCode(1)
            }
            if sources.isEmpty { sources = remote?.current.sources ?? [] }
        }
        let code = await PlaybackRunner(output: output, security: security).play(sources: sources, remote: remote)
        remote?.stop()
        if code != 0 { throw ExitCode(code) }
    }
}

extension PlayCommand {
    /// `--playlist`: a file read once, or a URL followed as a content feed (refreshed every
    /// minute; a refresh replaces the playlist without interrupting the item playing).
    private func playPlaylist(_ location: String, security: DocumentSecurity) async -> Int32 {
        let tagFilter = filter.flatMap { try? TagFilter($0) }
        var feed: ContentFeed?
        var playlist: Playlist
        do {
            if let url = URL(string: location), url.scheme == "http" || url.scheme == "https" {
                let opened = try await ContentFeed(url: url, filter: tagFilter, security: security)
                feed = opened
                playlist = opened.current
            } else {
                let file = URL(fileURLWithPath: location)
                let data: Data
                do { data = try Data(contentsOf: file) } catch {
                    FileHandle.standardError.write(
                        Data("marquee: --playlist \(location): cannot be read: \(error.localizedDescription)\n".utf8))
                    return 1
                }
                playlist = try Playlist(json: data, relativeTo: file)
                if let tagFilter { playlist = playlist.filtered(by: tagFilter) }
            }
        } catch {
            FileHandle.standardError.write(Data("marquee: --playlist \(location): \(error)\n".utf8))
            return 1
        }
        let overrides = (shuffle: shuffle, repeat: `repeat`.flatMap(RepeatMode.init(rawValue:)))
        let adjusted: @Sendable (Playlist) -> Playlist = { p in
            var p = p
            if overrides.shuffle { p.shuffle = true }
            if let mode = overrides.repeat { p.repeatMode = mode }
            return p
        }
        let code = await PlaybackRunner(output: output, security: security).play(
            playlist: adjusted(playlist), feed: feed, adjust: adjusted)
        feed?.stop()
        return code
    }
}
