import Foundation
import Testing

@testable import Marquee
@testable import MarqueeSignage

@Suite struct TagFilterTests {
    @Test func expressionsSelectTheTaggedItems() throws {
        let tags: [[String]] = [["Sport", "food"], ["sport", "comedy"], ["sport"], ["#Food"], ["news", "ads"], []]
        func selected(_ expression: String) throws -> [Int] {
            let filter = try TagFilter(expression)
            return tags.indices.filter { filter.matches(tags[$0]) }
        }
        #expect(try selected("sport") == [0, 1, 2])
        #expect(try selected("SPORT") == [0, 1, 2], "case-insensitive")
        #expect(try selected("#food") == [0, 3], "a leading # is no part of the tag")
        #expect(try selected("(and sport (or food comedy))") == [0, 1])
        #expect(try selected("(AND sport (Or food comedy))") == [0, 1], "operators too")
        #expect(try selected("(not ads)") == [0, 1, 2, 3, 5])
        #expect(try selected("(or (and sport (not food)) news)") == [1, 2, 4])
        #expect(try selected("  (and\n sport\tfood )  ") == [0], "any white space")
        #expect(try selected("(and sport)") == [0, 1, 2], "one operand")
        #expect(try selected("live:eu-west.2") == [], "tags with _ - . : are one tag")
    }

    /// Each malformed expression fails at the column where reading stopped, saying why.
    @Test(arguments: [
        ("", 1, "empty"),
        ("   ", 1, "empty"),
        ("(and sport", 1, "never closed"),
        ("(and sport (or food)", 1, "never closed"),
        ("sport)", 6, "without its '('"),
        ("sport food", 7, "(and …) or (or …)"),
        ("()", 2, "empty"),
        ("(xor a b)", 2, "'xor' is no operator"),
        ("( a b)", 3, "'a' is no operator"),
        ("(not a b)", 9, "not takes one operand, this one has 2"),
        ("(not)", 5, "not takes one operand, this one has 0"),
        ("(and)", 5, "and takes one or more"),
        ("(or sport $x)", 11, "'$' cannot be in a tag"),
        ("#", 1, "'#' alone"),
        ("(and (or a) ) )", 15, "without its '('"),
    ])
    func malformedExpressionsPointAtTheColumn(_ expression: String, _ column: Int, _ says: String) {
        #expect {
            _ = try TagFilter(expression)
        } throws: { error in
            guard let e = error as? TagFilter.SyntaxError else { return false }
            return e.column == column && e.message.contains(says)
        }
    }

    @Test func deepOrLongExpressionsAreRefusedNotRecursedInto() {
        let deep = String(repeating: "(not ", count: 10_000) + "a" + String(repeating: ")", count: 10_000)
        #expect(throws: TagFilter.SyntaxError.self) { _ = try TagFilter(deep) }
        let nested =
            String(repeating: "(not ", count: TagFilter.maxDepth) + "a"
            + String(repeating: ")", count: TagFilter.maxDepth)
        #expect(throws: Never.self) { _ = try TagFilter(nested) }
        #expect((try? TagFilter(nested))?.matches(["a"]) == (TagFilter.maxDepth % 2 == 0))
    }
}

