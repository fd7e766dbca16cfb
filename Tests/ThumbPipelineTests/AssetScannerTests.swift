import Foundation
import Testing
@testable import ThumbPipeline

@Suite final class AssetScannerTests {
    let sandbox: WatchSandbox

    init() throws {
        sandbox = try WatchSandbox("assetscanner")
    }

    deinit { sandbox.remove() }

    @Test func findsNestedImagesWithTheirVersions() throws {
        try sandbox.mkdir("2024/summer/beach")
        try sandbox.write("top.jpg", bytes: 10)
        try sandbox.write("2024/a.JPG", bytes: 20)
        try sandbox.write("2024/summer/b.jpeg", bytes: 30)
        try sandbox.write("2024/summer/beach/c.Png", bytes: 40)
        try sandbox.write("2024/summer/notes.txt")
        try sandbox.write("2024/summer/noext")
        // No extension: an asset when its bytes are an image's (here WebP's RIFF header).
        try sandbox.write("2024/summer/IMG_0007", contents: Array("RIFF\u{0}\u{0}\u{0}\u{0}WEBPVP8 ".utf8))
        try sandbox.write("2024/summer/.d.jpg.tmp")
        try sandbox.write("2024/summer/.e.png")
        try sandbox.mkdir(".hidden")
        try sandbox.write(".hidden/f.jpg")
        try sandbox.mkdir("folder.jpg")  // A folder with an image name is not a file.
        let root = try AssetRoot(path: sandbox.root)
        let scan = AssetScanner.scanReportingFailures(root)
        #expect(scan.failures.isEmpty)
        #expect(scan.versions.map(\.path) == ["2024/a.JPG", "2024/summer/IMG_0007", "2024/summer/b.jpeg", "2024/summer/beach/c.Png", "top.jpg"])
        #expect(scan.versions.map(\.size) == [20, 16, 30, 40, 10])
        #expect(AssetScanner.scan(root) == scan.versions)
        // Same versions as resolving each path.
        for version in scan.versions {
            #expect(try root.resolve(version.path).version == version)
        }
    }

    @Test func skipsExcludedFoldersAndSymlinks() throws {
        try sandbox.mkdir("cache/thumbs")
        try sandbox.write("cache/thumbs/t.jpg")
        try sandbox.mkdir("photos")
        try sandbox.write("photos/p.jpg")
        try sandbox.mkdir("elsewhere", in: sandbox.outside)
        try sandbox.write("elsewhere/outside.jpg", in: sandbox.outside)
        try FileManager.default.createSymbolicLink(atPath: sandbox.root + "/linked", withDestinationPath: sandbox.outside + "/elsewhere")
        try FileManager.default.createSymbolicLink(atPath: sandbox.root + "/loop", withDestinationPath: sandbox.root)
        try FileManager.default.createSymbolicLink(atPath: sandbox.root + "/alias.jpg", withDestinationPath: sandbox.root + "/photos/p.jpg")
        let root = try AssetRoot(path: sandbox.root, excluding: [sandbox.root + "/cache"])
        let scan = AssetScanner.scanReportingFailures(root)
        #expect(scan.versions.map(\.path) == ["photos/p.jpg"])
        #expect(scan.failures.isEmpty)
    }

    @Test func scansOneFolder() throws {
        try sandbox.mkdir("a/b")
        try sandbox.write("a/b/one.png")
        try sandbox.write("two.png")
        let scan = AssetScanner.scanReportingFailures(try AssetRoot(path: sandbox.root), under: "a")
        #expect(scan.versions.map(\.path) == ["a/b/one.png"])
    }

    @Test func reportsWhatItCouldNotRead() throws {
        try sandbox.mkdir("ok")
        try sandbox.write("ok/a.jpg")
        let root = try AssetRoot(path: sandbox.root)
        if geteuid() != 0 {
            try sandbox.mkdir("locked")
            try sandbox.write("locked/b.jpg")
            #expect(chmod(sandbox.root + "/locked", 0) == 0)
            defer { chmod(sandbox.root + "/locked", 0o755) }
            let scan = AssetScanner.scanReportingFailures(root)
            #expect(scan.versions.map(\.path) == ["ok/a.jpg"])
            #expect(scan.failures.map(\.path) == ["locked"])
            #expect(scan.isUncertain("locked/b.jpg"))
            #expect(!scan.isUncertain("ok/a.jpg"))
        }
        // The root gone: nothing found, and everything uncertain.
        try FileManager.default.removeItem(atPath: sandbox.root)
        let scan = AssetScanner.scanReportingFailures(root)
        #expect(scan.versions.isEmpty)
        #expect(scan.failures.map(\.path) == [""])
        #expect(scan.failures.first?.error.errno == ENOENT)
        #expect(scan.isUncertain("ok/a.jpg"))
    }
}
