import Foundation
import Marquee
import TestSupport
import Testing

/// Every shipped board profile (boards/*.json) loads and validates; the loader applies the
/// documented defaults and refuses unknown fields, wrong types, out-of-range values and names
/// that differ from the file, with a typed error naming the field.
@Suite struct BoardProfileTests {
    static let boards = Tools.packageRoot.appendingPathComponent("boards", isDirectory: true)

    /// Writes `json` as `<name>.json` in a fresh directory and loads it.
    private func load(_ json: String, name: String = "x") throws -> BoardProfile {
        let dir = try Tools.tempDirectory("boards")
        defer { try? FileManager.default.removeItem(at: dir) }
        let url = dir.appendingPathComponent("\(name).json")
        try json.write(to: url, atomically: true, encoding: .utf8)
        return try BoardProfile.read(from: url)
    }

    private func refused(_ json: String, field: String?, code: BoardProfileError.Code = .invalid) {
        #expect {
            _ = try load(json)
        } throws: { error in
            guard let e = error as? BoardProfileError else { return false }
            return e.code == code && e.field == field && e.board == "x"
        }
    }

    private let minimal = #"{"schema": 1, "name": "x", "description": "d", "arch": "aarch64""#

    @Test func everyShippedProfileLoads() throws {
        let names = BoardProfile.available(searchPaths: [Self.boards])
        for required in ["generic-x86_64", "generic-headless", "raspberrypi4", "raspberrypi5", "qemu-virt"] {
            #expect(names.contains(required))
        }
        #expect(names.contains { $0.hasPrefix("rk35") }, "a Rockchip profile")
        #expect(names.contains { $0.hasPrefix("amlogic") }, "an Amlogic profile")
        for name in names {
            let p = try BoardProfile.load(named: name, searchPaths: [Self.boards])
            #expect(p.name == name)
            #expect(!p.description.isEmpty)
        }
    }

    @Test func raspberryPi4CarriesItsQuirks() throws {
        let p = try BoardProfile.load(named: "raspberrypi4", searchPaths: [Self.boards])
        #expect(p.arch == "aarch64")
        #expect(p.video.hardwareRotations == [0, 180])
        #expect(p.audio.outputSpec == "alsa:sysdefault:CARD=vc4hdmi0")
        #expect(p.decode.decoders.first == "h264_v4l2m2m")
        #expect(p.decode.decoderList == "h264_v4l2m2m,h264")
        let pi5 = try BoardProfile.load(named: "raspberrypi5", searchPaths: [Self.boards])
        #expect(!pi5.decode.decoders.contains { $0.hasSuffix("_v4l2m2m") }, "Pi 5 has no H.264 block")
        let headless = try BoardProfile.load(named: "generic-headless", searchPaths: [Self.boards])
        #expect(headless.video.outputSpec == "headless")
    }

    @Test func absentFieldsTakeTheDocumentedDefaults() throws {
        let p = try load(minimal + "}")
        #expect(p.video.output == "drm" && p.video.card == nil && p.video.connector == nil)
        #expect(p.video.plane == .primary && p.video.mode == "preferred" && p.video.rotation == 0)
        #expect(p.video.hardwareRotations == [0] && p.video.format == "XRGB8888" && p.video.queueFrames == 0)
        #expect(p.audio.pcm == "default" && p.audio.sampleRate == 48000 && p.audio.channels == 2)
        #expect(p.audio.bufferTimeMs == 60 && p.audio.periodTimeMs == 10)
        #expect(p.decode.decoders.isEmpty && p.decode.decoderList == nil && p.decode.threads == 0)
        #expect(p.decode.maxWidth == 1920 && p.decode.maxHeight == 1080 && p.decode.maxFps == 60)
        #expect(p.memoryBudgetMiB == 64)
        #expect(p.video.outputSpec == "drm")
        let q = try load(
            minimal
                + #", "video": {"card": "/dev/dri/card1", "connector": "HDMI-A-1", "mode": "1280x720@60", "plane": 3}}"#
        )
        #expect(q.video.outputSpec == "drm:/dev/dri/card1,HDMI-A-1,1280x720")
        #expect(q.video.plane == .index(3))
    }

    @Test func badProfilesAreRefusedNamingTheField() {
        refused(minimal + #", "colour": "red"}"#, field: "colour")
        refused(minimal + #", "video": {"rotate": 90}}"#, field: "video.rotate")
        refused(minimal + #", "audio": {"buffer_time_ms": "60"}}"#, field: "audio.buffer_time_ms")
        refused(#"{"schema": 1, "name": "x", "description": "d"}"#, field: "arch")
        refused(minimal + #", "video": {"rotation": 45}}"#, field: "video.rotation")
        refused(minimal + #", "video": {"hardware_rotations": [180]}}"#, field: "video.hardware_rotations")
        refused(minimal + #", "video": {"mode": "1080p"}}"#, field: "video.mode")
        refused(minimal + #", "audio": {"buffer_time_ms": 40, "period_time_ms": 30}}"#, field: "audio.period_time_ms")
        refused(minimal + #", "decode": {"decoders": ["h264 v4l2"]}}"#, field: "decode.decoders")
        refused(minimal + #", "memory_budget_mib": 1}"#, field: "memory_budget_mib")
        refused(#"{"schema": 1, "name": "y", "description": "d", "arch": "aarch64"}"#, field: "name")
        refused("not json", field: nil, code: .unreadable)
    }

    @Test func unknownNamesAreNotFound() {
        for name in ["nosuch", "../etc/passwd", ""] {
            #expect {
                _ = try BoardProfile.read(named: name, searchPaths: [Self.boards])
            } throws: { error in
                (error as? BoardProfileError)?.code == .notFound
            }
        }
    }
}
