// swift-tools-version: 6.0
import PackageDescription

let package = Package(
    name: "thumbd",
    products: [
        .executable(name: "thumbd", targets: ["thumbd"]),
        .library(name: "ThumbImaging", targets: ["ThumbImaging"]),
        .library(name: "ThumbPipeline", targets: ["ThumbPipeline"]),
    ],
    targets: [
        // System C libraries from Debian's -dev packages: module map + umbrella header only.
        .systemLibrary(name: "CJPEG", path: "Sources/CJPEG"),
        .systemLibrary(name: "CPNG", path: "Sources/CPNG"),
        .systemLibrary(name: "CLCMS", path: "Sources/CLCMS"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        // The only C code of ours: every setjmp and every libjpeg/libpng/lcms call lives here.
        .target(name: "CThumbShim", dependencies: ["CJPEG", "CPNG", "CLCMS"]),
        .target(name: "ThumbImaging", dependencies: ["CThumbShim", "CJPEG", "CPNG", "CLCMS"]),
        .target(name: "ThumbPipeline", dependencies: ["ThumbImaging", "CSQLite"]),
        .executableTarget(name: "thumbd", dependencies: ["ThumbImaging", "ThumbPipeline"]),
        .executableTarget(name: "scroll-bench", dependencies: ["ThumbPipeline", "ThumbImaging"],
                          path: "Benchmarks/ScrollSimulation"),
        .testTarget(name: "ThumbImagingTests", dependencies: ["ThumbImaging"]),
        .testTarget(name: "ThumbPipelineTests", dependencies: ["ThumbPipeline", "ThumbImaging"]),
    ],
    swiftLanguageModes: [.v6]
)
