import Foundation
import Testing
@testable import ThumbPipeline
import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// Both ways of opening beneath the root (`openat2`, and the `O_NOFOLLOW` walk used where the
/// kernel lacks it) must agree on every case.
@Suite final class AssetRootTests {
    static let methods: [BeneathOpener.Method] = [.openat2, .walk]
    let base: String
    var root: String { base + "/root" }

    init() throws {
        base = FileManager.default.temporaryDirectory.appendingPathComponent("assetroot-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: base + "/root/photos", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: base + "/outside", withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: root + "/photos/a.jpg"))
        try Data([6, 6, 6, 6]).write(to: URL(fileURLWithPath: base + "/outside/secret.jpg"))
    }

    deinit { try? FileManager.default.removeItem(atPath: base) }

    func assets(_ method: BeneathOpener.Method, excluding excluded: [String] = []) throws -> AssetRoot {
        if method == .openat2 && !BeneathOpener.openat2Works { Issue.record("openat2 is not available on this kernel") }
        return try AssetRoot(path: root, excluding: excluded, opener: BeneathOpener(method: method))
    }

    func link(_ name: String, to target: String) throws {
        try FileManager.default.createSymbolicLink(atPath: root + "/" + name, withDestinationPath: target)
    }

    @Test(arguments: methods)
    func resolvesRegularFileWithVersion(_ method: BeneathOpener.Method) throws {
        let assets = try assets(method)
        let (path, version) = try assets.resolve("photos/a.jpg")
        #expect(path == assets.path + "/photos/a.jpg")
        #expect(version.path == "photos/a.jpg")
        #expect(version.size == 3)
        var status = stat()
        #expect(stat(root + "/photos/a.jpg", &status) == 0 && version.inode == UInt64(status.st_ino))
    }

    @Test(arguments: ["../etc/passwd", "photos/../../x", "/etc/passwd", "./photos/a.jpg", "", "photos/."])
    func refusesTraversal(_ path: String) throws {
        for method in Self.methods {
            let root = try assets(method)
            #expect(throws: AssetPathError.self) { try root.resolve(path) }
            do throws(AssetPathError) {
                _ = try root.resolve(path)
            } catch {
                guard case .forbidden = error else { Issue.record("expected forbidden for \(path), got \(error)"); continue }
            }
        }
    }

    /// A `/` after a prepend mark (U+0600…) or before a combining mark is one `Character` with
    /// it, so a split by characters kept `p\u{600}/secret.jpg` as one name with a `/` inside,
    /// and the walk's `openat` resolved it through the absolute symlink `p\u{600}`. Paths are
    /// split by bytes now; each of these is refused, whichever way the root is opened.
    @Test(arguments: methods)
    func aSlashJoinedToAMarkIsStillASeparator(_ method: BeneathOpener.Method) throws {
        try link("p\u{600}", to: base + "/outside")
        try link("q\u{600}", to: "../outside")
        try FileManager.default.createDirectory(atPath: root + "/d", withIntermediateDirectories: true)
        let assets = try assets(method)
        for name in ["p\u{600}/secret.jpg", "q\u{600}/secret.jpg", "d\u{600}/../../outside/secret.jpg", "photos/\u{301}../../outside/secret.jpg",
                     "d/..\u{600}/../outside/secret.jpg"] {
            do throws(AssetPathError) {
                let file = try assets.openForReading(name)
                Issue.record("\(method): \(name.unicodeScalars.map { String($0.value, radix: 16) }) opened \(file.version.path), \(file.version.size) bytes")
            } catch {
                guard case .forbidden = error else {
                    // Refused as missing is refused too, as long as nothing outside was read.
                    guard case .notFound = error else { Issue.record("\(method) \(name): \(error)"); continue }
                    continue
                }
            }
        }
        #expect(ExactPath.components("p\u{600}/secret.jpg") == ["p\u{600}", "secret.jpg"])
    }

    /// The decision documented in docs/http-api.md: relative symlinks that stay inside the root work
    /// (the version names the file reached); absolute ones and any that climb out are refused.
    @Test(arguments: methods)
    func symlinksInsideWorkEscapesAreRefused(_ method: BeneathOpener.Method) throws {
        try link("inside.jpg", to: "photos/a.jpg")
        try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
        try link("sub/up.jpg", to: "../photos/a.jpg")
        try link("album", to: "photos")
        try link("chain.jpg", to: "inside.jpg")
        try link("escape.jpg", to: "/etc/hostname")
        try link("climb.jpg", to: "../outside/secret.jpg")
        try link("sub/deep.jpg", to: "../../outside/secret.jpg")
        try link("absolute-inside.jpg", to: root + "/photos/a.jpg")
        try link("loop.jpg", to: "loop.jpg")
        let assets = try assets(method)
        for name in ["inside.jpg", "sub/up.jpg", "album/a.jpg", "chain.jpg"] {
            #expect(try assets.resolve(name).version.path == "photos/a.jpg", "\(name)")
            let file = try assets.openForReading(name)
            #expect(file.version.path == "photos/a.jpg" && file.version.size == 3, "\(name)")
        }
        for name in ["escape.jpg", "climb.jpg", "sub/deep.jpg", "absolute-inside.jpg"] {
            #expect(throws: AssetPathError.forbidden(path: name, reason: "resolves outside the asset root"), "\(name)") {
                try assets.resolve(name)
            }
            #expect(throws: AssetPathError.forbidden(path: name, reason: "resolves outside the asset root"), "\(name)") {
                try assets.openForReading(name)
            }
        }
        #expect(throws: AssetPathError.self) { try assets.resolve("loop.jpg") }
        #expect(throws: AssetPathError.forbidden(path: "photos", reason: "not a regular file")) { try assets.resolve("photos") }
        #expect(throws: AssetPathError.notFound(path: "nope.jpg")) { try assets.resolve("nope.jpg") }
        #expect(throws: AssetPathError.notFound(path: "photos/a.jpg/x")) { try assets.resolve("photos/a.jpg/x") }
    }

    @Test(arguments: methods)
    func refusesCacheDirectoryInsideRootAlsoThroughASymlink(_ method: BeneathOpener.Method) throws {
        try FileManager.default.createDirectory(atPath: root + "/cache", withIntermediateDirectories: true)
        try Data([9]).write(to: URL(fileURLWithPath: root + "/cache/x.jpg"))
        try link("thumbs", to: "cache")
        let assets = try assets(method, excluding: [root + "/cache"])
        for name in ["cache/x.jpg", "thumbs/x.jpg"] {
            #expect(throws: AssetPathError.forbidden(path: name, reason: "inside the cache directory")) { try assets.resolve(name) }
            #expect(throws: AssetPathError.forbidden(path: name, reason: "inside the cache directory")) { try assets.openForReading(name) }
        }
    }

    /// One rule for hidden names: not assets, asked for by name or reached through a symlink.
    @Test(arguments: methods)
    func refusesHiddenNamesAlsoThroughASymlink(_ method: BeneathOpener.Method) throws {
        try FileManager.default.createDirectory(atPath: root + "/.git", withIntermediateDirectories: true)
        try Data([9]).write(to: URL(fileURLWithPath: root + "/.git/x.jpg"))
        try Data([9]).write(to: URL(fileURLWithPath: root + "/photos/.y.jpg"))
        try link("album", to: ".git")
        try link("y.jpg", to: "photos/.y.jpg")
        let assets = try assets(method)
        for name in [".git/x.jpg", "photos/.y.jpg", "album/x.jpg", "y.jpg"] {
            do throws(AssetPathError) {
                _ = try assets.openForReading(name)
                Issue.record("\(method): \(name) opened")
            } catch {
                guard case .forbidden(_, let reason) = error, reason.contains("hidden") else { Issue.record("\(method) \(name): \(error)"); continue }
            }
        }
    }

    /// A FIFO is refused at once: resolving never opens it, and the read open does not block.
    @Test(arguments: methods)
    func refusesFIFOWithoutBlocking(_ method: BeneathOpener.Method) throws {
        #expect(mkfifo(root + "/photos/pipe.jpg", 0o644) == 0)
        let assets = try assets(method)
        let refusal = AssetPathError.forbidden(path: "photos/pipe.jpg", reason: "not a regular file")
        #expect(throws: refusal) { try assets.resolve("photos/pipe.jpg") }
        #expect(throws: refusal) { try assets.openForReading("photos/pipe.jpg") }
    }

    /// The version comes from the descriptor that is read: replacing the file between two opens
    /// gives each open its own inode.
    @Test(arguments: methods)
    func versionIsTheOpenedFile(_ method: BeneathOpener.Method) throws {
        let assets = try assets(method)
        let first = try assets.openForReading("photos/a.jpg")
        try Data([4, 5, 6, 7, 8]).write(to: URL(fileURLWithPath: root + "/photos/b.tmp"))
        #expect(rename(root + "/photos/b.tmp", root + "/photos/a.jpg") == 0)
        let second = try assets.openForReading("photos/a.jpg")
        #expect(first.version.size == 3 && second.version.size == 5)
        #expect(first.version.inode != second.version.inode)
        #expect(try first.readAll(maxBytes: 100).count == 3)
        #expect(try second.readAll(maxBytes: 100).count == 5)
        #expect(throws: AssetReadError.self) { try assets.openForReading("photos/a.jpg").readAll(maxBytes: 4) }
    }

    /// The root is opened per look-up: a root moved away and replaced serves what is at its path now.
    @Test(arguments: methods)
    func followsTheRootPathNotAnOldDescriptor(_ method: BeneathOpener.Method) throws {
        let assets = try assets(method)
        #expect(try assets.resolve("photos/a.jpg").version.size == 3)
        #expect(rename(root, base + "/moved") == 0)
        #expect(throws: AssetPathError.notFound(path: "photos/a.jpg")) { try assets.resolve("photos/a.jpg") }
        try FileManager.default.createDirectory(atPath: root + "/photos", withIntermediateDirectories: true)
        try Data([1, 2, 3, 4, 5, 6]).write(to: URL(fileURLWithPath: root + "/photos/a.jpg"))
        #expect(try assets.resolve("photos/a.jpg").version.size == 6)
    }
}
