import MarqueeStreaming

/// Local files read by the player (images, files, keys): ``LocalFileReader``'s checks
/// (no symbolic link, a regular file, bounded), its failure a ``PlayerError``.
package enum LocalFile {
    /// The file's bytes; a failure is ``PlayerError/Code-swift.struct/media`` naming `what`.
    package static func read(_ path: String, maxBytes: Int, what: String) throws(PlayerError) -> [UInt8] {
        do { return try LocalFileReader.read(path, maxBytes: maxBytes) } catch {
            throw PlayerError(.media, "\(what) \(error.message)")
        }
    }
}
