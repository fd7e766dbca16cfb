import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Shared fixture for the `thumbd batch` end-to-end tests: the package and corpus paths, temp
/// folders, running the release binary as a child process, and the `--json` summary.
enum BatchPaths {
    static let packageRoot = TestPaths.packageRoot
    static let corpus = TestPaths.corpus

    static func requireThumbd() throws -> String {
        try TestPaths.builtExecutable("thumbd")
    }
}

/// One row of the corpus `manifest.tsv` (set, file, status; the 12-bit/lossless JPEG note).
struct CorpusFile: Sendable {
    var set: String
    var file: String
    var status: String
    var detail: String
    var relativePath: String { "\(set)/\(file)" }
    var isHighPrecisionJPEG: Bool { detail.contains("precision 12") || detail.contains("SOF type 0xc3") }

    static let all: [CorpusFile] = {
        guard let text = try? String(contentsOfFile: BatchPaths.corpus + "/manifest.tsv", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").dropFirst().compactMap { line in
            let cols = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return cols.count >= 9 ? CorpusFile(set: cols[0], file: cols[1], status: cols[6], detail: cols[8]) : nil
        }
    }()
}

/// A temp folder removed when the value goes away.
final class Scratch {
    let path: String
    init(_ label: String) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("thumbd-batch-\(label)-\(UUID())").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(atPath: path) }

    func sub(_ name: String) -> String { path + "/" + name }

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

/// A running `thumbd batch`, its output in files (no pipe to fill up).
final class BatchProcess {
    let process = Process()
    let outPath: String
    let errPath: String

    /// `environment`: added to this process's own.
    init(_ arguments: [String], stdin: String? = nil, scratch: Scratch, environment: [String: String] = [:]) throws {
        let id = UUID().uuidString
        outPath = scratch.sub("stdout-\(id)")
        errPath = scratch.sub("stderr-\(id)")
        FileManager.default.createFile(atPath: outPath, contents: nil)
        FileManager.default.createFile(atPath: errPath, contents: nil)
        process.executableURL = URL(fileURLWithPath: try BatchPaths.requireThumbd())
        process.arguments = ["batch"] + arguments
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
        }
        process.standardOutput = FileHandle(forWritingAtPath: outPath)
        process.standardError = FileHandle(forWritingAtPath: errPath)
        process.standardInput = stdin.flatMap { FileHandle(forReadingAtPath: $0) } ?? FileHandle.nullDevice
        try process.run()
    }

    var pid: Int32 { process.processIdentifier }
    var isRunning: Bool { process.isRunning }
    func kill9() { _ = Glibc.kill(pid, SIGKILL) }

    /// Waits (killing it after `timeout` seconds) and collects the result.
    func wait(timeout: Double = 60) -> BatchResult {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(5_000) }
        if process.isRunning { kill9() }
        process.waitUntilExit()
        let read = { (path: String) in (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
        let signaled = process.terminationReason == .uncaughtSignal
        return BatchResult(exitCode: signaled ? nil : process.terminationStatus,
                           signal: signaled ? process.terminationStatus : nil,
                           stdout: read(outPath), stderr: read(errPath))
    }
}

enum Batch {
    static func run(_ arguments: [String], stdin: String? = nil, scratch: Scratch, timeout: Double = 60,
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
    static func copyLargeJPEGs(into folder: String, scratch: Scratch, count: Int = 40) throws -> [String] {
        let large = CorpusFile.all.filter { $0.set == "large-photos" && $0.status == "OK" }
        let sized = CorpusFile.all.filter { $0.set == "exif-samples" && $0.status == "OK" && $0.file.lowercased().hasSuffix(".jpg") }
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
