import Foundation
import Testing
import ThumbTestSupport
#if canImport(Glibc)
import Glibc
#endif

/// `thumbd batch DIR --out-dir OUT` killed with SIGKILL mid-run: no partial outputs, and a rerun
/// finishes exactly the rest ("idempotent and resumable").
@Suite struct BatchResumeTests {
    static let kinds = 4 // normal, large, x-large, xx-large at @1x

    @Test func killedRunLeavesOnlyWholeOutputsAndARerunFinishesTheRest() throws {
        let scratch = try ScratchDirectory("batch-resume")
        let assets = scratch.path("assets")
        let names = try Batch.copyLargeJPEGs(into: assets, scratch: scratch)
        let expected = names.count * Self.kinds
        let out = scratch.path("out")
        let arguments = [assets, "--out-dir", out, "--cache", scratch.path("cache"), "--workers", "1", "--json"]

        // Run 1: SIGKILL once a few outputs are in place (well before the end).
        let first = try BatchProcess(arguments, scratch: scratch)
        let reached = Batch.waitUntil(first) { Batch.files(under: out).visible.count >= 10 }
        first.kill9()
        let killed = first.wait()
        try #require(reached && killed.signal == 9,
                     "the first run was not killed mid-run (it ended first or never wrote): \(killed.describeText)")

        let afterKill = Batch.files(under: out)
        try #require(afterKill.visible.count < expected, "the kill came after the last output")
        for path in afterKill.visible {
            #expect(Batch.isCompleteImage(out + "/" + path), "partial output after SIGKILL: \(path)")
            #expect(path.hasSuffix(".jpg"), "a camera JPEG's thumbnail should be a JPEG: \(path)")
        }
        // Temporary files of the killed writer may stay, but only hidden (`.NAME.PID.N.tmp`).
        for path in afterKill.hidden {
            let name = (path as NSString).lastPathComponent
            #expect(name.hasPrefix(".") && name.contains(".\(first.pid).") && name.hasSuffix(".tmp"), "unexpected hidden file \(path)")
        }
        if !afterKill.hidden.isEmpty {
            print("note: SIGKILL left \(afterKill.hidden.count) hidden temporary file(s): \(afterKill.hidden)")
        }

