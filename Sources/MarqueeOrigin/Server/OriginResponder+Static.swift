import Foundation

/// `/static/...`: plain files, with `ETag` and `Last-Modified`.
extension OriginResponder {
    func staticFile(_ components: [String], ifNoneMatch: String?) -> Reply {
        guard let root = staticRoot else { return Reply(.notFound, "no static directory is configured") }
        guard !components.isEmpty,
            !components.contains(where: { $0 == ".." || $0 == "." || $0.contains("/") || $0.contains("\0") })
        else {
            return Reply(.notFound, "no such static file")
        }
        let path = ([root] + components).joined(separator: "/")
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
            let data = FileManager.default.contents(atPath: path)
        else {
            return Reply(.notFound, "no static file \(components.joined(separator: "/"))")
        }
        var reply = Reply(bytes: [UInt8](data), contentType: Self.contentType(path), clock: OriginClock())
        reply.media = reply.contentType.hasPrefix("video/") || reply.contentType.hasPrefix("audio/")
        // FNV-1a of the content: a changed file gets a new ETag, an unchanged one a 304.
        let hash = data.reduce(UInt64(0xcbf2_9ce4_8422_2325)) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
        reply.etag = "\"\(String(hash, radix: 16))\""
        if let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date {
            reply.lastModified = OriginClock.httpDate(modified.timeIntervalSince1970)
        }
        if let ifNoneMatch,
            ifNoneMatch.split(separator: ",").contains(where: { $0.trimmingCharacters(in: .whitespaces) == reply.etag })
        {
            reply.status = .notModified
            reply.body = []
        }
        return reply
    }

    static func contentType(_ path: String) -> String {
        switch (path as NSString).pathExtension.lowercased() {
        case "mpd": return "application/dash+xml"
        case "m3u8": return "application/vnd.apple.mpegurl"
        case "mp4", "m4v", "m4s", "cmfv": return "video/mp4"
        case "m4a", "cmfa": return "audio/mp4"
        case "ts": return "video/mp2t"
        case "txt": return "text/plain; charset=utf-8"
        default: return "application/octet-stream"
        }
    }
}
