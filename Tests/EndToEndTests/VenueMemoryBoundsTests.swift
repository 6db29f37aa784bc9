import Foundation
import MarqueeStreaming
import NIOCore
import Testing

@testable import MarqueeVenue

/// What the proxy keeps in memory, bounded however many answers come at once.
@Suite struct VenueMemoryBoundsTests {
    /// Transfers under way keep at most the budget together: one past it stops keeping (no
    /// late joiner), its reader still gets every byte, and a finished transfer gives its bytes back.
    @Test func transfersUnderWayShareOneBudget() async throws {
        let budget = ByteBudget(limit: 1000)
        var first: Transfer? = Transfer(retainLimit: 800, budget: budget)
        let second = Transfer(retainLimit: 800, budget: budget)
        let reader = try #require(second.read())
        first!.receive(chunk: ByteBuffer(repeating: 1, count: 600))
        second.receive(chunk: ByteBuffer(repeating: 2, count: 300))
        #expect(budget.inUse == 900 && first!.isJoinable && second.isJoinable)
        second.receive(chunk: ByteBuffer(repeating: 2, count: 300))  // 1200 > 1000
        #expect(!second.isJoinable && second.read() == nil, "over the budget: no late joiner")
        #expect(budget.inUse == 600, "its kept chunks were given back")
        second.finish(.success(()))
        var got = 0
        for try await part in reader { if case .chunk(let c) = part { got += c.readableBytes } }
        #expect(got == 600, "its reader got every byte")
        first = nil
        #expect(budget.inUse == 0)
    }

    /// Many small answers with large headers cannot outgrow the store: each entry is counted whole.
    @Test func theStoreCountsHeadersAndEntries() {
        let store = SegmentStore(capacity: 1 << 20)
        let headers = [("X-Padding", String(repeating: "h", count: 4000))]
        for i in 0..<1000 {
            store.put(
                "http://cdn/\(i)",
                StoredObject(headers: headers, body: ByteBuffer(repeating: 0, count: 10), expires: nil))
        }
        #expect(store.bytes <= 1 << 20, "\(store.bytes) bytes held in a store of 1 MiB")
        #expect(store.get("http://cdn/999") != nil && store.get("http://cdn/0") == nil, "the oldest went first")
    }
}
