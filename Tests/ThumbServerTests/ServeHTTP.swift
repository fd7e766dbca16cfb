import Foundation
import Synchronization
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// HTTP for the `thumbd serve` tests: curl over the daemon's Unix socket, one request or a batch
/// in parallel; Prometheus text; image headers.

struct ServeResponse {
    /// 0 when curl got no HTTP answer (connection refused or reset, timeout).
    var status: Int
    var curlExit: Int32
    /// Lower-cased names.
    var headers: [String: String]
    var body: [UInt8]
    var seconds: Double

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
    var errorCode: String? { json["error"] as? String }
    var summary: String { "\(status) (curl \(curlExit)) \(headers) \(body.count) bytes: \(text.prefix(300))" }
}

enum ServeCurl {
    static let curl = "/usr/bin/curl"

    /// One request; `--path-as-is` so that `..` reaches the server as sent.
    static func request(socket: String, _ path: String, method: String = "GET", headers: [String] = [],
                        body: String? = nil, timeout: Double = 30) throws -> ServeResponse {
        try request(url: "http://thumbd" + path, via: ["--unix-socket", socket], method: method, headers: headers, body: body, timeout: timeout)
    }

    /// One request to `url`; `via`: curl's options for the way there (`--unix-socket PATH`, or
    /// none for TCP); `runAs`: a command that runs curl as another user (`setpriv --reuid …`);
    /// `contentType`: of the body (nil: none sent).
    static func request(url: String, via: [String] = [], runAs: [String] = [], method: String = "GET", headers: [String] = [],
                        body: String? = nil, contentType: String? = "application/json", timeout: Double = 30) throws -> ServeResponse {
        // Writable by the user `runAs` names.
        let scratch = try ScratchDirectory("curl", permissions: 0o777)
        defer { scratch.remove() }
        var argv = runAs + [curl, "--silent", "--path-as-is"] + via + ["--max-time", String(timeout),
                    "--dump-header", scratch.path("headers"), "--output", scratch.path("body"), "--write-out", "%{http_code}"]
        if method == "HEAD" { argv.append("--head") } else if method != "GET" { argv += ["--request", method] }
        for header in headers { argv += ["--header", header] }
        if let body {
            argv += ["--header", "Content-Type:" + (contentType.map { " " + $0 } ?? ""), "--data-binary", body]
        }
        argv.append(url)
        let start = Date()
        let child = try ChildProcess.run(argv[0], Array(argv.dropFirst()), environment: ChildProcess.cleanEnvironment, timeout: timeout + 10)
        guard !child.timedOut else { throw TestFailure("curl \(url) hung") }
        let read = { (name: String) in (try? Data(contentsOf: URL(fileURLWithPath: scratch.path(name)))) ?? Data() }
        // The last header block (a 100 Continue may come first).
        let block = String(decoding: read("headers"), as: UTF8.self).components(separatedBy: "\r\n\r\n")
            .last(where: { !$0.isEmpty }) ?? ""
        var parsed: [String: String] = [:]
        for line in block.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            parsed[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return ServeResponse(status: Int(child.stdout) ?? 0, curlExit: child.status,
                             headers: parsed, body: Array(read("body")), seconds: Date().timeIntervalSince(start))
    }

    /// One request on another thread; `result()` waits for its answer.
    static func background(socket: String, _ path: String, method: String = "GET", timeout: Double = 30) -> ServePending {
        let pending = ServePending()
        DispatchQueue.global().async {
            let result = Result { try request(socket: socket, path, method: method, timeout: timeout) }
            pending.box.withLock { $0 = result }
            pending.done.signal()
        }
        return pending
    }

    /// Starts GET requests for every path at once (one curl, all connections in parallel).
    static func startBatch(socket: String, _ paths: [String], timeout: Double = 60) throws -> ServeBatch {
        try ServeBatch(socket: socket, paths: paths, timeout: timeout)
    }
}

final class ServePending: Sendable {
    let box = Mutex<Result<ServeResponse, any Error>?>(nil)
    let done = DispatchSemaphore(value: 0)

    func result(timeout: Double = 60) throws -> ServeResponse {
        guard done.wait(timeout: .now() + timeout) == .success, let result = box.withLock({ $0 }) else {
            throw TestFailure("no answer within \(timeout) s")
        }
        return try result.get()
    }
}

/// Parallel GETs running in the background; `finish` waits for them and gives one result per path.
final class ServeBatch {
    struct Result {
        var status: Int
        var curlExit: Int32
        var retryAfter: String
        var path: String
    }

    let child: ChildProcess
    let count: Int
    let timeout: Double