@Suite struct PlaylistDocumentTests {
    @Test func theDocumentedFormatReads() throws {
        let json = """
            {"items": [
              {"url": "https://cdn.example/live/main.mpd", "id": "live", "tags": ["news"], "duration": 600, \
            "targetLatency": 4},
              {"url": "promo.mp4", "title": "Promo", "tags": ["ads"], "start": 2.5, "muted": true},
              {"url": "/srv/menu.PNG", "id": "menu", "fit": "cover", "future": {"ignored": true}},
              {"url": "https://cdn.example/vod/show.m3u8", "kind": "stream"}
            ], "repeat": "all", "shuffle": true}
            """
        let playlist = try Playlist(
            json: Data(json.utf8), relativeTo: URL(string: "https://cms.example/screens/lobby.json"))
        #expect(playlist.repeatMode == .all && playlist.shuffle)
        #expect(playlist.items.map(\.id) == ["live", "2", "menu", "4"])
        #expect(playlist.items.map(\.kind) == [.stream, .file, .image, .stream])
        #expect(playlist.items[1].url.absoluteString == "https://cms.example/screens/promo.mp4")
        #expect(playlist.items[1].startOffset == 2.5 && playlist.items[1].muted && playlist.items[1].title == "Promo")
        #expect(playlist.items[2].url.path == "/srv/menu.PNG" && playlist.items[2].fit == .cover)
        #expect(
            playlist.items[2].playingTime == PlaylistItem.defaultImageDuration && playlist.items[0].playingTime == 600)
        #expect(playlist.items[0].targetLatency == 4 && playlist.items[3].playingTime == nil)
        let filtered = playlist.filtered(by: try TagFilter("(not ads)"))
        #expect(filtered.items.map(\.id) == ["live", "menu", "4"] && filtered.repeatMode == .all)
    }

    /// Every malformed document is a `.playlist` error that says where.
    @Test(arguments: [
        ("{", "not a JSON object"),
        ("[]", "expected an object"),
        ("{}", "items: missing"),
        (#"{"items": {}}"#, "items: expected an array"),
        (#"{"items": [{}]}"#, "items[0].url: missing"),
        (#"{"items": [{"url": 5}]}"#, "items[0].url: expected a string"),
        (#"{"items": [{"url": "ftp://x/a.mp4"}]}"#, "items[0].url: \"ftp://x/a.mp4\" is no http"),
        (#"{"items": [{"url": "a.mp4", "duration": -1}]}"#, "items[0].duration: -1.0 s must be > 0"),
        (#"{"items": [{"url": "a.mp4", "duration": "10"}]}"#, "items[0].duration: expected a number"),
        (#"{"items": [{"url": "a.mp4", "start": -2}]}"#, "items[0].start"),
        (#"{"items": [{"url": "a.mp4", "targetLatency": 301}]}"#, "items[0].targetLatency: 301.0 s is outside"),
        (#"{"items": [{"url": "a.mp4", "fit": "zoom"}]}"#, "items[0].fit: \"zoom\" is none of"),
        (#"{"items": [{"url": "a.mp4", "kind": "audio"}]}"#, "items[0].kind: \"audio\" is none of"),
        (
            #"{"items": [{"url": "a.mp4", "id": "x"}, {"url": "b.mp4", "id": "x"}]}"#,
            "items[1]: id \"x\" is items[0]'s already"
        ),
        (#"{"items": [{"url": "a.mp4", "id": ""}]}"#, "items[0].id: empty"),
        (#"{"items": [{"url": "a.mp4", "tags": "sport"}]}"#, "items[0].tags: expected an array"),
        (#"{"items": [], "repeat": "forever"}"#, "repeat: \"forever\" is none of off, all, one"),
    ])
    func malformedDocumentsSayWhere(_ json: String, _ says: String) {
        #expect {
            _ = try Playlist(json: Data(json.utf8))
        } throws: { error in
            guard let e = error as? PlayerError else { return false }
            return e.code == .playlist && e.message.contains(says)
        }
    }

    @Test func oversizedDocumentsAreRefusedBeforeParsing() {
        let big = Data(repeating: UInt8(ascii: " "), count: Playlist.maxDocumentBytes + 1)
        #expect(throws: PlayerError.self) { _ = try Playlist(json: big) }
    }
}

@Suite struct PlaylistQueueTests {
    static func playlist(_ count: Int, repeat mode: RepeatMode = .off, shuffle: Bool = false) throws -> Playlist {
        try Playlist(
            items: (0..<count).map { PlaylistItem(id: "i\($0)", url: URL(string: "https://x.example/\($0).mp4")!) },
            repeatMode: mode, shuffle: shuffle)
    }

    @Test func repeatModesDecideWhatFollowsAnItemThatEnded() throws {
        var off = PlaylistQueue(try Self.playlist(3))
        #expect(off.start()?.id == "i0" && off.upcoming?.id == "i1")
        #expect(off.advance()?.id == "i1" && off.advance()?.id == "i2")
        #expect(off.upcoming == nil && off.advance() == nil && off.current == nil, "over after the last")
        var all = PlaylistQueue(try Self.playlist(3, repeat: .all))
        all.start()
        #expect([all.advance(), all.advance(), all.advance()].map { $0?.id } == ["i1", "i2", "i0"])
        var one = PlaylistQueue(try Self.playlist(3, repeat: .one))
        one.start()
        #expect(one.upcoming?.id == "i0" && one.advance()?.id == "i0" && one.advance()?.id == "i0")
        #expect(one.next()?.id == "i1", "a skip moves even under repeat one")
    }

    @Test func nextAndPreviousWrapAtBothEnds() throws {
        var q = PlaylistQueue(try Self.playlist(3))
        q.start()
        #expect(q.previous()?.id == "i2", "before the first: the last")
        #expect(q.next()?.id == "i0", "after the last: the first (repeat off too)")
        #expect(try q.jump(toID: "i1").id == "i1" && q.current?.id == "i1")
        #expect(try q.jump(toIndex: 2).id == "i2" && q.next()?.id == "i0")
        #expect(throws: PlayerError.self) { _ = try q.jump(toIndex: 3) }
        #expect(throws: PlayerError.self) { _ = try q.jump(toID: "nope") }
        var empty = PlaylistQueue(try Self.playlist(0))
        #expect(empty.start() == nil && empty.next() == nil && empty.previous() == nil && empty.advance() == nil)
    }

    @Test func shuffleIsAPermutationFromTheSeedAndNeverRepeatsAcrossAWrap() throws {
        let list = try Self.playlist(8, repeat: .all, shuffle: true)
        var a = PlaylistQueue(list, seed: 42)
        let b = PlaylistQueue(list, seed: 42)
        let c = PlaylistQueue(list, seed: 43)
        #expect(a.order == b.order && a.order != c.order, "reproducible from the seed")
        #expect(a.order.sorted() == Array(0..<8) && a.order != Array(0..<8))
        a.start()
        var played = [a.current!.id]
        for _ in 0..<(8 * 50 - 1) { played.append(a.advance()!.id) }
        for round in 0..<50 {
            #expect(Set(played[(round * 8)..<(round * 8 + 8)]).count == 8, "round \(round) plays each item once")
        }
        #expect(zip(played, played.dropFirst()).allSatisfy { $0 != $1 }, "never the same item twice in a row")
    }

    @Test func aReplacementKeepsThePlayingItem() throws {
        var q = PlaylistQueue(try Self.playlist(4, repeat: .all))
        q.start()
        q.advance()  // i1 playing
        // Still listed (elsewhere): it goes on there, and what follows is the new list's.
        let moved = try Playlist(
            items: ["i9", "i1", "i3"].map { PlaylistItem(id: $0, url: URL(string: "https://x.example/\($0).mp4")!) },
            repeatMode: .all)
        q.replace(with: moved)
        #expect(q.current?.id == "i1" && q.upcoming?.id == "i3")
        // Removed: it plays to its end, then the new list goes on from where it stood.
        let without = try Playlist(
            items: ["a", "b", "c"].map { PlaylistItem(id: $0, url: URL(string: "https://x.example/\($0).mp4")!) },
            repeatMode: .all)
        q.replace(with: without)
        #expect(q.current?.id == "i1" && q.orphan?.id == "i1" && q.upcoming?.id == "b")
        #expect(q.advance()?.id == "b" && q.orphan == nil && q.advance()?.id == "c" && q.advance()?.id == "a")
    }
}

/// What a ``PlaylistPlayer`` refuses before anything plays.
@Suite struct PlaylistPlayerArgumentTests {
    @Test func anEmptyPlaylistAndAJumpOutsideTheItemsAreTypedErrors() throws {
        let options = PlayerOptions(
            sources: [URL(string: "http://127.0.0.1:9/a.mpd")!], audioOutput: .null, videoOutput: .headless)
        #expect(throws: PlayerError.self) { try PlaylistPlayer(playlist: try Playlist(items: []), options: options) }
        do {
            _ = try PlaylistPlayer(playlist: try Playlist(items: []), options: options)
        } catch {
            #expect(error.code == .playlist)
        }
        let playlist = try Playlist(json: Data(#"{"items": [{"url": "http://127.0.0.1:9/a.mpd", "id": "a"}]}"#.utf8))
        let player = try PlaylistPlayer(playlist: playlist, options: options)
        do {
            try player.jump(toIndex: 3)
            Issue.record("a jump to index 3 of 1 item was taken")
        } catch {
            #expect(error.code == .invalidArgument && error.message.contains("3"), "\(error)")
        }
        do {
            try player.jump(toID: "nope")
            Issue.record("a jump to an unknown id was taken")
        } catch {
            #expect(error.code == .invalidArgument && error.message.contains("nope"), "\(error)")
        }
        #expect(player.current == nil && player.queue.playlist.items.map(\.id) == ["a"])
    }
}

/// A file item's length from its MP4 movie header (``MP4Duration``): ffmpeg's MP4s with the
/// index first and last, 2 s each; not an MP4: none.
@Suite struct MP4DurationTests {
    static func ffmpeg(_ args: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["ffmpeg", "-v", "error", "-y"] + args
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "ffmpeg \(args)")
    }

    @Test func anMP4TellsItsLength() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("mp4dur-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        for flags in ["+faststart", "-faststart"] {
            let file = dir.appendingPathComponent("clip\(flags).mp4")
            try Self.ffmpeg([
                "-f", "lavfi", "-i", "testsrc2=s=320x240:r=30:d=2", "-f", "lavfi", "-i", "sine=frequency=440:d=2",
                "-c:v", "libx264", "-c:a", "aac",
                "-movflags", flags, file.path,
            ])
            let seconds = try #require(MP4Duration.seconds(of: [UInt8](Data(contentsOf: file))), "\(flags)")
            #expect(abs(seconds - 2) < 0.05, "\(flags): \(seconds) s")
        }
        let png = dir.appendingPathComponent("still.png")
        try Self.ffmpeg(["-f", "lavfi", "-i", "testsrc2=s=320x240", "-frames:v", "1", png.path])
        #expect(MP4Duration.seconds(of: [UInt8](try Data(contentsOf: png))) == nil)
        #expect(MP4Duration.seconds(of: [0, 0, 0, 8, 0x6d, 0x6f, 0x6f, 0x76]) == nil, "an empty moov")
        #expect(MP4Duration.seconds(of: [0, 0, 0, 99, 0x6d, 0x6f]) == nil, "cut short")
    }
}
