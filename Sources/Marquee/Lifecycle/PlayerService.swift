public import ServiceLifecycle

extension Player: Service {
    /// Runs the player as a swift-service-lifecycle `Service`: plays, and on graceful shutdown
    /// (a `ServiceGroup` turns SIGTERM/SIGINT into one) or cancellation fades the sound out over
    /// 0.3 s and stops, so the outputs are closed cleanly (WAV finalised, display
    /// released). Returns early when playback ends by itself (on-demand end, fatal error).
    ///
    /// Under systemd (`Type=notify`, `WatchdogSec=`) it reports as a notify service: `READY=1`
    /// once playing, `WATCHDOG=1` every half watchdog period while pictures are being presented
    /// (so systemd restarts a box whose picture froze), `STOPPING=1` at shutdown. Outside
    /// systemd (no `$NOTIFY_SOCKET`) nothing is sent.
    ///
    /// ```swift
    /// let group = ServiceGroup(configuration: .init(
    ///     services: [player], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    /// try await group.run()
    /// ```
    public func run() async throws {
        let systemd = SystemdNotifier()
        try await play()
        systemd.ready(status: "playing")
        let watchdog = Task { [weak self] in
            guard let interval = systemd.watchdogInterval else { return }
            var presented = self?.status.framesPresented ?? 0
            while !Task.isCancelled {
                // systemd's period, not a poll: the watchdog is fed on its own schedule.
                try? await Task.sleep(for: .milliseconds(Int(interval * 1000)))
                guard let now = self?.status.framesPresented else { return }
                if now > presented { systemd.watchdog() }
                presented = now
            }
        }
        await cancelWhenGracefulShutdown { await self.waitUntilFinished() }
        watchdog.cancel()
        systemd.stopping()
        await stop(fadeOut: Self.shutdownFade)
    }

    /// How long the sound fades out on a graceful shutdown, seconds.
    package static let shutdownFade = 0.3
}
