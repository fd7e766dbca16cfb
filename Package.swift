// swift-tools-version: 6.0
import PackageDescription

// Every import is internal unless a file says `package import`: a module's C libraries and the
// modules beneath it are its own business, not its callers'.
let internalImports: [SwiftSetting] = [.enableUpcomingFeature("InternalImportsByDefault")]

let package = Package(
    name: "thumbd",
    // The daemon is the product; its modules are its parts (`package` access between them), not
    // libraries for others to link.
    products: [
        .executable(name: "thumbd", targets: ["thumbd"]),
    ],
    targets: [
        // System C libraries from Debian's -dev packages: module map + umbrella header only.
        .systemLibrary(name: "CJPEG", path: "Sources/CJPEG"),
        .systemLibrary(name: "CPNG", path: "Sources/CPNG"),
        .systemLibrary(name: "CLCMS", path: "Sources/CLCMS"),
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CMicroHTTPD", path: "Sources/CMicroHTTPD"),
        .systemLibrary(name: "CHiredis", path: "Sources/CHiredis"),
        .systemLibrary(name: "CSeccomp", path: "Sources/CSeccomp"),
        .systemLibrary(name: "CWebP", path: "Sources/CWebP", pkgConfig: "libwebp"),
        .systemLibrary(name: "CGIF", path: "Sources/CGIF"),
        .systemLibrary(name: "CHeif", path: "Sources/CHeif", pkgConfig: "libheif"),
        .systemLibrary(name: "CTIFF", path: "Sources/CTIFF", pkgConfig: "libtiff-4"),
        .systemLibrary(name: "CJXL", path: "Sources/CJXL", pkgConfig: "libjxl"),
        .systemLibrary(name: "CSystemd", path: "Sources/CSystemd", pkgConfig: "libsystemd"),
        .systemLibrary(name: "CCrypto", path: "Sources/CCrypto", pkgConfig: "libcrypto"),
        .systemLibrary(name: "CFFmpeg", path: "Sources/CFFmpeg"),
        // The only C code of ours: every setjmp and every libjpeg/libpng/lcms call lives here, and
        // libtiff's variadic calls (TIFFGetField, its va_list message handlers).
        .target(name: "CThumbShim", dependencies: ["CJPEG", "CPNG", "CLCMS", "CTIFF"]),
        // FFmpeg's custom I/O (positioned reads, every other input refused), its log kept off
        // stderr, and sws_scale over an AVFrame's arrays.
        .target(name: "CThumbVideo", dependencies: ["CFFmpeg"]),
        // syscall(2) is variadic: openat2 for confined asset opens (CThumb_openat2).
        .target(name: "CThumbSystem"),
        // The bottom of the house: the system-call funnel, file identity, whole-file reads and
        // writes. Everything it declares is `package`: no module exports a syscall as API.
        .target(name: "ThumbSystem", dependencies: ["CThumbSystem"], swiftSettings: internalImports),
        .target(name: "ThumbImaging", dependencies: ["ThumbSystem", "CThumbShim", "CJPEG", "CPNG", "CLCMS", "CWebP", "CGIF", "CHeif", "CTIFF", "CJXL", "CFFmpeg", "CThumbVideo"], swiftSettings: internalImports),
        // SCM_RIGHTS (CMSG_* macros), prctl, posix_spawn's closefrom and the seccomp allow-list.
        .target(name: "CThumbWorker", dependencies: ["CSeccomp"]),
        // Render worker processes: the protocol, the sandboxed worker and the daemon's side of it.
        .target(name: "ThumbWorker", dependencies: ["ThumbSystem", "ThumbImaging", "CThumbWorker", "CSeccomp"], swiftSettings: internalImports),
        .target(name: "ThumbPipeline", dependencies: ["ThumbSystem", "ThumbImaging", "ThumbWorker", "CSQLite"], swiftSettings: internalImports),
        // Who may do what: roles, the access section's values, signed URLs (HMAC-SHA256 from libcrypto).
        .target(name: "ThumbAccess", dependencies: ["ThumbSystem", "CCrypto"], swiftSettings: internalImports),
        // The config file: parsed into bounded values, and its one mapping to a pipeline (serve, spool, batch).
        .target(name: "ThumbConfiguration", dependencies: ["ThumbSystem", "ThumbImaging", "ThumbWorker", "ThumbPipeline", "ThumbAccess"], swiftSettings: internalImports),
        // libmicrohttpd's variadic start function, wrapped (CThumb_HTTPStart).
        .target(name: "CThumbHTTP", dependencies: ["CMicroHTTPD"]),
        .target(name: "ThumbServer", dependencies: ["ThumbSystem", "ThumbWorker", "ThumbPipeline", "ThumbConfiguration", "ThumbImaging", "ThumbBatch", "ThumbAccess", "CThumbHTTP", "CMicroHTTPD", "CSystemd"],
                // The API's contract, served at GET /v1/openapi.yaml: docs/openapi.yaml (a link to it
                // here, where SwiftPM takes resources from) compiled in as bytes; and the files it
                // serves to browsers (Web/: the cells library and the operator console).
                resources: [.embedInCode("openapi.yaml"), .embedInCode("Web/thumbd-cells.js"), .embedInCode("Web/console.html"),
                            .embedInCode("Web/console.js"), .embedInCode("Web/console-charts.js"), .embedInCode("Web/console.css")],
                swiftSettings: internalImports),
        .target(name: "ThumbBatch", dependencies: ["ThumbSystem", "ThumbPipeline", "ThumbConfiguration", "ThumbImaging", "CHiredis"], swiftSettings: internalImports),
        .executableTarget(name: "thumbd", dependencies: ["ThumbSystem", "ThumbWorker", "ThumbImaging", "ThumbPipeline", "ThumbConfiguration", "ThumbServer", "ThumbBatch",
                                                         "ThumbAccess"]),
        .executableTarget(name: "scroll-bench", dependencies: ["ThumbPipeline", "ThumbImaging", "ThumbWorker"],
                          path: "Benchmarks/ScrollSimulation"),
        .executableTarget(name: "crop-bench", dependencies: ["ThumbImaging"], path: "Benchmarks/CropBench"),
        // What every test target shares: the package and corpus paths, this build's executables,
        // polling, child processes (posix_spawn's closefrom from CThumbWorker), scratch folders, the
        // corpus manifests.
        .target(name: "ThumbTestSupport", dependencies: ["CThumbWorker"], path: "Tests/TestSupport"),
        // The sample config's kinds are the imaging tests' kinds (ThumbConfiguration loads it).
        .testTarget(name: "ThumbImagingTests", dependencies: ["ThumbTestSupport", "ThumbSystem", "ThumbImaging", "ThumbConfiguration"]),
        .testTarget(name: "ThumbPipelineTests", dependencies: ["ThumbTestSupport", "ThumbSystem", "ThumbPipeline", "ThumbImaging"]),
        .testTarget(name: "ThumbServerTests", dependencies: ["ThumbTestSupport", "ThumbSystem", "ThumbServer", "ThumbBatch", "ThumbPipeline", "ThumbImaging", "CThumbWorker",
                                                             "ThumbAccess", "ThumbConfiguration"]),
        .testTarget(name: "ThumbBatchTests", dependencies: ["ThumbTestSupport", "ThumbSystem", "ThumbBatch", "ThumbPipeline", "ThumbImaging"]),
        .testTarget(name: "ThumbWorkerTests", dependencies: ["ThumbTestSupport", "ThumbSystem", "ThumbImaging", "ThumbWorker"]),
        // The process the crash tests kill with SIGKILL mid-write (they spawn it from the build folder).
        .executableTarget(name: "thumbd-crash-child", dependencies: ["ThumbSystem", "ThumbPipeline", "ThumbImaging"], path: "Tests/CrashChild"),
        // The render worker with a fault hook (trap, loop, alloc, …) that the worker tests launch;
        // the production thumbd never passes one.
        .executableTarget(name: "thumbd-test-worker", dependencies: ["CThumbSystem", "CThumbWorker", "ThumbSystem", "ThumbImaging", "ThumbWorker"], path: "Tests/TestWorker"),
        // What each fuzz target feeds its door (scripts/fuzz); the regression tests replay crashes through it.
        .target(name: "FuzzDoors", dependencies: ["ThumbSystem", "ThumbImaging", "ThumbPipeline", "ThumbConfiguration", "ThumbServer", "ThumbBatch", "ThumbWorker", "ThumbAccess"],
                path: "Fuzz/Doors"),
        .testTarget(name: "FuzzRegressionTests", dependencies: ["FuzzDoors"]),
    ],
    swiftLanguageModes: [.v6]
)

