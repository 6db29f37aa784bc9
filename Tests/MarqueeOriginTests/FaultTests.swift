import Foundation
import MarqueeStreaming
import Testing
@testable import MarqueeOrigin

@Suite("Origin fault options over loopback")
struct FaultTests {
    @Test("fault options parse, reproduce their path components, and a bad one is a 400")
    func faultOptions() async throws {
        let components = ["seed_42", "status_503-12.5", "reset_10", "trickle_300-20", "truncate_5", "badlength_6", "corrupt_7",
                          "hugebox_8", "flip_9", "endless_1", "redirect_2", "mstatus_404-3", "badinit_1", "nest_64"]
        var options = LiveOptions()
        for component in components { try options.apply(Substring(component)) }
        #expect(Set(options.pathComponents) == Set(components))
        #expect(options.faults.seed == 42 && options.faults.statusCode == 503 && options.faults.shares[.status] == 12.5)
        #expect(options.faults.trickleKbps == 300 && options.faults.manifestStatus == .init(code: 404, count: 3))
        let origin = try await SharedOrigin.shared.get()
        for bad in ["status_200-5", "status_503", "reset_101", "trickle_0-5", "mstatus_503-x", "nest_0", "badinit_2", "seed_-1", "flip_x"] {
            let fetched = try await fetch(origin.manifestURL(asset: "generated", options: [bad]))
            #expect(fetched.status == 400, "\(bad)")
            #expect(fetched.text.contains(String(bad.prefix { $0 != "_" }) + "_"), "\(bad): \(fetched.text)")
        }
    }
}
