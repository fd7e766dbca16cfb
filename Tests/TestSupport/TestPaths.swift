import Foundation

/// Where the package, the shared corpus and this build's executables are, for every test target
/// (each used to find them on its own, in four slightly different ways).
public enum TestPaths {
    /// Tests/TestSupport/TestPaths.swift → the package root.
    public static let packageRoot: String = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().path

    /// `../shared/corpus` from the package root: real images written by others.
    public static let corpus: String = URL(fileURLWithPath: packageRoot).appendingPathComponent("../shared/corpus")
        .standardizedFileURL.path

    /// `relative` (e.g. `"exif-samples/Canon_40D.jpg"`) inside the corpus.
    public static func corpusFile(_ relative: String) -> String { corpus + "/" + relative }

    /// An executable of this build (`thumbd`, `thumbd-test-worker`, `thumbd-crash-child`):
    /// beside the running test bundle first, then `.build/release`, then `.build/debug`.
    public static func builtExecutable(_ name: String) throws(TestFailure) -> String {
        var candidates: [String] = []
        if let running = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            candidates.append(URL(fileURLWithPath: running).deletingLastPathComponent().appendingPathComponent(name).path)
        }
        candidates += ["release", "debug"].map { packageRoot + "/.build/\($0)/\(name)" }
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw TestFailure("no built \(name) (looked at \(candidates)): "
                              + "build with `swift build -c release -Xswiftc -enable-testing --build-tests` first")
        }
        return found
    }
}

/// A test's own failure, with what it was waiting for or could not find.
public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
