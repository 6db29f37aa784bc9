#if canImport(Glibc)
    import Glibc
#endif

/// Reads a local file the way a player should: the last component not a symbolic link
/// (`O_NOFOLLOW`), no wait on a FIFO or a device (`O_NONBLOCK`), a regular file only (`fstat`),
/// and at most `maxBytes` of it.
package enum LocalFileReader {
    /// Why a file was not read, in words.
    package struct Failure: Error, Sendable {
        package let message: String
    }

    /// The file's bytes; a link, a non-regular file, one over `maxBytes` or one that cannot be
    /// opened or read fails.
    package static func read(_ path: String, maxBytes: Int) throws(Failure) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else {
            let reason = errno == ELOOP ? "a symbolic link (not followed)" : String(cString: strerror(errno))
            throw Failure(message: "\(path): cannot be opened: \(reason)")
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            throw Failure(message: "\(path): not a regular file")
        }
        guard Int(info.st_size) <= maxBytes else {
            throw Failure(message: "\(path): \(info.st_size) bytes, over \(maxBytes)")
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let n = bytes.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + filled, $0.count - filled) }
            if n < 0 && errno == EINTR { continue }
            if n == 0 { break }  // shrunk while read: what there was
            guard n > 0 else { throw Failure(message: "\(path): read failed: \(String(cString: strerror(errno)))") }
            filled += n
        }
        return Array(bytes.prefix(filled))
    }
}
