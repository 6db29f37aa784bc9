import Crypto
package import Foundation
import Logging
import MarqueeStreaming
import NIOCore

#if canImport(Glibc)
    import Glibc
#endif

/// What a document is: the last line of the text its signature covers, so a signed playlist
/// cannot be served as a config.
package enum DocumentKind: String, Sendable, Hashable, CaseIterable {
    /// A remote config (``MarqueeConfig``).
    case config
    /// A playlist (a `ContentFeed` (MarqueeSignage)'s document).
    case playlist
    /// A schedule (a `ScheduleFeed`'s document).
    case schedule
}

/// A document fetched from the network that the policy (``DocumentSecurity``) refuses: why,
/// which document, and a sentence naming the field or the check. The last good document stays
/// in use.
public struct DocumentRefusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// Why a document was refused: one of the constants below, compared with `==`.
    public struct Reason: Sendable, Hashable, CustomStringConvertible {
        private let name: String
        private init(_ name: String) { self.name = name }
        /// A trust key is pinned and the document has no signature (its `.sig` answered 404).
        public static let unsigned = Reason("unsigned")
        /// The signature file is malformed or its signature is not the pinned key's.
        public static let badSignature = Reason("badSignature")
        /// The document's bytes are not the ones signed (their SHA-256 differs).
        public static let tampered = Reason("tampered")
        /// The signed version is lower than the last one accepted from this URL (a replay).
        public static let olderVersion = Reason("olderVersion")
        /// The signature's `expires` has passed.
        public static let expired = Reason("expired")
        /// The document names a local file outside the allowed directories (the message names the field).
        public static let localPath = Reason("localPath")
        /// Plain http without the allowance, or a redirect from https to http.
        public static let insecureTransport = Reason("insecureTransport")
        /// The reason's name, as spelled above.
        public var description: String { name }
    }

    /// Why.
    public var reason: Reason
    /// The document's URL.
    public var url: String
    /// What exactly, one sentence (a local path: it starts with the field, `items[3].url`).
    public var message: String

    /// A refusal of the document at `url` for `reason`.
    package init(_ reason: Reason, url: String, _ message: String) {
        (self.reason, self.url, self.message) = (reason, Redact.url(url), message)  // its text reaches logs and events
    }

    /// `reason: url: message`.
    public var description: String { "\(reason): \(url): \(message)" }
}

/// An Ed25519 public key pinned for documents (``DocumentSecurity/trustKey``): 32 bytes.
public struct TrustKey: Sendable, Hashable {
    /// The key's 32 bytes.
    package let rawRepresentation: Data

    /// The key of 32 raw bytes; another length is ``PlayerError/Code-swift.struct/invalidOptions``.
    package init(rawRepresentation: Data) throws(PlayerError) {
        guard (try? Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation)) != nil else {
            throw PlayerError(
                .invalidOptions, "trust key: \(rawRepresentation.count) bytes, not an Ed25519 public key's 32")
        }
        self.rawRepresentation = rawRepresentation
    }

    /// A key written as text: the 32 bytes in base64, or a PEM `PUBLIC KEY` (what `marquee sign
    /// --generate-key` prints, or `openssl pkey -pubout` of its key).
    public init(text: String) throws(PlayerError) {
        guard let raw = KeyText.decode(text, derPrefix: KeyText.publicPrefix) else {
            throw PlayerError(.invalidOptions, "trust key: neither 32 bytes in base64 nor a PEM Ed25519 public key")
        }
        try self.init(rawRepresentation: raw)
    }

    /// The key in the file at `path` (as ``init(text:)``; at most 4 KiB read).
    public init(contentsOfFile path: String) throws(PlayerError) {
        let bytes = try LocalFile.read(path, maxBytes: 4096, what: "trust key")
        do { try self.init(text: String(decoding: bytes, as: UTF8.self)) } catch {
            throw PlayerError(.invalidOptions, "\(path): \(error.message)")
        }
    }

    /// The key in base64 (``init(text:)`` reads it back).
    package var base64: String { rawRepresentation.base64EncodedString() }

    var key: Curve25519.Signing.PublicKey { try! Curve25519.Signing.PublicKey(rawRepresentation: rawRepresentation) }
}

