import Foundation

/// What the origin serves and where it listens.
public struct OriginConfiguration: Sendable {
    /// Address to bind (loopback by default).
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks a free port (``Origin/start()`` returns the bound one).
    public var port: Int = 0
    /// Asset name -> directory holding a VOD DASH asset (one `.mpd` + its segments). When the
    /// directory holds several MPDs, `manifest.mpd` (any case) is used, else the only one, else the
    /// first by name.
    public var assetRoots: [String: String]
    /// A directory served as plain files under `/static/` (e.g. ffmpeg's own live DASH output).
    public var staticRoot: String?

    public init(host: String = "127.0.0.1", port: Int = 0, assetRoots: [String: String]) {
        self.host = host
        self.port = port
        self.assetRoots = assetRoots
    }

    /// The default set: "generated" -> <repo>/assets/generated (made by scripts/make-assets), plus
    /// "testpic_2s" -> ../shared/media/dashif-livesim2/testpic_2s, "testpic_abr" ->
    /// ../shared/media/dashif-livesim2/testpic_2s_low_delay (video at 1080p, 720p and 360p: ABR)
    /// and "wave" -> ../shared/media/dashif-livesim2/WAVE/av when present.
    public static func defaultAssets(repoRoot: String) -> [String: String] {
        let root = URL(fileURLWithPath: repoRoot).standardizedFileURL
        let media = root.deletingLastPathComponent().appendingPathComponent("shared/media/dashif-livesim2")
        let candidates = [
            "generated": root.appendingPathComponent("assets/generated"),
            "generated-ll": root.appendingPathComponent("assets/generated-ll"),
            "generated-1080": root.appendingPathComponent("assets/generated-1080"),  // scripts/bench-anchors makes it
            "testpic_2s": media.appendingPathComponent("testpic_2s"),
            "testpic_abr": media.appendingPathComponent("testpic_2s_low_delay"),
            "wave": media.appendingPathComponent("WAVE/av"),
        ]
        var assets: [String: String] = [:]
        for (name, url) in candidates {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue {
                assets[name] = url.path
            }
        }
        return assets
    }
}
