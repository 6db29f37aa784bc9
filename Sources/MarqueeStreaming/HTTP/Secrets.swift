import Foundation

/// Secrets (tokens, keys) as a box holds them: read from a file or a systemd credential, never
/// from argv (every user of the box can read a process's arguments), compared in constant time.
package enum Secrets {
    /// Why a secret could not be read.
    package struct ReadError: Error, CustomStringConvertible, Sendable {
        package var description: String
    }

    /// The secret in `file` when given, else systemd's credential `credential`
    /// (`$CREDENTIALS_DIRECTORY/<credential>`, what `LoadCredential=` provides) when there is one,
    /// else nil. The file must be a regular file of at most 4 KiB; surrounding whitespace is not
    /// part of the secret.
    package static func read(file: String?, credential: String) throws(ReadError) -> String? {
        var path = file
        if path == nil, let directory = ProcessInfo.processInfo.environment["CREDENTIALS_DIRECTORY"], !directory.isEmpty
        {
            let candidate = (directory as NSString).appendingPathComponent(credential)
            if FileManager.default.fileExists(atPath: candidate) { path = candidate }
        }
        guard let path else { return nil }
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { throw ReadError(description: "\(path): cannot be opened (errno \(errno))") }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            throw ReadError(description: "\(path): not a regular file")
        }
        guard info.st_size <= 4096 else { throw ReadError(description: "\(path): over 4 KiB, not a secret") }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        let n = bytes.withUnsafeMutableBytes { Foundation.read(fd, $0.baseAddress, $0.count) }
        guard n == bytes.count else { throw ReadError(description: "\(path): could not be read whole") }
        let text = String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw ReadError(description: "\(path): empty") }
        return text
    }

    /// Whether `a` and `b` are equal, in a time that depends on their lengths only (a token
    /// compared with `==` tells an attacker, by the time of a refusal, how much of it was right).
    package static func equal(_ a: some StringProtocol, _ b: some StringProtocol) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var diff = UInt(bitPattern: x.count ^ y.count)
        for i in 0..<max(x.count, y.count) {
            diff |= UInt((i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0))
        }
        return diff == 0
    }
}
