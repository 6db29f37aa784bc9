import Testing

@testable import MarqueeStreaming

@Suite struct ABRTests {
    let ladder = [
        ABRController.Rendition(id: "360", bandwidth: 800_000, height: 360, frameRate: 30),
        ABRController.Rendition(id: "720", bandwidth: 2_500_000, height: 720, frameRate: 30),
        ABRController.Rendition(id: "1080", bandwidth: 5_000_000, height: 1080, frameRate: 60),
    ]

    /// 2 s segments at the rendition's bitrate over a link of `bps`.
    func download(_ abr: inout ABRController, _ r: ABRController.Rendition, link bps: Double) {
        let bytes = r.bandwidth * 2 / 8
        abr.downloaded(bytes: bytes, seconds: Double(bytes * 8) / bps)
    }

    @Test func stepsDownWithinOneSegmentAndBackUpWhenTheLinkReturns() {
        var abr = ABRController(renditions: ladder.reversed())
        #expect(abr.choose(buffer: 0).id == "360")  // nothing known: start low
        var pick = abr.choose(buffer: 0)
        for _ in 0..<6 {
            download(&abr, pick, link: 20_000_000)
            pick = abr.choose(buffer: 4)
        }
        #expect(pick.id == "1080")
        download(&abr, pick, link: 1_500_000)  // the link drops to 1.5 Mb/s: one segment
        pick = abr.choose(buffer: 4)
        #expect(pick.id == "360", "after one slow segment: \(pick.id)")
        var steps: [String] = []
        for _ in 0..<12 {
            download(&abr, pick, link: 20_000_000)
            pick = abr.choose(buffer: 4)
            steps.append(pick.id)
        }
        #expect(steps.last == "1080", "back up: \(steps)")
        #expect(steps.first == "360" || steps.first == "720")  // not at once: a rise must last
    }

    @Test func bufferRuleAndCapsAndPin() {
        var abr = ABRController(renditions: ladder)
        for _ in 0..<5 { download(&abr, ladder[0], link: 3_200_000) }
        #expect(abr.choose(buffer: 2).id == "720")  // 0.85 × 3.2 = 2.72 Mb/s
        #expect(abr.choose(buffer: 30).id == "1080")  // a full buffer may reach above the estimate
        var options = ABRController.Options()
        options.maxHeight = 720
        var capped = ABRController(renditions: ladder, options: options)
        #expect(capped.renditions.map(\.id) == ["360", "720"])
        for _ in 0..<5 { download(&capped, ladder[0], link: 50_000_000) }
        #expect(capped.choose(buffer: 30).id == "720")
        options = ABRController.Options()
        options.maxFrameRate = 30
        #expect(ABRController(renditions: ladder, options: options).renditions.count == 2)
        abr.pinned = "360"
        #expect(abr.choose(buffer: 30).id == "360")
    }

    @Test func pacedLowLatencyTransfersDoNotLowerTheEstimate() {
        var abr = ABRController(renditions: ladder)
        for _ in 0..<5 { download(&abr, ladder[1], link: 10_000_000) }
        let before = abr.estimate!
        // A 2 s chunked segment trickled out over its 2 s: 2.5 Mb/s, but paced by the encoder.
        abr.downloaded(bytes: 2_500_000 * 2 / 8, seconds: 2, paced: true)
        #expect(abr.estimate == before)
        abr.downloaded(bytes: 2_500_000 * 2 / 8, seconds: 2)  // the same, unpaced: believed
        #expect(abr.estimate! < before / 2)
    }

    @Test func abandonsADownloadThatWouldEmptyTheBuffer() {
        let abr = ABRController(renditions: ladder)
        // 1.25 MB segment, 100 kB after 1 s: 11.5 s more, 3 s buffered: abandon.
        #expect(abr.shouldAbandon(bytes: 100_000, of: 1_250_000, elapsed: 1, buffer: 3))
        // 1 MB after 1 s: 0.25 s more: keep.
        #expect(!abr.shouldAbandon(bytes: 1_000_000, of: 1_250_000, elapsed: 1, buffer: 3))
        // nothing lower
        #expect(!ABRController(renditions: [ladder[0]]).shouldAbandon(bytes: 1, of: 100, elapsed: 5, buffer: 0))
        // one chunk on a busy box: too early
        #expect(!abr.shouldAbandon(bytes: 32_768, of: 1_250_000, elapsed: 0.27, buffer: 3))
    }
}
