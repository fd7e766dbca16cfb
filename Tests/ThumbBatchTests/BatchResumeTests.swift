import Foundation
import Testing
import ThumbTestSupport

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
}
