internal import CCore

/// The process's memory as the C heap and the allocator see it.
extension CoreHandle {
    /// The C heap: bytes in live allocations and bytes kept free by the allocator
    /// (`mq_heap_usage`, glibc `mallinfo2`); zeros where unsupported.
    package static func heapUsage() -> (inUse: Int, free: Int) {
        var inUse: Int64 = 0
        var free: Int64 = 0
        _ = mq_heap_usage(&inUse, &free)
        return (Int(inUse), Int(free))
    }

    /// Gives back the heap's free pages and the start-up's resident code and read-only data
    /// (`mq_memory_trim`): the resident bytes released; 0 where unsupported.
    @discardableResult
    package static func trimMemory() -> Int {
        var released: Int64 = 0
        _ = mq_memory_trim(&released)
        return Int(released)
    }

    /// Heap blocks of 128 KiB or more mapped on their own, given back when freed
    /// (`mq_memory_map_large_blocks`); false where unsupported.
    @discardableResult
    package static func mapLargeBlocks() -> Bool { mq_memory_map_large_blocks(0) == 0 }
}
