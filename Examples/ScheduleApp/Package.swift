// swift-tools-version: 6.0
import Foundation
import PackageDescription

// A signage app in miniature: follows a schedule through the public API of Marquee and
// MarqueeSignage only. It depends on the Marquee package in this repository by path; an app
// elsewhere names its Marquee checkout or repository instead.
//
// A path dependency's identity is its folder's name (`marquee`, `main`, a worktree's name),
// not the package's name, and `.product(…, package:)` takes the identity: it is read from the
// path here, so the example builds from any checkout.
let marqueeRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../..").standardizedFileURL

let package = Package(
    name: "ScheduleApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "ScheduleApp",
            dependencies: [
                .product(name: "Marquee", package: marqueeRoot.lastPathComponent),
                .product(name: "MarqueeSignage", package: marqueeRoot.lastPathComponent),
            ]
        )
    ]
)
