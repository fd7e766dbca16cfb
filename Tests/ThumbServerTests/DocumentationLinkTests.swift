import Foundation
import Testing
import ThumbTestSupport

/// The README is the front page (under 200 lines) and the rest of the documentation lives in
/// docs/ and beside the code: every relative Markdown link in those pages must lead somewhere,
/// to a file or folder of the package and, with a `#fragment`, to a heading of a Markdown page
/// (GitHub's slugs). A moved or renamed section fails here, not as a dead link on the front page.
@Suite("documentation: a short README and links that resolve")
struct DocumentationLinkTests {
    static let root = ServePaths.packageRoot

    /// README.md, every Markdown page under docs/, and the READMEs beside the code they describe.
    static func pages() throws -> [String] {
        var pages = ["README.md", "Benchmarks/README.md", "systemd/README.md", "Fuzz/README.md"]
        let docs = root + "/docs"
        guard let walker = FileManager.default.enumerator(atPath: docs) else {
            throw TestFailure("cannot list \(docs)")
        }
        var inDocs: [String] = []
        while let relative = walker.nextObject() as? String {
            if relative.hasSuffix(".md") { inDocs.append("docs/" + relative) }
        }
        pages += inDocs.sorted()
        return pages
    }

    @Test("the README is under 200 lines")
    func readmeIsShort() throws {
        let text = try String(contentsOfFile: Self.root + "/README.md", encoding: .utf8)
        var lines = text.components(separatedBy: "\n")
        if lines.last == "" { lines.removeLast() }
        #expect(lines.count < 200, "README.md has \(lines.count) lines; the front page must stay under 200 (details go to docs/)")
    }

    @Test("every relative link in the README, docs/ and the code's READMEs resolves, anchors included")
    func everyLinkResolves() throws {
        let pages = try Self.pages()
        #expect(pages.contains("docs/http-api.md"), "docs/ should hold the split-out pages; found \(pages)")
        var checked = 0
        for page in pages {
            let problems = try LinkChecker(root: Self.root).problems(inPage: page, counting: &checked)
            for problem in problems { Issue.record("\(problem)") }
        }
        #expect(checked > 20, "only \(checked) relative links found: is the link pattern still right?")
    }

    @Test("the link checker catches a missing file, a missing anchor and a link out of the package")
    func checkerCatchesBrokenLinks() throws {
        let scratch = try ScratchDirectory("doclinks")
        defer { scratch.remove() }
        let folder = scratch.path
        try FileManager.default.createDirectory(atPath: folder + "/docs", withIntermediateDirectories: true)
        try "# Target page\n\n## `thumbd serve`: the daemon\n\n## Render workers (the sandbox)\n\n## Render workers (the sandbox)\n"
            .write(toFile: folder + "/docs/target.md", atomically: true, encoding: .utf8)
        let page = """
            # Page

            [good](docs/target.md) [good anchor](docs/target.md#thumbd-serve-the-daemon)
            [duplicate heading](docs/target.md#render-workers-the-sandbox-1) [own heading](#page)
            [web](https://example.com/missing) [mail](mailto:a@example.com) `[code](not-a-link.md)`

            ```sh
            echo "[fenced](not-a-link-either.md)"
            ```

            [missing file](docs/nothing.md) [missing anchor](docs/target.md#no-such-heading)
            [outside](../outside.md) [own missing](#nowhere)
            """
        try page.write(toFile: folder + "/README.md", atomically: true, encoding: .utf8)
        var checked = 0
        let problems = try LinkChecker(root: folder).problems(inPage: "README.md", counting: &checked)
        #expect(checked == 8, "relative links seen: \(checked)")
        #expect(problems.count == 4, "\(problems)")
        for broken in ["docs/nothing.md", "docs/target.md#no-such-heading", "../outside.md", "#nowhere"] {
            #expect(problems.contains { $0.contains("(\(broken))") }, "no problem reported for \(broken): \(problems)")
        }
        #expect(problems.allSatisfy { $0.hasPrefix("README.md: ") }, "\(problems)")
    }
}

/// Relative Markdown links of a page and what is wrong with each.
struct LinkChecker {
    let root: String

