import Foundation
import Testing

@testable import MarqueeStreaming

@Suite struct HLSParserTests {
    let base = URL(string: "http://origin.test/live/stream/master.m3u8")!

    func media(_ text: String) throws -> HLSMediaPlaylist {
        guard case .media(let p) = try HLSPlaylist.parse(text, url: base) else {
            throw ManifestError(.notAManifest, "not a media playlist")
        }
        return p
    }

    @Test func multivariantWithAudioRenditions() throws {
        let text = """
            #EXTM3U
            #EXT-X-INDEPENDENT-SEGMENTS
            #EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID="aac",NAME="English, main",LANGUAGE="en",\
            DEFAULT=YES,AUTOSELECT=YES,URI="audio/en.m3u8"
            #EXT-X-STREAM-INF:BANDWIDTH=2800000,AVERAGE-BANDWIDTH=2500000,CODECS="avc1.64001f,mp4a.40.2",\
            RESOLUTION=1280x720,FRAME-RATE=30.000,AUDIO="aac"
            v720/index.m3u8
            #EXT-X-STREAM-INF:BANDWIDTH=800000,RESOLUTION=640x360,AUDIO="aac"
            http://cdn.test/v360/index.m3u8
            """
        guard case .multivariant(let m) = try HLSPlaylist.parse(text, url: base) else {
            Issue.record("not multivariant")
            return
        }
        #expect(m.independentSegments)
        #expect(m.variants.count == 2)
        #expect(m.variants[0].uri.absoluteString == "http://origin.test/live/stream/v720/index.m3u8")
        #expect(m.variants[0].bandwidth == 2_800_000 && m.variants[0].averageBandwidth == 2_500_000)
        #expect(m.variants[0].codecs == "avc1.64001f,mp4a.40.2")  // a quoted value keeps its comma
        #expect(m.variants[0].width == 1280 && m.variants[0].height == 720 && m.variants[0].frameRate == 30)
        #expect(
            m.variants[1].uri.absoluteString == "http://cdn.test/v360/index.m3u8" && m.variants[1].audioGroup == "aac")
        #expect(
            m.renditions == [
                HLSRendition(
                    kind: .audio, groupID: "aac", name: "English, main", language: "en", isDefault: true,
                    autoselect: true,
                    uri: URL(string: "http://origin.test/live/stream/audio/en.m3u8"))
            ])
    }

    @Test func liveMediaPlaylistWithEverything() throws {
        let cue = SpliceInfo.spliceInsertSection(eventID: 7, outOfNetwork: true, duration: 30)
        let hex = "0x" + cue.map { String(format: "%02X", $0) }.joined()
        let p = try media(
            """
            #EXTM3U
            #EXT-X-VERSION:7
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:100
            #EXT-X-DISCONTINUITY-SEQUENCE:3
            #EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=1.0,HOLD-BACK=6
            #EXT-X-PART-INF:PART-TARGET=0.2
            #EXT-X-MAP:URI="init.mp4"
            #EXT-X-KEY:METHOD=AES-128,URI="key.bin",IV=0x000102030405060708090A0B0C0D0E0F
            #EXT-X-PROGRAM-DATE-TIME:2026-11-22T10:00:00.000Z
            #EXTINF:2.000,first
            s100.m4s
            #EXT-X-DATERANGE:ID="ad-7",CLASS="com.example.ad",START-DATE="2026-11-22T10:00:02Z",PLANNED-DURATION=30,\
            SCTE35-OUT=\(hex),X-AD-ID="abc"
            #EXT-X-CUE-OUT:30
            #EXT-X-BYTERANGE:1000@0
            #EXTINF:2.0,
            big.m4s
            #EXT-X-BYTERANGE:500
            #EXTINF:1.5,
            big.m4s
            #EXT-X-DISCONTINUITY
            #EXT-X-KEY:METHOD=NONE
            #EXT-X-CUE-IN
            #EXTINF:2,
            s103.m4s
            #EXT-X-PART:DURATION=0.2,URI="s104.p0.m4s",INDEPENDENT=YES
            #EXT-X-PART:DURATION=0.2,URI="s104.p1.m4s"
            #EXT-X-PRELOAD-HINT:TYPE=PART,URI="s104.p2.m4s"
            """)
        #expect(p.version == 7 && p.targetDuration == 2 && p.mediaSequence == 100 && p.isLive)
        #expect(p.canBlockReload && p.partHoldBack == 1.0 && p.holdBack == 6 && p.partTarget == 0.2)
        #expect(p.segments.map(\.sequence) == [100, 101, 102, 103])
        #expect(p.segments.map(\.discontinuitySequence) == [3, 3, 3, 4] && p.segments[3].discontinuity)
        #expect(p.segments[0].title == "first" && p.segments[1].title == nil)
        #expect(p.segments.allSatisfy { $0.map?.uri.lastPathComponent == "init.mp4" })
        #expect(p.segments[0].key?.method == .aes128 && p.segments[0].key?.iv == Array(0...15))
        #expect(p.segments[2].key != nil && p.segments[3].key == nil)
        #expect(p.segments[1].byteRange == HLSByteRange(length: 1000, offset: 0))
        #expect(p.segments[2].byteRange == HLSByteRange(length: 500, offset: 1000))  // continues the previous range
        let start = XSDateTime.date("2026-11-22T10:00:00Z")!
        #expect(p.segments.map { $0.programDateTime?.timeIntervalSince(start) } == [0, 2, 4, 5.5])  // carried forward
        #expect(p.segments[1].cueOut && p.segments[1].cueOutDuration == 30 && p.segments[3].cueIn)
        let range = try #require(p.dateRanges.first)
        #expect(range.id == "ad-7" && range.plannedDuration == 30 && range.clientAttributes == ["X-AD-ID": "abc"])
        #expect(
            try SpliceInfo(bytes: range.scte35Out!).command
                == .spliceInsert(.init(eventID: 7, cancelled: false, outOfNetwork: true, breakDuration: 30)))
        #expect(
            p.pendingParts.map(\.uri.lastPathComponent) == ["s104.p0.m4s", "s104.p1.m4s"]
                && p.pendingParts[0].independent)
        #expect(p.preloadHint?.lastPathComponent == "s104.p2.m4s")
        #expect(p.nextSequence == 104 && abs(p.totalDuration - 7.5) < 1e-9)
    }

    @Test func vodAndEventPlaylists() throws {
        let vod = try media(
            """
            #EXTM3U\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n#EXTINF:4,\na.ts\n#EXTINF:3.2,\nb.ts\n\
            #EXT-X-ENDLIST\n
            """
        )
        #expect(vod.playlistType == .vod && vod.endList && !vod.isLive && vod.segments.count == 2)
        let event = try media(
            "#EXTM3U\r\n#EXT-X-TARGETDURATION:4\r\n#EXT-X-PLAYLIST-TYPE:EVENT\r\n#EXTINF:4,\r\na.ts\r\n")
        #expect(event.playlistType == .event && event.isLive && event.segments.first?.uri.lastPathComponent == "a.ts")
    }

    @Test func badPlaylistsAreTypedErrorsWithTheLine() {
        let cases: [(String, String)] = [
            ("#EXTM4U\n", "not an HLS playlist"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:abc,\na.ts\n", "line 3"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\na.ts\n", "without #EXTINF"),
            ("#EXTM3U\n#EXT-X-STREAM-INF:RESOLUTION=1x1\nv.m3u8\n", "BANDWIDTH"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-KEY:METHOD=ROT13,URI=\"k\"\n", "METHOD"),
            ("#EXTM3U\n#EXT-X-MAP:URI=\"init.mp4\n", "unterminated"),
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-BYTERANGE:100\n#EXTINF:2,\na.ts\n", "previous range"),
            ("#EXTM3U\n#EXTINF:2,\na.ts\n", "TARGETDURATION"),
        ]
        for (text, expected) in cases {
            do {
                _ = try HLSPlaylist.parse(text, url: base)
                Issue.record("accepted: \(text)")
            } catch {
                #expect(error.message.contains(expected), "\(error.message) (wanted \(expected))")
            }
        }
    }

    /// What packagers and hand-edited playlists write in the wild, each parsed as meant.
    @Test func quirksSeenInTheWild() throws {
        let pdt = 1_795_428_000.0  // 2026-11-23T10:00:00Z
        let cases: [(String, String, Int, [Double?])] = [
            (
                "+0000 offset",
                """
                #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00.000+0000\n#EXTINF:2,\n\
                a.ts\n
                """,
                1, [pdt]
            ),
            (
                "+00:00 offset",
                """
                #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00+00:00\n#EXTINF:2,\n\
                a.ts\n
                """,
                1, [pdt]
            ),
            (
                "PDT after EXTINF",
                """
                #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n#EXT-X-PROGRAM-DATE-TIME:2026-11-23T10:00:00Z\na.ts\n\
                #EXTINF:2,\nb.ts\n
                """,
                2, [pdt, pdt + 2]
            ),
            (
                "blank lines, CR LF", "#EXTM3U\r\n\r\n#EXT-X-TARGETDURATION:2\r\n\r\n#EXTINF:2,\r\n\r\na.ts\r\n", 1,
                [nil]
            ),
            ("integer EXTINF without comma", "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2\na.ts\n", 1, [nil]),
            (
                "byte ranges",
                """
                #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI="m.mp4",BYTERANGE="700@0"\n#EXTINF:2,\n\
                #EXT-X-BYTERANGE:1000@700\nm.mp4\n#EXTINF:2,\n#EXT-X-BYTERANGE:1000\nm.mp4\n
                """,
                2, [nil, nil]
            ),
            (
                "EXT-X-MAP change",
                """
                #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-MAP:URI="i1.mp4"\n#EXTINF:2,\na.m4s\n#EXT-X-DISCONTINUITY\n\
                #EXT-X-MAP:URI="i2.mp4"\n#EXTINF:2,\nb.m4s\n
                """,
                2, [nil, nil]
            ),
            ("byte order mark", "\u{FEFF}#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\na.ts\n", 1, [nil]),
            (
                "unknown tags, title with commas",
                """
                #EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXT-X-FOO:bar\n#EXT-X-ALLOW-CACHE:NO\n\
                #EXTINF:2.000,title, with comma\na.ts\n
                """,
                1, [nil]
            ),
            ("blanks around values", "#EXTM3U\n#EXT-X-TARGETDURATION: 2\n#EXTINF: 2.0 ,\n a.ts \n", 1, [nil]),
        ]
        for (name, text, count, dates) in cases {
            let p = try media(text)
            #expect(
                p.segments.count == count && p.segments.map { $0.programDateTime?.timeIntervalSince1970 } == dates,
                "\(name)")
            #expect(p.segments.allSatisfy { $0.duration == 2 }, "\(name): durations \(p.segments.map(\.duration))")
        }
        guard
            case .multivariant(let m) = try HLSPlaylist.parse(
                """
                #EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1000000\nlow.m3u8\n\
                #EXT-X-STREAM-INF:BANDWIDTH=3000000,RESOLUTION=1280X720\nhi.m3u8\n
                """,
                url: base)
        else {
            Issue.record("not a multivariant playlist")
            return
        }
        #expect(
            m.variants.count == 2 && m.variants[0].codecs == nil && m.variants[1].height == 720,
            "variants without CODECS, 1280X720")
    }

    /// Hostile sizes are typed errors before any work in proportion to them.
    @Test func oversizedPlaylistsAreRefused() {
        let segment = "#EXTINF:2,\na.ts\n"
        let cases: [(String, String)] = [
            ("#EXTM3U\n#EXT-X-TARGETDURATION:2\n" + String(repeating: "\n", count: 600_000), "lines"),
            (
                "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n" + String(repeating: "a", count: 70_000) + ".ts\n",
                "line 4"
            ),
            (
                "#EXTM3U\n#EXT-X-MAP:" + (0..<300).map { "X\($0)=1" }.joined(separator: ",") + "\n" + segment,
                "attributes"
            ),
            ("#EXTM3U\n" + String(repeating: segment, count: 600_000), "bytes"),
        ]
        for (text, expected) in cases {
            do {
                _ = try HLSPlaylist.parse(text, url: base)
                Issue.record("accepted a playlist of \(text.utf8.count) bytes")
            } catch {
                #expect(
                    error.code == .tooLarge && error.message.contains(expected), "\(error.message) (wanted \(expected))"
                )
            }
        }
        // Just under the limits: a 24-hour window of 2 s segments parses.
        let day = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n" + String(repeating: segment, count: 43_200)
        #expect((try? media(day))?.segments.count == 43_200)
    }

    /// AES-128 keys reach the presentation: an explicit IV as given, else the media sequence
    /// number big-endian; SAMPLE-AES is refused.
    @Test func encryptedSegmentsCarryTheirKeyAndIV() throws {
        let text = """
            #EXTM3U
            #EXT-X-TARGETDURATION:2
            #EXT-X-MEDIA-SEQUENCE:258
            #EXT-X-PLAYLIST-TYPE:VOD
            #EXT-X-KEY:METHOD=AES-128,URI="k1.bin"
            #EXTINF:2,
            a.ts
            #EXT-X-KEY:METHOD=AES-128,URI="k2.bin",IV=0x000102030405060708090A0B0C0D0E0F
            #EXTINF:2,
            b.ts
            #EXT-X-KEY:METHOD=NONE
            #EXTINF:2,
            c.ts
            #EXT-X-ENDLIST
            """
        let mpd = try HLSPresentation.mpd(video: try media(text), audio: nil, variant: nil)
        let keys = try #require(
            mpd.periods.first?.adaptationSets.first?.representations.first?.segmentTemplate?.segmentKeys)
        #expect(
            keys[258]?.url.lastPathComponent == "k1.bin" && keys[258]?.iv == [UInt8](repeating: 0, count: 14) + [1, 2])
        #expect(keys[259]?.url.lastPathComponent == "k2.bin" && keys[259]?.iv == Array(0...15))
        #expect(keys[260] == nil)
        #expect(throws: ManifestError.self) {
            try HLSPresentation.mpd(
                video: try media(
                    text.replacingOccurrences(
                        of: "METHOD=AES-128,URI=\"k1.bin\"", with: "METHOD=SAMPLE-AES,URI=\"k1.bin\"")), audio: nil,
                variant: nil)
        }
    }

    /// ffmpeg's own HLS output (fMP4 and MPEG-TS) parses, segment for segment.
    @Test(arguments: ["fmp4", "mpegts"])
    func ffmpegsPlaylistsParse(type: String) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("hls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let ffmpeg = Process()
        ffmpeg.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        ffmpeg.arguments = [
            "ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
            "testsrc2=size=160x120:rate=25:duration=6", "-f", "lavfi", "-i",
            "sine=f=440:duration=6", "-c:v", "libx264", "-g", "25", "-c:a", "aac", "-f", "hls", "-hls_time", "2",
            "-hls_playlist_type", "vod",
            "-hls_segment_type", type, "-hls_flags", "program_date_time", dir.appendingPathComponent("index.m3u8").path,
        ]
        try ffmpeg.run()
        ffmpeg.waitUntilExit()
        try #require(ffmpeg.terminationStatus == 0)
        let url = dir.appendingPathComponent("index.m3u8")
        let p = try media(String(contentsOf: url, encoding: .utf8))
        #expect(p.endList && p.playlistType == .vod && p.segments.count == 3)
        #expect(abs(p.totalDuration - 6) < 0.1)
        #expect(p.segments.allSatisfy { $0.programDateTime != nil })
        #expect((type == "fmp4") == (p.segments.first?.map != nil))

        // As a presentation: TS segments have no init segment and carry the audio muxed.
        let rep = try #require(
            HLSPresentation.mpd(video: p, audio: nil, variant: nil).periods.first?.adaptationSets.first?.representations
                .first)
        #expect(rep.isTransportStream == (type == "mpegts") && rep.muxesAudio)
        #expect((rep.segmentTemplate?.initialization == nil) == (type == "mpegts"))
        guard type == "mpegts" else { return }
        // The first PTS as libavformat reads it, and moved across the 2³³ wrap.
        let segment = try Data(
            contentsOf: dir.appendingPathComponent(try #require(p.segments.first?.uri.lastPathComponent)))
        let first = try #require(TransportStreamTimestamps.firstPTS(segment))
        #expect(first == UInt64(try ffprobeFirstVideoPTS(segment, in: dir)))
        let target = TransportStreamTimestamps.wrap - 45_000  // half a second before the wrap
        let moved = TransportStreamTimestamps.shifted(Array(segment), by: Int64(target) - Int64(first))
        #expect(TransportStreamTimestamps.firstPTS(moved) == target)
        // (libavformat unwraps timestamps this close to the wrap to negative ones: the same instant)
        let probed = Int64(try ffprobeFirstVideoPTS(Data(moved), in: dir))
        let wrap = Int64(TransportStreamTimestamps.wrap)
        #expect(UInt64((probed % wrap + wrap) % wrap) == target, "ffprobe: \(probed)")
        #expect(moved.count == segment.count)
    }

    private func ffprobeFirstVideoPTS(_ bytes: Data, in dir: URL) throws -> Int {
        let file = dir.appendingPathComponent("probe-\(UUID().uuidString).ts")
        try bytes.write(to: file)
        let probe = Process()
        let out = Pipe()
        probe.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        probe.arguments = [
            "ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "packet=pts", "-of", "csv=p=0",
            file.path,
        ]
        probe.standardOutput = out
        try probe.run()
        let text = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        probe.waitUntilExit()
        return try #require(text.split(separator: "\n").first.flatMap { Int($0.filter { $0.isNumber || $0 == "-" }) })
    }

    /// Segment URIs resolve as RFC 3986 says, whether by the plain-path shortcut or the
    /// general way: the written answers, and Foundation's own resolution for each.
    @Test(arguments: [
        ("http://origin.test/live/stream/0.m3u8", "0/42.m4s", "http://origin.test/live/stream/0/42.m4s"),
        (
            "http://origin.test/live/stream/0.m3u8?token=a/b", "seg-42.ts?x=1:2&y=../z",
            "http://origin.test/live/stream/seg-42.ts?x=1:2&y=../z"
        ),
        ("http://origin.test:8080/a/b/", "c.ts", "http://origin.test:8080/a/b/c.ts"),
        ("http://origin.test", "c.ts", "http://origin.test/c.ts"),
        ("http://origin.test/live/x.m3u8#frag", "v1/c.ts", "http://origin.test/live/v1/c.ts"),
        ("http://origin.test/a/b/x.m3u8", "../c.ts", "http://origin.test/a/c.ts"),
        ("http://origin.test/a/b/x.m3u8", "./c.ts", "http://origin.test/a/b/c.ts"),
        ("http://origin.test/a/b/x.m3u8", "d/./../c.ts", "http://origin.test/a/b/c.ts"),
        ("http://origin.test/a/b/x.m3u8", "d/..", "http://origin.test/a/b/"),
        ("http://origin.test/a/b/x.m3u8", "/c.ts", "http://origin.test/c.ts"),
        ("http://origin.test/a/b/x.m3u8", "//cdn.test/c.ts", "http://cdn.test/c.ts"),
        ("http://origin.test/a/b/x.m3u8", "https://cdn.test/c.ts", "https://cdn.test/c.ts"),
        ("http://origin.test/a/b/x.m3u8", "?q=1", "http://origin.test/a/b/x.m3u8?q=1"),
        ("http://origin.test/a/b/x.m3u8", "c%20d.ts", "http://origin.test/a/b/c%20d.ts"),
        ("http://origin.test/a/b/x.m3u8", "..c.ts", "http://origin.test/a/b/..c.ts"),
    ])
    func segmentURIsResolve(base: String, uri: String, expected: String) throws {
        let text = "#EXTM3U\n#EXT-X-TARGETDURATION:2\n#EXTINF:2,\n\(uri)\n"
        guard case .media(let p) = try HLSPlaylist.parse(text, url: URL(string: base)!) else {
            throw ManifestError(.notAManifest, "not a media playlist")
        }
        #expect(p.segments.first?.uri.absoluteString == expected)
        #expect(p.segments.first?.uri == URL(string: uri, relativeTo: URL(string: base)!)?.absoluteURL)
    }
}
