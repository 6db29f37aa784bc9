public import ServiceLifecycle

extension Player: Service {
    /// Runs the player as a swift-service-lifecycle `Service`: plays, and on graceful shutdown
    /// (a `ServiceGroup` turns SIGTERM/SIGINT into one) or cancellation fades the sound out over
    /// 0.3 s and stops, so the outputs are closed cleanly (WAV finalised, display
    /// released). Returns early when playback ends by itself (on-demand end, fatal error).
    ///
    /// ```swift
    /// let group = ServiceGroup(configuration: .init(
    ///     services: [player], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    /// try await group.run()
    /// ```
    public func run() async throws {
        try await play()
        await cancelWhenGracefulShutdown { await self.waitUntilFinished() }
        await stop(fadeOut: Self.shutdownFade)
    }

    /// How long the sound fades out on a graceful shutdown, seconds.
    package static let shutdownFade = 0.3
}
