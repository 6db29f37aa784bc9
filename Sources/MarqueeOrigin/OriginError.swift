import Foundation

/// Why the origin could not load an asset or serve a request. `code` says what kind of problem;
/// `message` says where.
public struct OriginError: Error, Hashable, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case assetNotFound, badManifest, badAsset, malformedMP4, invalidConfiguration, notRunning
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An asset directory, its manifest or one of its segment files does not exist.
        public static let assetNotFound = Code(.assetNotFound)
        /// The asset's VOD manifest could not be parsed.
        public static let badManifest = Code(.badManifest)
        /// The manifest parsed, but the asset cannot be looped (no audio/video, no template, ...).
        public static let badAsset = Code(.badAsset)
        /// An MP4 box is truncated, too large or inconsistent.
        public static let malformedMP4 = Code(.malformedMP4)
        /// A configuration value cannot be used.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The server is not running (``Origin/start()`` was not called, or failed).
        public static let notRunning = Code(.notRunning)

        public var description: String { base.rawValue }
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "origin \(code): \(message)" }
}
