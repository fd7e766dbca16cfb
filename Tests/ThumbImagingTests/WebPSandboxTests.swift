import Foundation
import Testing
import ThumbTestSupport

/// WebP through real sandboxed render workers (`thumbd render --sandbox`): libwebp decodes and
/// encodes under the seccomp allow-list, and the WebP answer crosses the worker protocol.
@Suite("WebP in the sandbox")
struct WebPSandboxTests {
    /// The result and the output folder (removed by the caller).
    static func render(_ input: String, slots: [String], format: String) throws -> (MeasuredChild.Result, ScratchDirectory) {
        let folder = try ScratchDirectory("webp-sandbox")
        let result = try MeasuredChild.run(try requireThumbd(), ["render", input, "--config", Paths.sampleConfig, "--sandbox",
                                                                "--format", format, "--out-dir", folder.path]
                                              + slots.flatMap { ["--slot", $0] })
        return (result, folder)
    }

    @Test("every corpus WebP renders in a sandboxed worker (no SIGSYS)", arguments: try WebPFixtures.okRows())
    func decodesInSandbox(_ row: CorpusManifest.Row) throws {
        let (result, scratch) = try Self.render(row.path, slots: ["large", "contact-avatar@3x"], format: "auto")
        defer { scratch.remove() }
        let folder = scratch.path
        #expect(result.exitCode == 0 && result.signal == nil, "\(row.file): \(result.summary)")
        #expect(folderContents(folder).count == 2, "\(row.file): \(folderContents(folder))")
    }

    @Test("an opaque WebP thumbnail crosses the worker protocol and reads back at its size")
    func opaqueOutputInSandbox() throws {
        let (result, scratch) = try Self.render(Paths.corpusFile("formats/webp", "pillow__flower.webp"),
                                               slots: ["large", "product-grid@3x"], format: "webp")
        defer { scratch.remove() }
        let folder = scratch.path
        #expect(result.exitCode == 0, "\(result.summary)")
        let files = folderContents(folder)
        #expect(files == ["pillow__flower.large@1x.webp", "pillow__flower.product-grid@3x.webp"], "\(files)")
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: folder + "/" + file)))
            let seen = try Python.pillowSize(of: bytes)
            #expect(seen.format == "WEBP" && (file.contains("large") ? seen == (256, 192, "WEBP") : seen.height == 300), "\(file): \(seen)")
        }
    }

    /// Encoding an alpha plane (a masked kind) or any lossless WebP sorts Huffman trees with
    /// glibc's qsort, whose merge sort asks sysconf(_SC_PHYS_PAGES), i.e. sysinfo(2), once per
    /// process when it sorts 1 KB or more. The allow-list killed the worker for it (SIGSYS,
    /// syscall 99); "sysinfo" is now refused with EPERM (glibc then assumes memory enough and
    /// sorts with malloc).
    @Test("a masked WebP thumbnail (alpha plane) encodes in a sandboxed worker")
    func alphaOutputInSandbox() throws {
        let (result, scratch) = try Self.render(Paths.corpusFile("formats/webp", "pillow__flower.webp"),
                                               slots: ["contact-avatar@3x"], format: "webp")
        defer { scratch.remove() }
        let folder = scratch.path
        #expect(result.exitCode == 0, "\(result.summary)")
        #expect(folderContents(folder) == ["pillow__flower.contact-avatar@3x.webp"])
    }
}
