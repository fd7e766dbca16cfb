// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "thumbd",
    products: [
        .executable(name: "thumbd", targets: ["thumbd"]),
        .library(name: "ThumbImaging", targets: ["ThumbImaging"]),
    ],
    targets: [
        // System C libraries from Debian's -dev packages: module map + umbrella header only.
        .systemLibrary(name: "CJPEG", path: "Sources/CJPEG"),
        .systemLibrary(name: "CPNG", path: "Sources/CPNG"),
        .systemLibrary(name: "CLCMS", path: "Sources/CLCMS"),
        // The only C code of ours: every setjmp and every libjpeg/libpng/lcms call lives here.
        .target(name: "CThumbShim", dependencies: ["CJPEG", "CPNG", "CLCMS"]),
        .target(name: "ThumbImaging", dependencies: ["CThumbShim", "CJPEG", "CPNG", "CLCMS"]),
        .executableTarget(name: "thumbd", dependencies: ["ThumbImaging"]),
        .testTarget(name: "ThumbImagingTests", dependencies: ["ThumbImaging"]),
    ],
    swiftLanguageModes: [.v6]
)