    init(socket: String, paths: [String], timeout: Double) throws {
        var argv = [ServeCurl.curl, "--silent", "--no-progress-meter", "--path-as-is", "--unix-socket", socket,
                    "--max-time", String(timeout), "--parallel", "--parallel-immediate", "--parallel-max", "100",
                    "--write-out", "%{http_code} %{exitcode} [%header{retry-after}] %{url}\n"]
        for path in paths { argv += ["--output", "/dev/null", "http://thumbd" + path] }
        child = try ChildProcess(argv[0], Array(argv.dropFirst()), environment: ChildProcess.cleanEnvironment, stdout: .captured)
        count = paths.count
        self.timeout = timeout
    }

    func finish() throws -> [Result] {
        guard child.wait(timeout: timeout + 10) != nil else { throw TestFailure("curl batch hung") }
        let output = child.stdout
        let results = output.split(separator: "\n").map { line -> Result in
            let fields = line.split(separator: " ", maxSplits: 3).map(String.init)
            let retry = fields.count > 2 ? String(fields[2].dropFirst().dropLast()) : ""
            let path = fields.count > 3 ? String(fields[3].dropFirst("http://thumbd".count)) : ""
            return Result(status: Int(fields.first ?? "") ?? 0, curlExit: Int32(fields.count > 1 ? fields[1] : "") ?? -1,
                          retryAfter: retry, path: path)
        }
        guard results.count == count else { throw TestFailure("curl batch: \(results.count) results for \(count):\n\(output)") }
        return results
    }
}

/// Prometheus text exposition: sample name with labels → value.
struct ServeMetrics {
    let text: String
    let samples: [String: Double]

    init(_ text: String) {
        self.text = text
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[String(line[..<space])] = value
        }
        self.samples = samples
    }

    subscript(_ sample: String) -> Double { samples[sample] ?? 0 }

    /// Sum over every sample of a family (all label values).
    func sum(_ family: String) -> Double {
        samples.filter { $0.key == family || $0.key.hasPrefix(family + "{") }.values.reduce(0, +)
    }

    func queued(_ priority: String) -> Double { self["thumbd_queue_depth{priority=\"\(priority)\"}"] }

    func requests(_ route: String, _ status: Int) -> Int {
        Int(self["thumbd_http_requests_total{route=\"\(route)\",status=\"\(status)\"}"])
    }

    var families: Set<String> {
        Set(text.split(separator: "\n").filter { $0.hasPrefix("# TYPE ") }
            .compactMap { $0.split(separator: " ").dropFirst(2).first.map(String.init) })
    }
}

/// Format and pixel size from the file header alone (AVIF: the format only, size 0x0).
enum ServeImageHeader {
    /// The canvas of a WebP: VP8X (extended), VP8L (lossless) or VP8 (lossy) first chunk.
    static func webpSize(_ bytes: [UInt8]) -> (width: Int, height: Int)? {
        guard bytes.count >= 30, bytes.starts(with: Array("RIFF".utf8)), bytes[8..<12].elementsEqual(Array("WEBP".utf8)) else { return nil }
        func le(_ at: Int, _ count: Int) -> Int { (0..<count).reduce(0) { $0 | Int(bytes[at + $1]) << (8 * $1) } }
        switch String(decoding: bytes[12..<16], as: UTF8.self) {
        case "VP8X": return (le(24, 3) + 1, le(27, 3) + 1)
        case "VP8L":
            let bits = le(21, 4)
            return ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
        case "VP8 ": return (le(26, 2) & 0x3FFF, le(28, 2) & 0x3FFF)
        default: return nil
        }
    }

    static func size(_ bytes: [UInt8]) -> (format: String, width: Int, height: Int)? {
        func be16(_ at: Int) -> Int { Int(bytes[at]) << 8 | Int(bytes[at + 1]) }
        func be32(_ at: Int) -> Int { be16(at) << 16 | be16(at + 2) }
        if bytes.count >= 24, bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]),
           bytes[12..<16].elementsEqual(Array("IHDR".utf8)) {
            return ("png", be32(16), be32(20))
        }
        if let webp = webpSize(bytes) { return ("webp", webp.width, webp.height) }
        if bytes.count >= 12, bytes[4..<12].elementsEqual(Array("ftypavif".utf8)) { return ("avif", 0, 0) }
        guard bytes.count > 4, bytes[0] == 0xFF, bytes[1] == 0xD8 else { return nil }
        var index = 2
        while index + 9 < bytes.count, bytes[index] == 0xFF {
            let marker = bytes[index + 1]
            if (0xC0...0xCF).contains(marker) && ![0xC4, 0xC8, 0xCC].contains(marker) {
                return ("jpeg", be16(index + 7), be16(index + 5))
            }
            index += 2 + be16(index + 2)
        }
        return nil
    }
}
