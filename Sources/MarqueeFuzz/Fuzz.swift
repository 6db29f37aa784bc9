import Foundation
import MarqueeFuzzTargets

// The libFuzzer executable of the parser targets (MarqueeFuzzTargets). One executable, the
// target named by MARQUEE_FUZZ_TARGET; built and run by scripts/fuzz (docs/testing.md "Fuzzing"):
//
//   MARQUEE_FUZZ=1 swift build -c release --scratch-path .build/fuzz/swift \
//       -Xswiftc -sanitize=fuzzer,address --product marquee-fuzz
//   MARQUEE_FUZZ_TARGET=mpd .build/fuzz/swift/release/marquee-fuzz <corpus dir> [libFuzzer flags]

let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["MARQUEE_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("marquee-fuzz: set MARQUEE_FUZZ_TARGET to one of \(names)\n".utf8))
        exit(2)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    target.run(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
    return 0
}
