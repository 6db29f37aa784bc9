import Foundation
import Marquee
import MarqueeStreaming
import Testing

/// Every misuse of the public Player API is a typed error (and changes nothing), before any
/// media is involved.
@Suite struct PlayerMisuseTests {
    let url = URL(string: "http://127.0.0.1:9/live.mpd")!

    func code(_ body: () throws -> Void) -> PlayerError.Code? {
        do {
            try body()
            return nil
        } catch let error as PlayerError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func invalidOptionsAreRefusedAtCreation() {
        func refused(_ change: (inout PlayerOptions) -> Void) -> PlayerError.Code? {
            var options = PlayerOptions(sources: [url])
            change(&options)
            return code { _ = try Player(options: options) }
        }
        #expect(refused { $0.sources = [] } == .invalidOptionsSources)
        #expect(refused { $0.sources = [URL(string: "ftp://x/y.mpd")!] } == .invalidOptionsSources)
        #expect(refused { $0.targetLatency = -1 } == .invalidOptions)
        #expect(refused { $0.minRecoveryDelay = 100 } == .invalidOptions)  // > max
        #expect(refused { $0.rotation = 45 } == .invalidOptions)
        #expect(refused { $0.decodeThreads = 65 } == .invalidOptions)
        #expect(refused { $0.decodeThreads = -1 } == .invalidOptions)
        #expect(refused { $0.videoQueueFrames = 1 } == .invalidOptions)
        #expect(refused { $0.memoryTrimInterval = 0 } == .invalidOptions)
        #expect(refused { $0.memoryTrimInterval = .infinity } == .invalidOptions)
        #expect(refused { $0.memoryTrimInterval = 10 } == nil)
        #expect(refused { $0.maxDelay = -1 } == .invalidOptions)
        #expect(refused { $0.maxDelayBytes = -1 } == .invalidOptions)
        #expect(refused { $0.mainSourceRetryInterval = 0 } == .invalidOptions)
        #expect(refused { $0.mixing.adFade = -1 } == .invalidOptions)
        #expect(refused { $0.mixing.muteCrossfade = .nan } == .invalidOptions)
        #expect(refused { $0.mixing.loopCrossfade = 6 } == .invalidOptions)
        #expect(refused { $0.mixing.defaultAdDuration = 0 } == .invalidOptions)
        #expect(refused { $0.mixing.adCreatives = [URL(string: "rtsp://x/ad")!] } == .invalidOptions)
        #expect(refused { $0.sync.minRate = 1.5 } == .invalidOptions)
        #expect(refused { _ in } == nil)
        #expect(
            code { _ = try Player(options: PlayerOptions(sources: [])) }
                == .invalidOptionsSources)
        #expect(
            code { _ = try Player(options: PlayerOptions(sources: [url], targetLatency: .nan)) }
                == .invalidOptions)
    }

    @Test func callsThatNeedPlaybackOrValidArguments() throws {
        let player = try Player(options: PlayerOptions(sources: [url]))
        #expect(code { try player.setDelay(1) } == .state)
        #expect(code { try player.pause() } == .state)
        #expect(code { try player.setDelay(-1) } == .invalidOptions)
        #expect(code { try player.setDelay(.infinity) } == .invalidOptions)
        #expect(code { try player.setVolume(1.5) } == .invalidOptions)
        #expect(code { try player.setVolume(-0.1) } == .invalidOptions)
        #expect(code { try player.setTargetLatency(0) } == .invalidOptions)
        #expect(code { try player.setTargetLatency(301) } == .invalidOptions)
        #expect(code { try player.schedule(.streamerMuted, at: -1) } == .invalidOptions)
        #expect(code { try player.schedule(.adBreakStart(creative: nil), at: 10, duration: 0) } == .invalidOptions)
        #expect(code { try player.schedule(.adBreakStart(creative: nil), at: .nan) } == .invalidOptions)
        // Nothing above changed the player.
        #expect(player.volume == 1 && !player.isMuted && player.state == .idle)
        #expect(code { try player.setVolume(0.5, muted: true) } == nil)
        #expect(player.volume == 0.5 && player.isMuted)
        #expect(code { try player.schedule(.streamerMuted, at: 5, duration: 2) } == nil)
        player.resume()  // not paused: nothing
        #expect(player.streamType == .unknown && player.source == nil && player.qualities.isEmpty)
    }

    @Test func updateOptionsAndDispose() async throws {
        let player = try Player(options: PlayerOptions(sources: [url]))
        var bad = player.options
        bad.targetLatency = -3
        #expect(code { try player.updateOptions(bad) } == .invalidOptions)
        #expect(player.options.targetLatency == 3)  // unchanged
        var good = player.options
        good.targetLatency = 5
        good.muted = true
        good.minRecoveryDelay = 2
        #expect(code { try player.updateOptions(good) } == nil)
        #expect(player.options.targetLatency == 5 && player.options.minRecoveryDelay == 2 && player.isMuted)
        await player.close()
        await #expect(throws: PlayerError.self) { try await player.play() }
        // The event sequence is finished: draining it ends (within a second, or the test fails).
        let drained = await withTaskGroup(of: Bool.self) { group in
            group.addTask {
                for await _ in player.events {}
                return true
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(1))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        #expect(drained, "the events did not finish after dispose()")
    }
}
