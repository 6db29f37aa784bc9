import Foundation
import Marquee

#if canImport(Glibc)
    import Glibc
#endif

/// Files written so that a crash or a power cut leaves the old contents or the new, never a
/// mix: the proof-of-play journal's upload position, the content cache's objects and index.
enum DurableFile {
    /// Replaces `target` with `bytes`: a temporary file beside it, `fsync`, `rename`, then the
    /// directory `fsync`ed (the new name is durable too).
    static func replace(_ bytes: [UInt8], at target: URL) throws(PlayerError) {
        let temporary = target.appendingPathExtension("\(getpid()).\(UInt32.random(in: 0...UInt32.max)).tmp")
        let fd = open(temporary.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw PlayerError(.output, "cannot write \(temporary.path): \(String(cString: strerror(errno)))")
        }
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n <= 0 { break }
            offset += n
        }
        let synced = fsync(fd) == 0
        close(fd)
        guard offset == bytes.count, synced, rename(temporary.path, target.path) == 0 else {
            unlink(temporary.path)
            throw PlayerError(.output, "cannot write \(target.path): \(String(cString: strerror(errno)))")
        }
        syncDirectory(of: target)
    }

    /// Makes a new name in `url`'s directory durable (a created file, a rename).
    static func syncDirectory(of url: URL) {
        let fd = open(url.deletingLastPathComponent().path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = fsync(fd)
        close(fd)
    }
}
