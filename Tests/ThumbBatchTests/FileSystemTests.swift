import Foundation
import Testing
import ThumbSystem
import ThumbTestSupport
@testable import ThumbBatch
#if canImport(Glibc)
import Glibc
#endif

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

    @Test(arguments: [
        (".a.jpg.jpg.123.4294967295.tmp", 123 as Int32?), (".a.123.0.tmp", 123), ("..a..7.1.tmp", 7),
        (".a.jpg.tmp", nil), ("..123.4.tmp", nil), (".a.0.4.tmp", nil), (".a.-5.4.tmp", nil), (".a.+5.4.tmp", nil),
        (".a.2147483648.4.tmp", nil), (".a.5.4294967296.tmp", nil), (".a.5..tmp", nil), (".a.5.4.tmpx", nil),
        ("a.5.4.tmp", nil), (".a. 5.4.tmp", nil), (".tmp", nil), ("", nil),
    ])
    func onlyATemporaryNameOfAtomicFileGivesAWriter(name: String, pid: Int32?) {
        #expect(StaleTemporaryFiles.writerPID(Array(name.utf8)) == pid, "\(name)")
    }

    /// What a sweep meets in a folder it writes into, named like a dead writer's temporary file:
    /// only a regular file goes (its name's bytes kept as they are, not UTF-8 here); a FIFO
    /// neither hangs it nor goes, a symbolic link is not followed, a folder stays.
    @Test func aSweepRemovesOnlyRegularFilesOfDeadWritersAndNeverHangs() throws {
        let scratch = try ScratchDirectory("stale-tmp")
        let folder = scratch.path + "/out"
        try FileSystem.createFolders(folder)
        let child = try ChildProcess("/bin/true", [])
        _ = child.end(within: 30)
        let dead = child.pid
        try #require(StaleTemporaryFiles.isGone(dead), "the child \(dead) is still there")
        #expect(!StaleTemporaryFiles.isGone(getpid()) && !StaleTemporaryFiles.isGone(1))
        func path(_ bytes: [UInt8]) -> [CChar] { (Array((folder + "/").utf8) + bytes).map { CChar(bitPattern: $0) } + [0] }
        let notUTF8: [UInt8] = [0x2E, 0xFF, 0xFE] + Array(".\(dead).1.tmp".utf8)
        let fd = open(path(notUTF8), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        try #require(fd >= 0)
        close(fd)
        try #require(mkfifo(path(Array(".fifo.\(dead).2.tmp".utf8)), 0o644) == 0)
        let target = scratch.path + "/target"
        try Data("keep".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: folder + "/.link.\(dead).3.tmp", withDestinationPath: target)
        try FileSystem.createFolders(folder + "/.folder.\(dead).4.tmp")
        let young = folder + "/.young.\(dead).5.tmp"
        Thread.sleep(forTimeInterval: Double(StaleTemporaryFiles.graceSeconds) + 0.5)
        try Data("now".utf8).write(to: URL(fileURLWithPath: young))

        #expect(StaleTemporaryFiles.sweep(folder) == 1)
        #expect(access(path(notUTF8), F_OK) != 0, "the dead writer's file is still there")
        let left = Set(try FileManager.default.contentsOfDirectory(atPath: folder))
        #expect(left == [".fifo.\(dead).2.tmp", ".link.\(dead).3.tmp", ".folder.\(dead).4.tmp", ".young.\(dead).5.tmp"], "\(left)")
        #expect(FileManager.default.contents(atPath: target) == Data("keep".utf8))
        var runner = StaleTemporaryFiles()
        #expect(runner.sweepOnce(scratch.path + "/nowhere") == 0, "a folder that is not there")
    }
}