/// An Ed25519 private key that signs documents (`marquee sign`), kept in a file as PEM
/// (`PRIVATE KEY`, PKCS #8, as OpenSSL writes it) or as its 32 bytes in base64.
package struct SigningKey: Sendable {
    private let key: Curve25519.Signing.PrivateKey

    /// A new random key.
    package init() { key = Curve25519.Signing.PrivateKey() }

    /// A key written as text (PEM or base64 of 32 bytes).
    package init(text: String) throws(PlayerError) {
        guard let raw = KeyText.decode(text, derPrefix: KeyText.privatePrefix),
            let key = try? Curve25519.Signing.PrivateKey(rawRepresentation: raw)
        else {
            throw PlayerError(.invalidOptions, "signing key: neither 32 bytes in base64 nor a PEM Ed25519 private key")
        }
        self.key = key
    }

    /// The key in the file at `path` (at most 4 KiB read).
    package init(contentsOfFile path: String) throws(PlayerError) {
        let bytes = try LocalFile.read(path, maxBytes: 4096, what: "signing key")
        do { try self.init(text: String(decoding: bytes, as: UTF8.self)) } catch {
            throw PlayerError(.invalidOptions, "\(path): \(error.message)")
        }
    }

    /// The key as PEM (PKCS #8).
    package var pem: String { KeyText.pem("PRIVATE KEY", KeyText.privatePrefix + key.rawRepresentation) }

    /// Its public key, to pin (``DocumentSecurity/trustKey``).
    package var trustKey: TrustKey { try! TrustKey(rawRepresentation: key.publicKey.rawRepresentation) }

    /// The public key as PEM (`PUBLIC KEY`, SubjectPublicKeyInfo).
    package var publicPEM: String { KeyText.pem("PUBLIC KEY", KeyText.publicPrefix + key.publicKey.rawRepresentation) }

    func signature(for text: Data) -> Data { (try? key.signature(for: text)) ?? Data() }
}

/// Ed25519 keys as text: base64 of the 32 bytes, or PEM whose DER is a fixed prefix and the 32
/// bytes (swift-crypto reads no PEM for Curve25519; the two DER forms of RFC 8410 are constant
/// but for the key).
enum KeyText {
    /// SubjectPublicKeyInfo, id-Ed25519, BIT STRING of 32 bytes.
    static let publicPrefix = Data([0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00])
    /// PKCS #8 OneAsymmetricKey v0, id-Ed25519, OCTET STRING of an OCTET STRING of 32 bytes.
    static let privatePrefix = Data([
        0x30, 0x2e, 0x02, 0x01, 0x00, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x04, 0x22, 0x04, 0x20,
    ])

    static func decode(_ text: String, derPrefix: Data) -> Data? {
        let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        let body = lines.filter { !$0.hasPrefix("-----") }.joined()
        guard let bytes = Data(base64Encoded: body) else { return nil }
        if bytes.count == 32, !lines.contains(where: { $0.hasPrefix("-----") }) { return bytes }
        guard bytes.count == derPrefix.count + 32, bytes.prefix(derPrefix.count) == derPrefix else { return nil }
        return bytes.suffix(32)
    }

    static func pem(_ label: String, _ der: Data) -> String {
        """
        -----BEGIN \(label)-----
        \(der.base64EncodedString(options: .lineLength64Characters))
        -----END \(label)-----

        """
    }
}