        // Run 2: renders what is missing, the outputs of run 1 are up to date.
        let second = try Batch.run(arguments, scratch: scratch)
        #expect(second.exitCode == 0, second.describe)
        let resumed = try #require(second.summary, second.describe)
        #expect(resumed.failures.isEmpty, "\(resumed.failures)")
        #expect(resumed.upToDate == afterKill.visible.count, "every whole output of the killed run counts as up to date")
        #expect(afterKill.visible.count + resumed.rendered == expected,
                "killed run wrote \(afterKill.visible.count), rerun rendered \(resumed.rendered), expected \(expected) in all")
        #expect(resumed.rendered + resumed.upToDate == expected)
        let afterRerun = Batch.files(under: out)
        #expect(afterRerun.visible.count == expected)
        for path in afterRerun.visible { #expect(Batch.isCompleteImage(out + "/" + path), "bad output \(path)") }
        for name in names {
            let stem = name
            for kind in ["normal", "large", "x-large", "xx-large"] {
                #expect(afterRerun.visible.contains("\(kind)@1x/\(stem).jpg"), "missing \(kind)@1x/\(stem).jpg")
            }
        }

        // Run 3: nothing left to do.
        let third = try Batch.run(arguments, scratch: scratch)
        #expect(third.exitCode == 0, third.describe)
        #expect(third.summary?.rendered == 0, third.describe)
        #expect(third.summary?.upToDate == expected)
    }

    /// `thumbd batch photos --out-dir photos/thumbs`: the output tree lies in the asset folder, and
    /// must not be taken for assets (like the cache folder, which is excluded) — else every run
    /// thumbnails the previous run's thumbnails, one level deeper each time.
    @Test func anOutputTreeInsideTheAssetFolderIsNotAnInput() throws {
        let scratch = try ScratchDirectory("batch-out-inside")
        let assets = scratch.path("assets")
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Landscape_1.jpg", to: "one.jpg", in: assets)
        let arguments = [assets, "--kinds", "normal", "--out-dir", assets + "/thumbs", "--cache", assets + "/.cache", "--json"]
        let first = try Batch.run(arguments, scratch: scratch)
        #expect(first.summary?.rendered == 1, first.describe)
        let second = try Batch.run(arguments, scratch: scratch)
        #expect(second.summary?.rendered == 0, "the second run thumbnailed its own outputs: \(second.describeText)")
        #expect(second.summary?.upToDate == 1, second.describe)
        #expect(Batch.files(under: assets + "/thumbs").visible == ["normal@1x/one.jpg.jpg"])
    }

    /// The up-to-date check is the source's mtime: touching a source renders its thumbnails again.
    @Test func aChangedSourceIsRenderedAgain() throws {
        let scratch = try ScratchDirectory("batch-touch")
        let assets = scratch.path("assets")
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Landscape_3.jpg", to: "a/one.jpg", in: assets)
        try scratch.copy(BatchPaths.corpus + "/exif-orientation/Portrait_5.jpg", to: "b/two.jpg", in: assets)
        let arguments = [assets, "--kinds", "normal,large", "--out-dir", scratch.path("out"), "--cache", scratch.path("cache"), "--json"]
        #expect(try Batch.run(arguments, scratch: scratch).summary?.rendered == 4)
        let later = Date().addingTimeInterval(5)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: assets + "/a/one.jpg")
        let again = try Batch.run(arguments, scratch: scratch)
        #expect(again.summary?.rendered == 2, again.describe)
        #expect(again.summary?.upToDate == 2, again.describe)
        let output = try FileManager.default.attributesOfItem(atPath: scratch.path("out") + "/normal@1x/a/one.jpg.jpg")
        #expect((output[.modificationDate] as? Date).map { abs($0.timeIntervalSince(later)) < 0.01 } == true,
                "the output's mtime is the source's")
    }

    /// Issue 37, item 12: a run killed with -9 in the middle of a write leaves its
    /// `.NAME.PID.RAND.tmp`, and the resumed run left it there for good. The resumed run removes
    /// the temporary files of writers that are gone from each folder it writes into, and nobody
    /// else's: not those of a PID that is alive (another program now, or another run writing the
    /// same tree), not a locked one (a writer on another host or in another PID namespace, whose
    /// PID means nothing here), not names of any other form.
    @Test func aResumedRunRemovesTheTemporaryFilesOfWritersThatAreGone() throws {
        let scratch = try ScratchDirectory("batch-stale-tmp")
        let assets = scratch.path("assets")
        let names = try Batch.copyLargeJPEGs(into: assets, scratch: scratch, count: 12)
        let out = scratch.path("out")
        let arguments = [assets, "--out-dir", out, "--cache", scratch.path("cache"), "--kinds", "large", "--workers", "1", "--json"]
        let first = try BatchProcess(arguments, scratch: scratch)
        let reached = Batch.waitUntil(first, timeout: 180) { Batch.files(under: out).visible.count >= 2 }
        first.kill9()
        let killed = first.wait()
        try #require(reached && killed.signal == 9, "the first run was not killed mid-run: \(killed.describeText)")
        let folder = out + "/large@1x"
        let unfinished = try #require(names.first { !FileManager.default.fileExists(atPath: "\(folder)/\($0).jpg") },
                                      "the kill came after the last output")
        // Where a SIGKILL lands is chance: what it leaves when it lands in a write is made here,
        // named after the killed run.
        let dead = first.pid
        let abandoned = ".\(unfinished).jpg.\(dead).3141592653.tmp"
        let sleeper = try ChildProcess("/bin/sleep", ["600"])
        defer { sleeper.kill() }
        let kept = [".\(unfinished).jpg.\(sleeper.pid).1.tmp", ".\(unfinished).jpg.\(dead).2.tmp", ".\(unfinished).jpg.tmp",
                    ".notes.\(dead).x.tmp", "..\(dead).5.tmp", ".\(unfinished).jpg.\(dead).99999999999.tmp"]
        for name in [abandoned] + kept { try Data("partial".utf8).write(to: URL(fileURLWithPath: folder + "/" + name)) }
        let lock = open(folder + "/" + kept[1], O_RDONLY | O_CLOEXEC)
        try #require(lock >= 0 && flock(lock, LOCK_EX) == 0)
        defer { close(lock) }
        // Past the sweep's grace (a writer between creating its file and locking it is left be).
        Thread.sleep(forTimeInterval: 1.5)

        let second = try Batch.run(arguments, scratch: scratch, timeout: 300)
        #expect(second.exitCode == 0, second.describe)
        #expect(second.summary.map { $0.rendered + $0.upToDate } == names.count, second.describe)
        let hidden = Set(Batch.names(folder).filter { $0.hasPrefix(".") })
        #expect(!hidden.contains(abandoned), "the killed run's temporary file is still there: \(hidden.sorted())")
        #expect(hidden == Set(kept), "removed \(Set(kept).subtracting(hidden).sorted()), left \(hidden.subtracting(kept).sorted())")
        #expect(second.stderr.contains("temporary file(s) left in \(folder) by a writer that is gone"), second.describe)
    }
}
