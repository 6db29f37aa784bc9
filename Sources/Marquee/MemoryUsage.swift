import MarqueeBridge
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
    public var heapInUseBytes: Int
    /// Bytes the allocator holds free in its arenas (glibc `mallinfo2().fordblks`): counted in
    /// the resident set when touched, not in ``heapInUseBytes``.
    public var heapFreeBytes: Int

    /// Figures given by the caller, bytes (tests, reports); ``current()`` measures them.
    public init(residentBytes: Int, heapInUseBytes: Int, heapFreeBytes: Int) {
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