/// A document's detached signature: the JSON of its `.sig` file,
/// `{"v":1,"version":N,"expires":"2026-12-01T00:00:00Z","sha256":"<hex>","sig":"<base64>"}`,
/// `sig` an Ed25519 signature over ``canonicalText(version:expires:sha256:kind:)``.
package struct DocumentSignature: Sendable, Hashable, Codable {
    /// The format, 1.
    package var v: Int
    /// The document's version: a key's documents at one URL only go up.
    package var version: Int
    /// When the signature stops being accepted: ISO 8601 with an offset, as signed.
    package var expires: String
    /// The SHA-256 of the document's bytes, lowercase hex.
    package var sha256: String
    /// The signature, base64.
    package var sig: String

    /// The largest `.sig` read.
    package static let maxBytes = 4096

    /// The text signed: `marquee-doc-v1`, the version, the expiry, the digest and the kind, one
    /// a line (no newline after the last).
    package static func canonicalText(version: Int, expires: String, sha256: String, kind: DocumentKind) -> String {
        "marquee-doc-v1\n\(version)\n\(expires)\n\(sha256)\n\(kind.rawValue)"
    }

    /// `document` signed with `key` as a `kind` of `version`, valid until `expires`.
    package init(signing document: Data, kind: DocumentKind, version: Int, expires: Date, key: SigningKey) {
        let formatter = ISO8601DateFormatter()
        let (v, until, digest) = (1, formatter.string(from: expires), sha256Hex([UInt8](document)))
        let text = Self.canonicalText(version: version, expires: until, sha256: digest, kind: kind)
        self.init(
            v: v, version: version, expires: until, sha256: digest,
            sig: key.signature(for: Data(text.utf8)).base64EncodedString())
    }

    private init(v: Int, version: Int, expires: String, sha256: String, sig: String) {
        (self.v, self.version, self.expires, self.sha256, self.sig) = (v, version, expires, sha256, sig)
    }

    /// The `.sig` file's bytes (one JSON line).
    package var json: Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return ((try? encoder.encode(self)) ?? Data()) + Data("\n".utf8)
    }

    /// Checks `document` against this signature under `key`: its digest, the signature, the
    /// expiry at `now`, the version not below `lastVersion`. Throws the refusal's reason and words.
    func verify(
        _ document: Data, kind: DocumentKind, key: TrustKey, now: Date, lastVersion: Int?
    ) throws(DocumentCheckFailure) {
        guard v == 1 else { throw DocumentCheckFailure(.badSignature, "signature format v\(v): only 1 is read") }
        let digest = sha256Hex([UInt8](document))
        guard digest == sha256.lowercased() else {
            throw DocumentCheckFailure(.tampered, "the document's SHA-256 is \(digest), not the signed \(sha256)")
        }
        let text = Self.canonicalText(version: version, expires: expires, sha256: sha256, kind: kind)
        guard let signature = Data(base64Encoded: sig), key.key.isValidSignature(signature, for: Data(text.utf8)) else {
            throw DocumentCheckFailure(
                .badSignature, "the signature is not the pinned key's (for a \(kind.rawValue) of version \(version))")
        }
        guard let until = isoInstant(expires) else {
            throw DocumentCheckFailure(.badSignature, "expires \"\(expires)\" is no ISO 8601 time")
        }
        guard until > now else { throw DocumentCheckFailure(.expired, "the signature expired at \(expires)") }
        if let lastVersion, version < lastVersion {
            throw DocumentCheckFailure(.olderVersion, "version \(version) is older than the accepted \(lastVersion)")
        }
    }
}

struct DocumentCheckFailure: Error {
    let reason: DocumentRefusal.Reason
    let message: String
    init(_ reason: DocumentRefusal.Reason, _ message: String) { (self.reason, self.message) = (reason, message) }
}

/// How documents fetched from the network (a remote config, a content feed, a schedule feed)
/// are trusted: a pinned key they must be signed with, the local directories they may name,
/// whether plain http is allowed, a CA file for private origins. The default: no key (documents
/// are not authenticated: a warning, once), no local file, https only.
public struct DocumentSecurity: Sendable, Hashable {
    /// Documents must carry a valid, unexpired signature of this key, their version never going
    /// down (nil: not authenticated).
    public var trustKey: TrustKey?
    /// Directories whose files a fetched document may name (a path resolved, symbolic links and
    /// `..` followed, must be inside one); empty: none.
    public var allowedLocalDirectories: [String]
    /// Whether documents may come over plain http (and redirects lead to http; never from https).
    public var allowHTTP: Bool
    /// A PEM file of CA certificates trusted besides the system's (a venue's private origin).
    public var caFile: String?
    /// Where the last accepted version of each signed document is kept across restarts (nil:
    /// in memory only).
    public var stateDirectory: String?