// libFuzzer executables, one per folder of Fuzz/Targets, in place of the other executables and
// the tests: only when scripts/fuzz builds (THUMBD_FUZZ=1, with --sanitize fuzzer), since every
// executable of such a build gets libFuzzer's main and these have no main of their own.
if Context.environment["THUMBD_FUZZ"] != nil {
    package.products.removeAll { $0 is Product.Executable }
    package.targets.removeAll { $0.type == .executable || $0.type == .test || $0.name == "ThumbTestSupport" }
    // Named here, not listed from the folder: SwiftPM caches a manifest's evaluation by its text
    // (in ~/.cache), so a folder added later stayed unseen by a cached listing (CI: "no such file
    // fuzz-jpeg-dc-scans"). scripts/fuzz refuses to run when this list and Fuzz/Targets differ.
    let doors = ["asset-list", "focus-body", "gif", "heif", "http-request", "job-line", "jpeg", "jpeg-dc-scans", "jxl", "kind-config", "placeholders-body", "png", "prefetch-body",
                 "redis-fields", "signatures-body", "slot-spec", "tiff", "video-av1", "video-avi", "video-h264", "video-hevc", "video-matroska",
                 "video-mjpeg", "video-mp4", "video-mpeg4", "video-vp8", "video-vp9", "webp", "worker-answer", "worker-render"]
    for door in doors {
        package.targets.append(.executableTarget(name: "fuzz-\(door)", dependencies: ["FuzzDoors"], path: "Fuzz/Targets/\(door)",
                                                 swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
    }
}
