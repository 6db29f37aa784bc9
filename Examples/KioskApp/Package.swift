// swift-tools-version: 6.0
import Foundation
import PackageDescription

// A firmware app in miniature: plays a stream through Marquee's public API only. It depends on
// the Marquee package in this repository by path; an app elsewhere names its Marquee checkout
// or repository instead.
//
// A path dependency's identity is its folder's name (`marquee`, `main`, a worktree's name),
// not the package's name, and `.product(…, package:)` takes the identity: it is read from the
// path here, so the example builds from any checkout.
let marqueeRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    .appendingPathComponent("../..").standardizedFileURL

let package = Package(
    name: "KioskApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(path: "../..")
    ],
    targets: [
        .executableTarget(
            name: "KioskApp",
            dependencies: [.product(name: "Marquee", package: marqueeRoot.lastPathComponent)]
        )
    ]
)