    /// A policy; the defaults: no key, no local directory, https only, the system's CAs.
    public init(
        trustKey: TrustKey? = nil, allowedLocalDirectories: [String] = [], allowHTTP: Bool = false,
        caFile: String? = nil,
        stateDirectory: String? = nil
    ) {
        self.trustKey = trustKey
        self.allowedLocalDirectories = allowedLocalDirectories
        self.allowHTTP = allowHTTP
        self.caFile = caFile
        self.stateDirectory = stateDirectory
    }

    /// Refuses `url` (a fetched document's `field`) when it is a local file outside the allowed
    /// directories; http(s) passes.
    package func checkLocal(_ url: URL, field: String, document: URL) throws(DocumentRefusal) {
        guard url.isFileURL || url.scheme == nil else { return }
        try checkLocal(path: url.path, field: field, document: document)
    }

    /// Refuses the local `path` (a fetched document's `field`) unless it resolves inside an
    /// allowed directory.
    package func checkLocal(path: String, field: String, document: URL) throws(DocumentRefusal) {
        let resolved = Self.resolve(path)
        for directory in allowedLocalDirectories {
            let root = Self.resolve(directory)
            if resolved == root || resolved.hasPrefix(root.hasSuffix("/") ? root : root + "/") { return }
        }
        let allowed =
            allowedLocalDirectories.isEmpty
            ? "no local directory is allowed" : "it is outside \(allowedLocalDirectories.joined(separator: ", "))"
        throw DocumentRefusal(
            .localPath, url: document.absoluteString, "\(field): \"\(path)\" is a local file: \(allowed)")
    }

    /// `path` absolute, `.` and `..` removed, symbolic links resolved (realpath of the longest
    /// part that exists, the rest appended).
    static func resolve(_ path: String) -> String {
        var head = (path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path) as NSString
        head = head.standardizingPath as NSString
        var rest: [String] = []
        while true {
            if let real = realpath(head as String, nil) {
                defer { free(real) }
                let base = String(cString: real)
                return rest.isEmpty ? base : (base == "/" ? "" : base) + "/" + rest.reversed().joined(separator: "/")
            }
            guard head.length > 1 else { return path }
            rest.append(head.lastPathComponent)
            head = head.deletingLastPathComponent as NSString
        }
    }

    private static let warned = Locked(false)

    /// Warns once a process that documents are not authenticated (no key pinned).
    func warnIfUnauthenticated() {
        guard trustKey == nil,
            Self.warned.withLock({ done in
                defer { done = true }
                return !done
            })
        else { return }
        Logger(label: "marquee.documents").warning(
            "documents are not authenticated: no trust key is pinned (--trust-key)")
    }
}

/// A fetch of a document and its signature that failed: the fetch, or the policy.
enum DocumentFailure: Error {
    case fetch(FetchError)
    case refused(DocumentRefusal)
}

/// One document's URL under a ``DocumentSecurity``: fetches it (conditionally) and its
/// signature (`<url>.sig`, with the same client), checks them, and keeps the last accepted
/// version (in memory, and under ``DocumentSecurity/stateDirectory`` when set).
final class DocumentSource: Sendable {
    let url: URL
    let kind: DocumentKind
    let security: DocumentSecurity
    let fetcher: HTTPFetcher
    private let accepted: Locked<Int?>

