import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Shared fixture for the `thumbd batch` end-to-end tests: the package and corpus paths, the
/// scratch folder's copies, running the release binary as a child process, and the `--json` summary.
enum BatchPaths {
    static let packageRoot = TestPaths.packageRoot
    static let corpus = TestPaths.corpus

    static func requireThumbd() throws -> String {
        try TestPaths.builtExecutable("thumbd")
    }
}

/// A test's scratch folder: corpus copies and text files put in it.
extension ScratchDirectory {
    /// Copies a corpus file to `folder/relative` (folders created, made writable).
    func copy(_ source: String, to relative: String, in folder: String) throws {
        let destination = folder + "/" + relative
        try FileManager.default.createDirectory(atPath: (destination as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        try Data(contentsOf: URL(fileURLWithPath: source)).write(to: URL(fileURLWithPath: destination))
    }

    func write(_ text: String, to path: String) throws {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    }
}

/// The `--json` summary.
struct BatchSummary: Decodable, Sendable {
    struct Failure: Decodable, Sendable, Hashable { var asset: String; var kind: String; var reason: String }
    var rendered: Int
    var upToDate: Int
    var failed: Int
    var elapsedSeconds: Double
    var imagesPerSecond: Double
    var failures: [Failure]
}

struct BatchResult: Sendable {
    var exitCode: Int32?   // nil when killed by a signal
    var signal: Int32?
    var stdout: String
    var stderr: String
    var summary: BatchSummary? { try? JSONDecoder().decode(BatchSummary.self, from: Data(stdout.utf8)) }
    var describe: Comment { Comment(rawValue: describeText) }
    var describeText: String { "exit \(exitCode.map(String.init) ?? "-") signal \(signal.map(String.init) ?? "-")\nstdout: \(stdout)\nstderr: \(stderr)" }
}

/// A running `thumbd batch`, its output in files of the scratch folder.
final class BatchProcess {
    let child: ChildProcess

    /// `stdin`: a file to read; `environment`: added to this process's own.
    init(_ arguments: [String], stdin: String? = nil, scratch: ScratchDirectory, environment: [String: String] = [:]) throws {
        let id = UUID().uuidString
        child = try ChildProcess(try BatchPaths.requireThumbd(), ["batch"] + arguments,
                                 environment: environment.isEmpty ? nil : ProcessInfo.processInfo.environment.merging(environment) { _, new in new },
                                 stdin: stdin.map { .file($0) } ?? .null,
                                 stdout: .file(scratch.path("stdout-\(id)")), stderr: .file(scratch.path("stderr-\(id)")))
    }

    var pid: Int32 { child.pid }
    var isRunning: Bool { child.isRunning }
    func kill9() { child.signal(SIGKILL) }

    /// Waits (killing it after `timeout` seconds) and collects the result.
    func wait(timeout: Double = 60) -> BatchResult {
        let result = child.end(within: timeout)
        return BatchResult(exitCode: result.exitCode, signal: result.signal, stdout: result.stdout, stderr: result.stderr)
    }
}

enum Batch {
    static func run(_ arguments: [String], stdin: String? = nil, scratch: ScratchDirectory, timeout: Double = 60,
                    environment: [String: String] = [:]) throws -> BatchResult {
        try BatchProcess(arguments, stdin: stdin, scratch: scratch, environment: environment).wait(timeout: timeout)
    }

    /// Regular files under `folder`, relative, sorted; hidden ones (`.NAME.PID.tmp`) apart.
    static func files(under folder: String) -> (visible: [String], hidden: [String]) {
        var visible: [String] = [], hidden: [String] = []
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return ([], []) }
        while let relative = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: folder + "/" + relative, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            if (relative as NSString).lastPathComponent.hasPrefix(".") { hidden.append(relative) } else { visible.append(relative) }
        }
        return (visible.sorted(), hidden.sorted())
    }

    /// Names in a folder (not recursive), sorted.
    static func names(_ folder: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).sorted()
    }

    /// A whole JPEG (SOI … EOI) or PNG (signature … IEND chunk with its CRC): nothing cut short.
    static func isCompleteImage(_ path: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: path), data.count > 16 else { return false }
        let bytes = [UInt8](data)
        if path.hasSuffix(".jpg") {
            return bytes.starts(with: [0xFF, 0xD8, 0xFF]) && bytes.suffix(2).elementsEqual([0xFF, 0xD9])
        }
        if path.hasSuffix(".png") {
            return bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
                && bytes.suffix(12).elementsEqual([0, 0, 0, 0, 0x49, 0x45, 0x4E, 0x44, 0xAE, 0x42, 0x60, 0x82])
        }
        if path.hasSuffix(".webp") {
            // RIFF's length field counts every byte after the first 8: a cut file disagrees.
            let riffLength = (0..<4).reduce(0) { $0 | Int(bytes[4 + $1]) << (8 * $1) }
            return bytes.starts(with: Array("RIFF".utf8)) && bytes[8..<12].elementsEqual(Array("WEBP".utf8)) && riffLength + 8 == bytes.count
        }
        if path.hasSuffix(".avif") {
            return bytes[4..<12].elementsEqual(Array("ftypavif".utf8))
        }
        return false
    }

    /// Polls until `condition` holds or the process ends; true when the condition held.
    static func waitUntil(_ process: BatchProcess, timeout: Double = 30, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            if !process.isRunning { return condition() }
            usleep(2_000)
        }
        return false
    }

    /// ~40 larger camera JPEGs (large-photos, then the biggest OK exif-samples), copied flat into
    /// `folder` as `NN-name.jpg`; returns their names.
    static func copyLargeJPEGs(into folder: String, scratch: ScratchDirectory, count: Int = 40) throws -> [String] {
        let rows = try CorpusManifest.jpegAndPNG()
        let large = rows.filter { $0.set == "large-photos" && $0.status == "OK" }
        let sized = rows.filter { $0.set == "exif-samples" && $0.status == "OK" && $0.file.lowercased().hasSuffix(".jpg") }
            .map { ($0, (try? FileManager.default.attributesOfItem(atPath: BatchPaths.corpus + "/" + $0.relativePath)[.size] as? Int) ?? 0) }
            .sorted { $0.1 > $1.1 }.map(\.0)
        let chosen = Array((large + sized).prefix(count))
        try #require(chosen.count == count, "the corpus has too few large JPEGs")
        var names: [String] = []
        for (index, file) in chosen.enumerated() {
            let name = String(format: "%02d-", index) + (file.file as NSString).lastPathComponent
            try scratch.copy(BatchPaths.corpus + "/" + file.relativePath, to: name, in: folder)
            names.append(name)
        }
        return names
    }
}
