import Logging
import MarqueeBridge
import MarqueeStreaming

#if canImport(Glibc)
    import Glibc
#endif

/// The process's memory, as an operator watching a box for months wants it: what the kernel
/// counts (resident set) and what the C heap holds (in use by live allocations, and free but
/// kept by the allocator: fragmentation).
public struct MemoryUsage: Sendable, Hashable {
    /// Resident set size, bytes (`/proc/self/statm`).
    public var residentBytes: Int
    /// Bytes of live heap allocations, Swift's and the C core's (glibc `mallinfo2`:
    /// `uordblks + hblkhd`, every arena).
    package var heapInUseBytes: Int
    /// Bytes the allocator holds free in its arenas (glibc `mallinfo2().fordblks`): counted in
    /// the resident set when touched, not in ``heapInUseBytes``.
    package var heapFreeBytes: Int

    /// Figures given by the caller, bytes (tests, reports); ``current()`` measures them.
    package init(residentBytes: Int, heapInUseBytes: Int, heapFreeBytes: Int) {
        self.residentBytes = residentBytes
        self.heapInUseBytes = heapInUseBytes
        self.heapFreeBytes = heapFreeBytes
    }

    /// The figures now (0 for what this system does not report). Walks the allocator's arenas:
    /// read it every few seconds, not on every frame.
    public static func current() -> MemoryUsage {
        let heap = CoreHandle.heapUsage()
        return MemoryUsage(residentBytes: residentBytes(), heapInUseBytes: heap.inUse, heapFreeBytes: heap.free)
    }

    /// Gives back to the system what the process holds but playing does not use, and returns
    /// the resident bytes released: the allocator's free pages, and the pages of code and
    /// read-only data of the executable and its shared libraries that start-up mapped in (the
    /// dynamic loader, initialisers, the kernel mapping 64 KiB around every first touch). Those
    /// pages stay in the page cache: a page used again comes back with a minor fault, no disk
    /// read; writable data is never touched. A player trims the process as it starts playing, at
    /// its first picture, as it stops and periodically when its process asks it to (the `marquee`
    /// command: every 10 s); call it after other one-off work (a report, a big parse). Takes a few milliseconds, and
    /// every thread then faults back in the pages it uses: call it seldom. glibc only (0
    /// elsewhere).
    @discardableResult
    package static func trim() -> Int {
        lastTrim.withLock { $0 = Monotonic.now() }
        return CoreHandle.trimMemory()
    }

    /// Has heap blocks of 128 KiB or more (segment bodies, demuxer buffers) mapped on their own
    /// and given back to the system as they are freed, for the whole process (glibc's
    /// `M_MMAP_THRESHOLD`; its default rises to the largest block freed, up to 32 MiB, and the
    /// arenas then keep such blocks' pages resident until a trim). A player does it as it begins
    /// to play when its process trims (`memoryTrimInterval`). Measured at 720p30 over 10 minutes:
    /// peak RSS 61.8 → 58.2 MiB, CPU unchanged. False where unsupported (not glibc).
    @discardableResult
    package static func mapLargeBlocks() -> Bool { CoreHandle.mapLargeBlocks() }

    /// A player's trim at a moment of its life (`play`, `first frame`, `stop`), logged at debug.
    /// (Trimmed before logging: a log message's metadata is built only at its level.)
    static func trim(at moment: String, logger: Logger) {
        let released = trim()
        logger.debug("memory trimmed", metadata: ["at": "\(moment)", "released": "\(released >> 10) KiB"])
    }

    /// When the process was last trimmed (monotonic seconds; 0: never).
    private static let lastTrim = Locked(0.0)

    /// Trims unless the process was trimmed within `interval` seconds (several players in one
    /// process share the work); nil when it did not trim.
    static func trim(unlessWithin interval: Double) -> Int? {
        let due = lastTrim.withLock { last in
            let now = Monotonic.now()
            guard now - last >= interval else { return false }
            last = now
            return true
        }
        return due ? CoreHandle.trimMemory() : nil
    }

    private static func residentBytes() -> Int {
        #if canImport(Glibc)
            let fd = open("/proc/self/statm", O_RDONLY)
            guard fd >= 0 else { return 0 }
            defer { close(fd) }
            var buffer = [UInt8](repeating: 0, count: 128)
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { return 0 }
            // "size resident shared text lib data dt", in pages
            let fields = buffer[..<n].split(separator: UInt8(ascii: " "))
            guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
            return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
        #else
            return 0
        #endif
    }
}