    init(url: URL, kind: DocumentKind, security: DocumentSecurity, headers: [String: String]) throws(DocumentFailure) {
        self.url = url
        self.kind = kind
        self.security = security
        do {
            let sorted = headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            fetcher = try HTTPFetcher(caFile: security.caFile, followsRedirects: false, headers: sorted)
        } catch {
            throw .fetch(error)
        }
        accepted = Locked(Self.persisted(security.stateDirectory)[url.absoluteString])
        security.warnIfUnauthenticated()
    }

    /// The signature's URL: `.sig` appended to the document's path (its query kept).
    var signatureURL: URL {
        guard var parts = URLComponents(url: url, resolvingAgainstBaseURL: true) else {
            return url.appendingPathExtension("sig")
        }
        parts.percentEncodedPath += ".sig"
        return parts.url ?? url.appendingPathExtension("sig")
    }

    /// The document (nil: not modified since `validators`), checked against the pinned key:
    /// its body, validators and signed version (to ``accept(_:)`` once it parses).
    func fetch(validators: DocumentValidators?, maxBytes: Int) async throws(DocumentFailure) -> (
        FetchResult, version: Int?
    )? {
        let result: FetchResult
        do {
            guard
                let answered = try await DocumentValidators.get(
                    url, fetcher: fetcher, validators: validators, maxBytes: maxBytes, allowHTTP: security.allowHTTP)
            else { return nil }
            result = answered
        } catch {
            if error.code == .insecure {
                throw DocumentFailure.refused(
                    DocumentRefusal(.insecureTransport, url: url.absoluteString, error.message))
            }
            throw DocumentFailure.fetch(error)
        }
        guard let key = security.trustKey else { return (result, nil) }
        let body = Data(result.body.readableBytesView)
        let signatureBytes: Data
        do {
            let answer = try await fetcher.getDocument(
                signatureURL, allowHTTP: security.allowHTTP, maxBytes: DocumentSignature.maxBytes)
            signatureBytes = Data(answer.body.readableBytesView)
        } catch {
            switch error.code {
            case .status where error.status == 404 || error.status == 410:
                let said = "no signature (\(signatureURL.lastPathComponent) answered \(error.status))"
                throw .refused(DocumentRefusal(.unsigned, url: url.absoluteString, said))
            case .insecure:
                throw .refused(
                    DocumentRefusal(.insecureTransport, url: url.absoluteString, "signature: \(error.message)"))
            default: throw .fetch(error)
            }
        }
        guard let signature = try? JSONDecoder().decode(DocumentSignature.self, from: signatureBytes) else {
            throw .refused(
                DocumentRefusal(
                    .badSignature, url: url.absoluteString,
                    "\(signatureURL.lastPathComponent) is not a signature document"))
        }
        do {
            try signature.verify(body, kind: kind, key: key, now: Date(), lastVersion: accepted.withLock { $0 })
        } catch {
            throw .refused(DocumentRefusal(error.reason, url: url.absoluteString, error.message))
        }
        return (result, signature.version)
    }

    /// Records `version` as the last accepted (never lowering it); kept on disk when a state
    /// directory is set.
    func accept(_ version: Int?) {
        guard let version else { return }
        let raised = accepted.withLock { last -> Bool in
            guard version > (last ?? .min) else { return false }
            last = version
            return true
        }
        guard raised, let directory = security.stateDirectory else { return }
        Self.store.withLock { _ in
            var all = Self.persisted(directory)
            all[url.absoluteString] = version
            let file = URL(fileURLWithPath: directory).appendingPathComponent(Self.fileName)
            try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            if let data = try? JSONEncoder().encode(all) { try? data.write(to: file, options: .atomic) }
        }
    }

    private static let fileName = "document-versions.json"
    private static let store = Locked(())

    private static func persisted(_ directory: String?) -> [String: Int] {
        guard let directory,
            let bytes = try? LocalFile.read(directory + "/" + fileName, maxBytes: 1 << 20, what: "document versions")
        else { return [:] }
        return (try? JSONDecoder().decode([String: Int].self, from: Data(bytes))) ?? [:]
    }
}
