import MarqueeStreaming

/// A player failure. `code` says what kind; `message` says what exactly, in English.
public struct PlayerError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure: one of the constants below, compared with `==`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case invalidOptions, invalidOptionsSources, manifest, network, noPlayableContent, media, output, state,
                playlist, invalidArgument, schedule
            case untrustedDocument, invalidConfig
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// An option has a value that cannot be used.
        public static let invalidOptions = Code(.invalidOptions)
        /// `sources` is empty or holds a URL that cannot be played.
        public static let invalidOptionsSources = Code(.invalidOptionsSources)
        /// A manifest could not be parsed or used.
        public static let manifest = Code(.manifest)
        /// A request failed (status, timeout, connection, an empty answer, no usable `Date`
        /// from a config server); ``PlayerError/httpStatus`` holds the status when one came.
        public static let network = Code(.network)
        /// Nothing in the manifest is decodable.
        public static let noPlayableContent = Code(.noPlayableContent)
        /// A segment could not be demuxed or decoded.
        public static let media = Code(.media)
        /// The audio or video output failed.
        public static let output = Code(.output)
        /// The call is not valid now (e.g. `play()` after `dispose()`).
        public static let state = Code(.state)
        /// A playlist, a feed or a tag filter could not be read or used.
        public static let playlist = Code(.playlist)
        /// A schedule could not be read or used.
        public static let schedule = Code(.schedule)
        /// A method's argument cannot be used (an item index out of range, an unknown id).
        public static let invalidArgument = Code(.invalidArgument)
        /// A remote config (``MarqueeConfig``) is not valid; the message starts with the bad
        /// field's path (`advanced.sync.targetLatency: …`).
        public static let invalidConfig = Code(.invalidConfig)
        /// A document fetched from the network (a config, a feed's playlist, a schedule) was refused by
        /// its ``DocumentSecurity``: unsigned, wrongly signed, tampered with, older, expired,
        /// naming a local file, or over plain http (``PlayerError/refusal`` says which).
        public static let untrustedDocument = Code(.untrustedDocument)

        /// The code's name, as spelled above (`invalidOptions`, `network`).
        public var description: String { base.rawValue }
    }

    /// What kind of failure.
    public var code: Code
    /// What exactly failed, one English sentence for logs and people (it names the option,
    /// URL or output concerned).
    public var message: String
    /// The C core's `mq_err` value when the core reported it, else `nil`.
    package var coreCode: Int32?
    /// For ``Code-swift.struct/untrustedDocument``: why the document was refused.
    public var refusal: DocumentRefusal?
    /// For ``Code-swift.struct/network``: the HTTP status the server answered with; nil when
    /// it did not answer (timeout, connection refused or reset) or the failure was not HTTP's.
    public var httpStatus: Int?

    /// An error of kind `code` with `message`.
    public init(_ code: Code, _ message: String) {
        self.init(code, message, coreCode: nil)
    }

    /// `coreCode`: the C core's `mq_err` value when the core reported the failure.
    package init(_ code: Code, _ message: String, coreCode: Int32? = nil, httpStatus: Int? = nil) {
        self.code = code
        self.message = message
        self.coreCode = coreCode
        self.httpStatus = httpStatus
    }

    /// `code: message`, e.g. `network: … answered 404`.
    public var description: String { "\(code): \(message)" }

    /// A ``Code-swift.struct/untrustedDocument`` error for `refusal`.
    public init(_ refusal: DocumentRefusal) {
        self.init(.untrustedDocument, refusal.description)
        self.refusal = refusal
    }

    init(_ error: ManifestError) {
        self.init(error.code == .noPlayableContent ? .noPlayableContent : .manifest, error.description)
    }

    init(_ error: FetchError) {
        self.init(.network, error.description)
    }
}
