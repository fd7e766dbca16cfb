import Foundation
import Testing
import ThumbTestSupport

/// The module rules of docs/architecture.md, checked against every `import` in Sources/: a
/// module imports only what its row allows, so a layer cannot start leaning on one above it
/// (ThumbImaging on ThumbPipeline, the worker on Foundation) without this test and that page
/// changing together.
@Suite struct ModuleImportRuleTests {
    /// Swift modules of ours and what each may import besides the platform modules. The C
    /// modules' folders hold no Swift and are not listed.
    static let allowed: [String: Set<String>] = [
        "ThumbSystem": ["CThumbSystem"],
        "ThumbImaging": ["ThumbSystem", "CThumbShim", "CJPEG", "CPNG", "CLCMS", "CWebP", "CGIF", "CHeif", "CTIFF", "CJXL", "CFFmpeg", "CThumbVideo"],
        "ThumbWorker": ["ThumbSystem", "ThumbImaging", "CThumbWorker", "CSeccomp"],
        "ThumbPipeline": ["ThumbSystem", "ThumbImaging", "ThumbWorker", "CSQLite"],
        "ThumbAccess": ["ThumbSystem", "CCrypto"],
        "ThumbConfiguration": ["ThumbSystem", "ThumbImaging", "ThumbWorker", "ThumbPipeline", "ThumbAccess"],
        "ThumbBatch": ["ThumbSystem", "ThumbImaging", "ThumbPipeline", "ThumbConfiguration", "CHiredis"],
        "ThumbServer": ["ThumbSystem", "ThumbImaging", "ThumbWorker", "ThumbPipeline", "ThumbAccess", "ThumbConfiguration", "ThumbBatch",
                        "CThumbHTTP", "CMicroHTTPD", "CSystemd"],
        "thumbd": ["ThumbSystem", "ThumbImaging", "ThumbWorker", "ThumbPipeline", "ThumbAccess", "ThumbConfiguration", "ThumbBatch", "ThumbServer"],
    ]
    /// The platform's modules, allowed everywhere except in the modules that link no Foundation:
    /// the syscall funnel, the worker that parses untrusted bytes, and the signing code.
    static let platform: Set<String> = ["Foundation", "Glibc", "Dispatch", "Synchronization"]
    static let withoutFoundation: Set<String> = ["ThumbSystem", "ThumbWorker", "ThumbAccess"]

    /// The modules `source` imports, with their line numbers (`import X`, `internal import X`,
    /// `@preconcurrency import X`, `import struct X.Y`).
    static func imports(in source: String) -> [(module: String, line: Int)] {
        let pattern = /^\s*(?:@\w+\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?import\s+(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)/
        var found: [(module: String, line: Int)] = []
        for (index, line) in source.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if let match = line.prefixMatch(of: pattern) { found.append((String(match.1), index + 1)) }
        }
        return found
    }

    /// What `module`'s file at `path` imports that its row does not allow, said as a finding.
    static func violations(module: String, path: String, source: String) -> [String] {
        guard let rule = allowed[module] else { return ["\(path): module \(module) has no row in the import rules (docs/architecture.md)"] }
        let platform = withoutFoundation.contains(module) ? Self.platform.subtracting(["Foundation"]) : Self.platform
        // A C module stays the business of the file that calls it: never imported beyond it.
        let leak = /^\s*(?:@_exported\s+import|(?:@\w+\s+)*(?:public|package)\s+import\s+C[A-Z])/
        let leaks = source.split(separator: "\n", omittingEmptySubsequences: false).enumerated().compactMap { index, line in
            line.prefixMatch(of: leak) == nil ? nil : "\(path):\(index + 1): \(module) exports an import: \(line.trimmingCharacters(in: .whitespaces))"
        }
        return leaks + imports(in: source).compactMap { imported in
            guard imported.module != module, !rule.contains(imported.module), !platform.contains(imported.module) else { return nil }
            return "\(path):\(imported.line): \(module) imports \(imported.module); docs/architecture.md allows it "
                + (rule.sorted() + platform.sorted()).joined(separator: ", ")
        }
    }

    @Test("the checker finds a layer reaching up: ThumbImaging importing ThumbPipeline, the worker importing Foundation, an unlisted module, a C module imported beyond its file")
    func checkerFindsViolations() {
        #expect(Self.violations(module: "ThumbImaging", path: "x.swift", source: "import Glibc\ninternal import CJPEG\n@preconcurrency import ThumbPipeline\n").count == 1)
        #expect(Self.violations(module: "ThumbWorker", path: "x.swift", source: "import Foundation\n").count == 1)
        #expect(Self.violations(module: "ThumbImaging", path: "x.swift", source: "import struct ThumbServer.HTTPRequest\n").count == 1)
        #expect(Self.violations(module: "ThumbNew", path: "x.swift", source: "import Glibc\n").count == 1)
        #expect(Self.violations(module: "ThumbImaging", path: "x.swift", source: "// import ThumbPipeline\nlet important = 1\n").isEmpty)
        #expect(Self.violations(module: "ThumbImaging", path: "x.swift", source: "package import CJPEG\n").count == 1)
        #expect(Self.violations(module: "ThumbPipeline", path: "x.swift", source: "package import ThumbImaging\n").isEmpty)
    }

    @Test("every Swift module in Sources imports only what docs/architecture.md allows it")
    func sourcesFollowTheRules() throws {
        let sources = TestPaths.packageRoot + "/Sources"
        let manager = FileManager.default
        var findings: [String] = []
        var modulesSeen = 0
        for module in try manager.contentsOfDirectory(atPath: sources).sorted() {
            guard let walker = manager.enumerator(atPath: sources + "/" + module) else { continue }
            let files = walker.compactMap { $0 as? String }.filter { $0.hasSuffix(".swift") }
            guard !files.isEmpty else { continue }
            modulesSeen += 1
            for file in files {
                let path = "Sources/\(module)/\(file)"
                let source = try String(contentsOfFile: TestPaths.packageRoot + "/" + path, encoding: .utf8)
                findings += Self.violations(module: module, path: path, source: source)
            }
        }
        #expect(modulesSeen == Self.allowed.count, "Swift modules in Sources: \(modulesSeen), rows: \(Self.allowed.count)")
        #expect(findings.isEmpty, "\(findings.joined(separator: "\n"))")
        // The page states the same rules: every module has its row there.
        let page = try String(contentsOfFile: TestPaths.packageRoot + "/docs/architecture.md", encoding: .utf8)
        for module in Self.allowed.keys.sorted() { #expect(page.contains("`\(module)`"), "docs/architecture.md does not name `\(module)`") }
    }
}
