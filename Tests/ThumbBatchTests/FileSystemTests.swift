import Foundation
import Testing
import ThumbSystem
import ThumbTestSupport

/// The batch side's path operations (`FileSystem`): what the spool's correctness rests on.
@Suite struct FileSystemTests {
    @Test("folders are made all the way down, a file in the way is an error, a made folder is no error")
    func createFolders() throws {
        let scratch = try ScratchDirectory("fs")
        try FileSystem.createFolders(scratch.path + "/a/b/c")
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: scratch.path + "/a/b/c", isDirectory: &isFolder) && isFolder.boolValue)
        try FileSystem.createFolders(scratch.path + "/a/b/c")
        try Data("x".utf8).write(to: URL(fileURLWithPath: scratch.path + "/a/file"))
        #expect(throws: SystemError.self) { try FileSystem.createFolders(scratch.path + "/a/file/d") }
    }

    @Test("a folder's names leave out . and .. and names that are not UTF-8")
    func namesInAFolder() throws {
        let scratch = try ScratchDirectory("fs")
        for name in ["one.json", ".hidden", "two"] { try Data().write(to: URL(fileURLWithPath: scratch.path + "/" + name)) }
        // A name with a byte that is no UTF-8 (0xff), made through the C API.
        let raw = Array((scratch.path + "/bad-").utf8) + [0xff, 0]
        let descriptor = raw.withUnsafeBufferPointer { open(UnsafeRawPointer($0.baseAddress!).assumingMemoryBound(to: CChar.self),
                                                             O_CREAT | O_WRONLY, 0o644) }
        try #require(descriptor >= 0)
        close(descriptor)
        #expect(try FileSystem.names(in: scratch.path).sorted() == [".hidden", "one.json", "two"])
        #expect(throws: SystemError.self) { try FileSystem.names(in: scratch.path + "/missing") }
    }

    @Test("a rename moves, a second rename of the same name fails (one claimer wins), removing what is gone is no error")
    func renameAndRemove() throws {
        let scratch = try ScratchDirectory("fs")
        try Data("job".utf8).write(to: URL(fileURLWithPath: scratch.path + "/job.json"))
        try FileSystem.rename(scratch.path + "/job.json", to: scratch.path + "/claimed.json")
        #expect(throws: SystemError.self) { try FileSystem.rename(scratch.path + "/job.json", to: scratch.path + "/other.json") }
        #expect(FileSystem.modificationTime(scratch.path + "/claimed.json") != nil)
        try FileSystem.remove(scratch.path + "/claimed.json")
        try FileSystem.remove(scratch.path + "/claimed.json")
        #expect(FileSystem.modificationTime(scratch.path + "/claimed.json") == nil)
        #expect(FileSystem.processExists(getpid()))
    }
}
