import Foundation
import Testing
@testable import ThumbPipeline

@Suite final class AssetRootTests {
    let root: String

    init() throws {
        root = FileManager.default.temporaryDirectory.appendingPathComponent("assetroot-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: root + "/photos", withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: root + "/photos/a.jpg"))
    }

    deinit { try? FileManager.default.removeItem(atPath: root) }

    @Test func resolvesRegularFileWithVersion() throws {
        let assets = try AssetRoot(path: root)
        let (path, version) = try assets.resolve("photos/a.jpg")
        #expect(path.hasSuffix("/photos/a.jpg"))
        #expect(version.path == "photos/a.jpg")
        #expect(version.size == 3)
        #expect(version.inode != 0)
    }

    @Test(arguments: ["../etc/passwd", "photos/../../x", "/etc/passwd", "./photos/a.jpg", "", "photos/."])
    func refusesTraversal(_ path: String) throws {
        let assets = try AssetRoot(path: root)
        #expect(throws: AssetPathError.self) { try assets.resolve(path) }
        do {
            _ = try assets.resolve(path)
        } catch {
            guard case .forbidden = error else { Issue.record("expected forbidden for \(path), got \(error)"); return }
        }
    }

    @Test func refusesSymlinkOutOfRootAndFolders() throws {
        try FileManager.default.createSymbolicLink(atPath: root + "/escape.jpg", withDestinationPath: "/etc/hostname")
        try FileManager.default.createSymbolicLink(atPath: root + "/inside.jpg", withDestinationPath: root + "/photos/a.jpg")
        let assets = try AssetRoot(path: root)
        #expect(throws: AssetPathError.forbidden(path: "escape.jpg", reason: "resolves outside the asset root")) {
            try assets.resolve("escape.jpg")
        }
        #expect(try assets.resolve("inside.jpg").version.path == "photos/a.jpg")
        #expect(throws: AssetPathError.forbidden(path: "photos", reason: "not a regular file")) { try assets.resolve("photos") }
        #expect(throws: AssetPathError.notFound(path: "nope.jpg")) { try assets.resolve("nope.jpg") }
    }

    @Test func refusesCacheDirectoryInsideRoot() throws {
        try FileManager.default.createDirectory(atPath: root + "/.cache", withIntermediateDirectories: true)
        try Data([9]).write(to: URL(fileURLWithPath: root + "/.cache/x.jpg"))
        let assets = try AssetRoot(path: root, excluding: [root + "/.cache"])
        #expect(throws: AssetPathError.forbidden(path: ".cache/x.jpg", reason: "inside the cache directory")) {
            try assets.resolve(".cache/x.jpg")
        }
    }
}
