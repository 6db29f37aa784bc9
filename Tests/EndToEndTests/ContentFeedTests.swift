import Foundation
import Marquee
import MarqueeOrigin
import MarqueeSignage
import TestSupport
import Testing

/// A content source (`ContentFeed`) served by the loopback origin's `/static/` (ETag /
/// If-None-Match, as a CDN would): filtered, refreshed, the last good playlist kept through a
/// broken or missing feed, and a refresh that drops the playing item letting it finish.
@Suite(.serialized) struct ContentFeedTests {
    let dir: URL
    let origin: Origin

    init() async throws {
        dir = try Tools.tempDirectory("feeds")
        origin = try await LivePlaybackTests.origin(staticRoot: dir.path)
    }

    func write(_ json: String) throws {
        try Data(json.utf8).write(to: dir.appendingPathComponent("lobby.json"))
    }

    var feedURL: URL { origin.baseURL.appendingPathComponent("static/lobby.json") }

    static let first = """
        {"items": [
          {"id": "news", "url": "https://cdn.example/news.mpd", "tags": ["News", "live"]},
          {"id": "promo", "url": "media/promo.mp4", "tags": ["ads"]},
          {"id": "menu", "url": "menu.png", "tags": ["food"], "duration": 8}
        ], "repeat": "all"}
        """

    @Test func aFeedIsFilteredRefreshedAndKeptThroughFailures() async throws {
        defer { Task { await origin.stop() } }
        try write(Self.first)
        let feed = try await ContentFeed(
            url: feedURL, filter: try TagFilter("(not ads)"), interval: 3600, security: SDKTests.loopback)
        defer { feed.stop() }
        #expect(feed.current.items.map(\.id) == ["news", "menu"] && feed.current.repeatMode == .all)
        #expect(
            feed.current.items[1].url == origin.baseURL.appendingPathComponent("static/menu.png"),
            "relative to the feed")
        var changes = feed.changes.makeAsyncIterator()
        #expect(await changes.next()?.items.count == 2, "the first playlist is published")
        // Unchanged (a 304): nothing new.
        #expect(await feed.refresh() == false)
        // Changed: published, filtered.
        try write(
            Self.first.replacingOccurrences(
                of: #"{"id": "menu""#,
                with: #"{"id": "weather", "url": "https://cdn.example/w.m3u8", "tags": ["live"]}, {"id": "menu""#))
        #expect(await feed.refresh() == true)
        #expect(await changes.next()?.items.map(\.id) == ["news", "weather", "menu"])
        // Broken, then gone: each a typed failure, the last good playlist stays.
        var failures = feed.failures.makeAsyncIterator()
        try write(#"{"items": [{"url": "a.mp4", "duration": -3}]}"#)
        #expect(await feed.refresh() == false)
        let broken = await failures.next()
        #expect(
            broken?.code == .playlist && broken?.message.contains("items[0].duration") == true,
            "\(String(describing: broken))")
        try FileManager.default.removeItem(at: dir.appendingPathComponent("lobby.json"))
        #expect(await feed.refresh() == false)
        let gone = await failures.next()
        #expect(gone?.code == .network && gone?.message.contains("404") == true, "\(String(describing: gone))")
        #expect(feed.current.items.map(\.id) == ["news", "weather", "menu"])
    }

    @Test func aRefreshThatDropsThePlayingItemLetsItFinish() async throws {
        defer { Task { await origin.stop() } }
        try write(Self.first)
        let feed = try await ContentFeed(url: feedURL, interval: 3600, security: SDKTests.loopback)
        defer { feed.stop() }
        var queue = PlaylistQueue(feed.current)
        queue.start()
        #expect(queue.next()?.id == "promo")
        try write(
            Self.first.replacingOccurrences(
                of: #"{"id": "promo", "url": "media/promo.mp4", "tags": ["ads"]},"#, with: ""))
        #expect(await feed.refresh())
        queue.replace(with: feed.current)
        #expect(queue.current?.id == "promo", "the playing item goes on")
        #expect(
            queue.advance()?.id == "menu" && queue.advance()?.id == "news", "then the new list, from where it stood")
    }

    @Test func aFeedThatCannotStartIsATypedError() async throws {
        defer { Task { await origin.stop() } }
        func code(_ url: URL, interval: Double = 3600) async -> PlayerError.Code? {
            do { _ = try await ContentFeed(url: url, interval: interval, security: SDKTests.loopback) } catch {
                return error.code
            }
            return nil
        }
        #expect(await code(feedURL) == .network, "404")
        try write("{not json")
        #expect(await code(feedURL) == .playlist)
        #expect(await code(feedURL, interval: 0.5) == .invalidArgument)
        #expect(await code(URL(fileURLWithPath: "/tmp/feed.json")) == .invalidArgument)
    }
}
