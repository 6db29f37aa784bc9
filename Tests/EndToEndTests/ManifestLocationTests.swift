import Foundation
import Marquee
import TestSupport
import Testing

/// Where a manifest really is: behind a redirect (relative URLs resolve against where it came
/// from, which alone serves them), or moved by its own `Location` (reloads go there, the old URL
/// answers 410).
extension LivePlaybackTests {
    @Test(arguments: ["redirect DASH", "redirect HLS", "Location"])
    func aManifestThatMovedIsFollowed(_ how: String) async throws {
        let origin = try await Self.origin()
        defer { Task { await origin.stop() } }
        let live = origin.manifestURL(
            asset: "generated", options: ["segtimeline_1"] + (how == "Location" ? ["location_1"] : []))
        var url = live
        if how.hasPrefix("redirect") {
            // /moved/… answers a manifest with a 302 to /live/…, and nothing else: the segments'
            // relative URLs work only against the manifest's final URL.
            let path = live.path.replacingOccurrences(of: "/live/", with: "/moved/")
            url = URL(string: path, relativeTo: origin.baseURL)!.absoluteURL
            if how.hasSuffix("HLS") { url = url.deletingLastPathComponent().appendingPathComponent("master.m3u8") }
        }
        let run = try await Self.play(url, seconds: 16, audio: { _ in .null })
        let (share, inOrder) = Self.presentedShare(run.frames)
        #expect(run.frames.count > 330, "\(run.frames.count) pictures")
        #expect(
            share >= 0.99 && inOrder,
            "\(share * 100) % of the pictures, in order: \(inOrder); \(Self.holes(run.frames))")
        let errors = run.events.compactMap { if case .error(let e, _) = $0 { e.message } else { nil } }
        #expect(errors.isEmpty, "\(errors)")
        print(String(format: "manifest %@: %d pictures, %.1f %% of those due", how, run.frames.count, share * 100))
    }
}