    /// One message per broken link: "PAGE: [text](target): why".
    func problems(inPage page: String, counting checked: inout Int) throws -> [String] {
        let text = try String(contentsOfFile: root + "/" + page, encoding: .utf8)
        let folder = (page as NSString).deletingLastPathComponent
        var problems: [String] = []
        for link in Self.links(in: text) {
            let target = link.target
            if target.range(of: "^[A-Za-z][A-Za-z0-9+.-]*:", options: .regularExpression) != nil { continue }  // http:, mailto:, …
            checked += 1
            let say = { (why: String) in problems.append("\(page): [\(link.text)](\(target)): \(why)") }
            let parts = target.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).map(String.init)
            guard let path = parts[0].removingPercentEncoding else { say("bad percent-encoding"); continue }
            let anchor = parts.count > 1 ? parts[1] : nil
            let relative: String
            if path.isEmpty {
                relative = page
            } else {
                let joined = path.hasPrefix("/") ? String(path.dropFirst()) : (folder.isEmpty ? path : folder + "/" + path)
                guard let normal = Self.normalise(joined) else { say("leads out of the package"); continue }
                relative = normal
            }
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root + "/" + relative, isDirectory: &isFolder) else {
                say("no such file: \(relative)")
                continue
            }
            guard let anchor, !anchor.isEmpty else { continue }
            guard !isFolder.boolValue, relative.hasSuffix(".md") else {
                say("an anchor into \(relative), which is not a Markdown page, cannot be checked")
                continue
            }
            let anchors = Self.anchors(in: try String(contentsOfFile: root + "/" + relative, encoding: .utf8))
            if !anchors.contains(anchor.removingPercentEncoding ?? anchor) {
                say("no heading of \(relative) has the anchor #\(anchor) (it has: \(anchors.sorted().map { "#" + $0 }.joined(separator: ", ")))")
            }
        }
        return problems
    }

    /// `a/./b/../c` → `a/c`; nil when `..` climbs above the package root.
    static func normalise(_ path: String) -> String? {
        var parts: [Substring] = []
        for part in path.split(separator: "/", omittingEmptySubsequences: true) {
            if part == "." { continue }
            if part == ".." {
                guard !parts.isEmpty else { return nil }
                parts.removeLast()
            } else {
                parts.append(part)
            }
        }
        return parts.joined(separator: "/")
    }

    /// The page's lines outside fenced code blocks, with inline code spans blanked out.
    static func prose(_ text: String) -> [String] {
        var lines: [String] = []
        var fence: (Character, Int)?
        for line in text.components(separatedBy: "\n") {
            let trimmed = line.drop { $0 == " " }
            if let marker = trimmed.first, marker == "`" || marker == "~", line.count - trimmed.count < 4 {
                let run = trimmed.prefix { $0 == marker }.count
                if run >= 3 {
                    if let open = fence {
                        if open.0 == marker && run >= open.1 && trimmed.dropFirst(run).allSatisfy({ $0 == " " }) { fence = nil }
                    } else {
                        fence = (marker, run)
                    }
                    lines.append("")
                    continue
                }
            }
            if fence != nil { lines.append(""); continue }
            lines.append(line.replacingOccurrences(of: "(`+)[^`]+?\\1", with: "", options: .regularExpression))
        }
        return lines
    }

    /// Inline links and images `[text](target "title")` and reference definitions `[label]: target`.
    static func links(in text: String) -> [(text: String, target: String)] {
        let inline = try! NSRegularExpression(pattern: #"!?\[([^\]]*)\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)"#)
        let reference = try! NSRegularExpression(pattern: #"^ {0,3}\[([^\]]+)\]:\s*<?(\S+?)>?(?:\s+.*)?$"#)
        var found: [(String, String)] = []
        for line in prose(text) {
            let range = NSRange(line.startIndex..., in: line)
            for pattern in [inline, reference] {
                for match in pattern.matches(in: line, range: range) {
                    guard let label = Range(match.range(at: 1), in: line), let target = Range(match.range(at: 2), in: line) else { continue }
                    found.append((String(line[label]), String(line[target])))
                }
            }
        }
        return found
    }

    /// The anchors GitHub gives a page's headings: the heading's text in lower case, without
    /// punctuation other than `-` and `_`, spaces made `-`; a repeated slug gets `-1`, `-2`, …
    /// Explicit `<a name="…">` and `id="…"` anchors count too.
    static func anchors(in text: String) -> Set<String> {
        var anchors: Set<String> = []
        var seen: [String: Int] = [:]
        func add(_ heading: String) {
            let slug = slug(heading)
            if let count = seen[slug] {
                seen[slug] = count + 1
                anchors.insert(slug + "-\(count + 1)")
            } else {
                seen[slug] = 0
                anchors.insert(slug)
            }
        }
        let raw = text.components(separatedBy: "\n")
        let lines = prose(text)
        // Code spans are blanked in `prose`; headings keep them, so take the raw line's text.
        for (index, line) in lines.enumerated() {
            if line.range(of: "^ {0,3}#{1,6}(\\s|$)", options: .regularExpression) != nil {
                var heading = raw[index].trimmingCharacters(in: .whitespaces).drop { $0 == "#" }
                    .trimmingCharacters(in: .whitespaces)
                heading = heading.replacingOccurrences(of: "\\s+#+$", with: "", options: .regularExpression)
                add(heading)
            } else if index + 1 < lines.count, !line.trimmingCharacters(in: .whitespaces).isEmpty,
                      lines[index + 1].range(of: "^ {0,3}(=+|-+)\\s*$", options: .regularExpression) != nil,
                      line.range(of: "^\\s*([-*+]|\\d+[.)])\\s|^\\s*\\|", options: .regularExpression) == nil {
                add(raw[index].trimmingCharacters(in: .whitespaces))
            }
            let explicit = try! NSRegularExpression(pattern: #"<a\s+(?:name|id)="([^"]+)""#)
            for match in explicit.matches(in: raw[index], range: NSRange(raw[index].startIndex..., in: raw[index])) {
                if let name = Range(match.range(at: 1), in: raw[index]) { anchors.insert(String(raw[index][name])) }
            }
        }
        return anchors
    }

    /// GitHub's heading slug: links keep their text, then lower case, letters, digits, `_`, `-`
    /// and spaces kept (each space a `-`), everything else dropped.
    static func slug(_ heading: String) -> String {
        let text = heading.replacingOccurrences(of: #"!?\[([^\]]*)\]\([^)]*\)"#, with: "$1", options: .regularExpression)
        var slug = ""
        for scalar in text.lowercased().unicodeScalars {
            if scalar == " " {
                slug += "-"
            } else if scalar == "-" || scalar == "_" || CharacterSet.alphanumerics.contains(scalar) {
                slug.unicodeScalars.append(scalar)
            }
        }
        return slug
    }
}
