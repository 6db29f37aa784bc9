// swift-tools-version: 6.1
import PackageDescription

/// System libraries the C core links, found with pkg-config (`scripts/setup` installs them).
/// libavfilter is not among them: the core loads it (dlopen) the first time audio is
/// time-stretched, and only needs its headers (libavfilter-dev, in FFmpeg's include directory).
let systemLibraries: [(name: String, pkgConfig: String, apt: String)] = [
    ("CAVFormat", "libavformat", "libavformat-dev"),
    ("CAVCodec", "libavcodec", "libavcodec-dev"),
    ("CAVUtil", "libavutil", "libavutil-dev"),
    ("CSwResample", "libswresample", "libswresample-dev"),
    ("CSwScale", "libswscale", "libswscale-dev"),
    ("CALSA", "alsa", "libasound2-dev"),
    ("CLibDRM", "libdrm", "libdrm-dev"),
    ("CLibASS", "libass", "libass-dev"),
]

let package = Package(
    name: "Marquee",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Marquee", targets: ["Marquee"]),
        .library(name: "MarqueeSignage", targets: ["MarqueeSignage"]),
        .library(name: "MarqueeOrigin", targets: ["MarqueeOrigin"]),
        .library(name: "MarqueeVenue", targets: ["MarqueeVenue"]),
        .executable(name: "marquee", targets: ["MarqueeCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/apple/swift-nio-extras", from: "1.24.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.24.0"),
        // TLS trust roots (a venue's private CA) and TLS errors in words; already built for async-http-client.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.29.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.0.0"),
        // HTTP field names for the venue proxy (already built for Hummingbird).
        .package(url: "https://github.com/apple/swift-http-types", from: "1.0.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // SHA-256 (proof of play's chain, content hashes); already built for async-http-client's TLS.
        .package(url: "https://github.com/apple/swift-crypto", "3.12.0"..<"5.0.0"),
        // Fleet telemetry: the swift-metrics facade, exported for a Prometheus scrape.
        .package(url: "https://github.com/apple/swift-metrics", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.0.0"),
        // ... and pushed as OTLP/HTTP (protobuf). Only its HTTP exporter: the gRPC one would
        // bring grpc-swift (minutes of build) for nothing a box needs.
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        // `swift package generate-documentation` (the Marquee.docc catalog); no code depends on it.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.4.0"),
    ],
    targets: systemLibraries.map { lib in
        .systemLibrary(
            name: lib.name, path: "CCore/system/\(lib.name)", pkgConfig: lib.pkgConfig,
            providers: [.apt([lib.apt])])
    } + [
        .target(
            name: "CCore",
            dependencies: systemLibraries.map { .target(name: $0.name) },
            path: "CCore",
            exclude: ["system", "tests", "bench"],
            sources: ["src"],
            publicHeadersPath: "include",
            cSettings: [
                .define("_GNU_SOURCE"),
                // private headers by their folder: #include "video/frame_queue.h"
                .headerSearchPath("src"),
                .unsafeFlags(["-std=c11", "-Wall", "-Wextra", "-O2"]),
            ],
            linkerSettings: [
                .linkedLibrary("avformat"), .linkedLibrary("avcodec"), .linkedLibrary("avutil"),
                .linkedLibrary("swresample"), .linkedLibrary("swscale"), .linkedLibrary("asound"),
                .linkedLibrary("drm"), .linkedLibrary("ass"), .linkedLibrary("pthread"), .linkedLibrary("m"),
                .linkedLibrary("dl"),
            ]
        ),
        .target(
            name: "MarqueeBridge",
            dependencies: ["CCore", .product(name: "NIOConcurrencyHelpers", package: "swift-nio")]
        ),
        .target(
            name: "MarqueeStreaming",
            dependencies: [
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "Marquee",
            dependencies: [
                "MarqueeBridge", "MarqueeStreaming",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            // The public API is sealed: an import is internal unless written `public import`, so
            // a public declaration that shows a dependency's type is a compile error.
            swiftSettings: [
                .enableUpcomingFeature("InternalImportsByDefault"), .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
        // Signage above the player: playlists and feeds, schedules, the content cache, proof of
        // play. A client of Marquee's package API and events.
        .target(
            name: "MarqueeSignage",
            dependencies: [
                "Marquee", "MarqueeStreaming",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("InternalImportsByDefault"), .enableUpcomingFeature("MemberImportVisibility"),
            ]
        ),
        // The HTTP/1 server the origin and the venue proxy run (HummingbirdCore, started and stopped).
        .target(
            name: "MarqueeServing",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "MarqueeOrigin",
            dependencies: [
                "MarqueeStreaming", "MarqueeServing",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
            ]
        ),
        .target(
            name: "MarqueeVenue",
            dependencies: [
                // Marquee: the SourceRouter a player plays through (VenueProxy+Routing).
                "Marquee", "MarqueeStreaming", "MarqueeServing",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        // Fleet: the QoE record, metrics (swift-metrics; a Prometheus endpoint) and the local
        // control socket (a Unix socket speaking JSON lines).
        .target(
            name: "MarqueeFleet",
            dependencies: [
                "Marquee", "MarqueeSignage", "MarqueeServing", "MarqueeVenue",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOConcurrencyHelpers", package: "swift-nio"),
                // Already built for Hummingbird: the control socket's line framing.
                .product(name: "NIOExtras", package: "swift-nio-extras"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "MarqueeCLI",
            dependencies: [
                "Marquee", "MarqueeSignage", "MarqueeOrigin", "MarqueeVenue", "MarqueeFleet", "MarqueeStreaming",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // Nothing loads code that links against the executable's own symbols: exporting them
            // all (the static Swift runtime's link arguments ask for it) puts 5 MiB of symbol
            // tables in the binary that the dynamic linker reads, symbol by symbol, each time a
            // shared library (FFmpeg's and theirs) is bound.
            linkerSettings: [
                .unsafeFlags(["-Xlinker", "--no-export-dynamic"]),
                // The code a playing box runs, put together (scripts/build-release, scripts/text-order):
                // scattered over the 33 MiB of code, each first touch mapped 64 KiB of it.
                .unsafeFlags(
                    ["-Xlinker", "--section-ordering-file=\(Context.packageDirectory)/link/hot-text.order"],
                    .when(platforms: [.linux], configuration: .release)),
            ]
        ),
        // The parsers' fuzz targets: run by libFuzzer (MarqueeFuzz, below) and by the test
        // suite's fuzz smoke.
        .target(
            name: "MarqueeFuzzTargets",
            dependencies: ["Marquee", "MarqueeSignage", "MarqueeStreaming", "MarqueeVenue"]),
        // Helpers shared by the test targets (external tools, WAV/frames.tsv readers, tone analysis).
        .target(name: "TestSupport", path: "Tests/TestSupport"),
        .testTarget(name: "CCoreTests", dependencies: ["CCore", "TestSupport"]),
        .testTarget(name: "MarqueeStreamingTests", dependencies: ["MarqueeStreaming"]),
        .testTarget(
            name: "MarqueeTests",
            dependencies: ["Marquee", "MarqueeSignage", "MarqueeStreaming", "MarqueeFuzzTargets"]),
        .testTarget(
            name: "MarqueeOriginTests",
            dependencies: [
                "MarqueeOrigin", "MarqueeStreaming",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "Marquee", "MarqueeSignage", "MarqueeOrigin", "MarqueeStreaming", "MarqueeVenue", "MarqueeFleet",
                "TestSupport",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
    ]
)

// The libFuzzer targets of the parsers (scripts/fuzz, docs/testing.md "Fuzzing"), declared only when
// MARQUEE_FUZZ is set: they are built with -sanitize=fuzzer in a build folder of their own and
// are no part of the normal build.
if Context.environment["MARQUEE_FUZZ"] != nil {
    package.products.append(.executable(name: "marquee-fuzz", targets: ["MarqueeFuzz"]))
    package.targets += [
        .executableTarget(
            name: "MarqueeFuzz",
            dependencies: ["MarqueeFuzzTargets", "MarqueeFuzzDriver"],
            // No top-level code: main is MarqueeFuzzDriver's, which runs libFuzzer's driver.
            swiftSettings: [.unsafeFlags(["-parse-as-library"])]
        ),
        .target(name: "MarqueeFuzzDriver"),
    ]
}
