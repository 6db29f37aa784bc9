import ArgumentParser
import Foundation
import Marquee

/// `marquee sign`: a document's detached signature (`DOC.sig`), or a new signing key.
struct SignCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sign",
        abstract: "Sign a config, playlist or schedule (writes DOC.sig), or make a signing key.",
        discussion: """
            marquee sign --generate-key FILE   writes a new Ed25519 private key (mode 0600) and prints its \
            public key, to pin with `marquee play --trust-key`.
            marquee sign --key FILE --kind config|playlist|schedule --version N --expires 2026-12-31T00:00:00Z DOC
            The private key is read from a file, never from the command line.
            """)

    @Option(
        name: .long,
        help: """
            Write a new private key to this file (mode 0600; an existing file is not replaced) and print its public \
            key.
            """
    )
    var generateKey: String?

    @Option(name: .long, help: "The private key file (PEM or base64 of 32 bytes).")
    var key: String?

    @Option(name: .long, help: "What the document is: config, playlist or schedule.")
    var kind: String?

    @Option(name: .long, help: "The document's version: boxes refuse one lower than the last they accepted.")
    var version: Int?

    @Option(
        name: .long,
        help: "When the signature stops being accepted: an ISO 8601 time with an offset (2026-12-31T00:00:00Z).")
    var expires: String?

    @Argument(help: "The document to sign; the signature goes to DOC.sig, served next to it.")
    var document: String?

    func validate() throws {
        if generateKey != nil {
            guard key == nil, kind == nil, version == nil, expires == nil, document == nil else {
                throw ValidationError("--generate-key stands alone")
            }
            return
        }
        guard key != nil, kind != nil, version != nil, expires != nil, document != nil else {
            throw ValidationError("give --key, --kind, --version, --expires and the document (or --generate-key FILE)")
        }
        if let kind, DocumentKind(rawValue: kind) == nil {
            throw ValidationError("--kind \(kind): expected config, playlist or schedule")
        }
        if let version, version < 0 { throw ValidationError("--version \(version): at least 0") }
        if let expires, ScheduleCommand.instant(expires) == nil {
            throw ValidationError("--expires \(expires): an ISO 8601 time with an offset")
        }
    }

    func run() throws {
        if let generateKey {
            let signing = SigningKey()
            // O_EXCL: a key is never written over (nor through a link planted where it goes).
            let fd = open(generateKey, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
            guard fd >= 0 else {
                throw ValidationError(
                    "--generate-key \(generateKey): cannot be created: \(String(cString: strerror(errno)))")
            }
            let bytes = Array(signing.pem.utf8)
            let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard written == bytes.count, fsync(fd) == 0, close(fd) == 0 else {
                throw ValidationError("--generate-key \(generateKey): cannot be written")
            }
            print("public key (pin it with --trust-key FILE, or a systemd credential named trust-key):")
            print(signing.trustKey.base64)
            print(signing.publicPEM, terminator: "")
            return
        }
        let (keyPath, documentPath) = (key!, document!)
        let signing: SigningKey
        do { signing = try SigningKey(contentsOfFile: keyPath) } catch {
            throw ValidationError("--key \(keyPath): \(error.message)")
        }
        let body: Data
        do { body = try Data(contentsOf: URL(fileURLWithPath: documentPath)) } catch {
            throw ValidationError("\(documentPath): cannot be read: \(error.localizedDescription)")
        }
        let signature = DocumentSignature(
            signing: body, kind: DocumentKind(rawValue: kind!)!, version: version!,
            expires: ScheduleCommand.instant(expires!)!, key: signing)
        let out = URL(fileURLWithPath: documentPath + ".sig")
        do { try signature.json.write(to: out, options: .atomic) } catch {
            throw ValidationError("\(out.path): cannot be written: \(error)")
        }
        print("\(out.path): \(kind!) version \(version!), expires \(signature.expires), sha256 \(signature.sha256)")
    }
}
