import Foundation
import Testing
import ThumbTestSupport

/// The real `thumbd render` binary on broken inputs and bad arguments: exit codes (sysexits),
/// one stderr line per failure, no output or temporary files left behind, bounded memory.
@Suite("thumbd CLI errors")
struct CLIErrorTests {
    static let maxRSS = 200 << 20

    @Test("ERROR files: exit 65, one stderr line naming the file, nothing written",
          arguments: try Manifest.mustFail())
    func errorFile(_ entry: CorpusManifest.Row) throws {
        let thumbd = try requireThumbd()
        let scratch = try ScratchDirectory("err")
        defer { scratch.remove() }
        let folder = scratch.path
        let result = try MeasuredChild.run(thumbd, ["render", entry.path, "--slot", "large",
                                                   "--config", Paths.sampleConfig, "--out-dir", folder])
        #expect(!result.killedAfterTimeout, "\(entry.file): killed after hanging: \(result.summary)")
        #expect(result.signal == nil, "\(entry.file): crashed: \(result.summary)")
        #expect(result.maxRSSBytes <= Self.maxRSS, "\(entry.file): peak RSS \(result.maxRSSBytes >> 20) MB")
        if entry.isHighPrecisionJPEG && result.exitCode == 0 {
            #expect(folderContents(folder).count == 1, "\(entry.file): rendered but wrote \(folderContents(folder))")
            return
        }
        #expect(result.exitCode == 65, "\(entry.file): \(result.summary)")
        let naming = result.stderrLines.filter { $0.contains(entry.path) }
        #expect(naming.count == 1, "\(entry.file): expected one stderr line naming the file, got \(result.stderrLines)")
        if let line = naming.first {
            let prefix = "thumbd: \(entry.path): "
            #expect(line.hasPrefix(prefix) && line.count > prefix.count + 3,
                    "\(entry.file): line should read 'thumbd: FILE: reason', got '\(line)'")
        }
        #expect(folderContents(folder).isEmpty, "\(entry.file): left files behind: \(folderContents(folder))")
    }

    @Test("a missing input exits 66")
    func missingInput() throws {
        let scratch = try ScratchDirectory("out")
        defer { scratch.remove() }
        let folder = scratch.path
        let missing = folder + "/no-such-image.jpg"
        let result = try MeasuredChild.run(try requireThumbd(), ["render", missing, "--slot", "large", "--out-dir", folder])
        #expect(result.exitCode == 66, "\(result.summary)")
        #expect(result.stderrLines.contains { $0.hasPrefix("thumbd: \(missing): ") }, "\(result.stderr)")
        #expect(folderContents(folder).isEmpty)
    }

    @Test("a bad --slot exits 64", arguments: ["no-such-kind", "48x@3x", "48x48@9x", "48x48,sideways", "large@0x"])
    func badSlot(_ slot: String) throws {
        let scratch = try ScratchDirectory("out")
        defer { scratch.remove() }
        let folder = scratch.path
        let input = Paths.corpusFile("pngsuite", "basn2c08.png")
        let result = try MeasuredChild.run(try requireThumbd(), ["render", input, "--slot", slot,
                                                                "--config", Paths.sampleConfig, "--out-dir", folder])
        #expect(result.exitCode == 64, "--slot \(slot): \(result.summary)")
        #expect(result.stderr.contains(slot), "--slot \(slot): stderr should name the spec: \(result.stderr)")
        #expect(folderContents(folder).isEmpty)
    }

    @Test("a config with a bad key exits 78 and names the key", arguments: [
        (#"{"kinds": {"avatar": {"width": -48, "height": 48}}}"#, "kinds.avatar.width"),
        (#"{"kinds": {"avatar": {"width": 48, "height": 48, "colour": "red"}}}"#, "kinds.avatar.colour"),
        (#"{"kinds": {"avatar": {"width": 48, "height": 48}}, "limits": {"maxPixelz": 5}}"#, "limits.maxPixelz"),
        (#"{"kinds": {}, "access": {"fairShare": {"maxRunningRenders": 0}}}"#, "access.fairShare.maxRunningRenders"),
    ])
    func badConfig(_ json: String, key: String) throws {
        let scratch = try ScratchDirectory("out")
        defer { scratch.remove() }
        let folder = scratch.path
        let config = folder + "/bad.json"
        try json.write(toFile: config, atomically: true, encoding: .utf8)
        let input = Paths.corpusFile("pngsuite", "basn2c08.png")
        let result = try MeasuredChild.run(try requireThumbd(), ["render", input, "--slot", "large", "--config", config,
                                                                "--out-dir", folder])
        #expect(result.exitCode == 78, "\(result.summary)")
        #expect(result.stderr.contains(key), "stderr should name '\(key)': \(result.stderr)")
        #expect(folderContents(folder) == ["bad.json"])
        let slots = try MeasuredChild.run(try requireThumbd(), ["slots", "--config", config])
        #expect(slots.exitCode == 78 && slots.stderr.contains(key), "slots: \(slots.summary)")
    }

    @Test("-o into a folder that cannot be written exits 73")
    func unwritableOutput() throws {
        let scratch = try ScratchDirectory("out")
        defer { scratch.remove() }
        let folder = scratch.path
        // The tests may run as root, which ignores permission bits: use a folder that does not
        // exist, and a "folder" that is a regular file.
        try Data("x".utf8).write(to: URL(fileURLWithPath: folder + "/plain-file"))
        let input = Paths.corpusFile("pngsuite", "basn2c08.png")
        for output in [folder + "/missing-folder/thumb.png", folder + "/plain-file/thumb.png"] {
            let result = try MeasuredChild.run(try requireThumbd(), ["render", input, "--slot", "large", "-o", output])
            #expect(result.exitCode == 73, "-o \(output): \(result.summary)")
            #expect(result.stderrLines.contains { $0.hasPrefix("thumbd: \(output): ") }, "\(result.stderr)")
        }
        #expect(folderContents(folder) == ["plain-file"])
    }

    @Test("several inputs with one bad: the others are written, exit 65")
    func mixedInputs() throws {
        let scratch = try ScratchDirectory("out")
        defer { scratch.remove() }
        let folder = scratch.path
        let good = [Paths.corpusFile("pngsuite", "basn2c08.png"), Paths.corpusFile("libjpeg-turbo-testimages", "testorig.jpg"),
                    Paths.corpusFile("pngsuite", "basn6a08.png")]
        let bad = Paths.corpusFile("pngsuite", "xcsn0g01.png")
        let result = try MeasuredChild.run(try requireThumbd(), ["render", good[0], bad, good[1], good[2], "--slot", "large",
                                                                "--config", Paths.sampleConfig, "--out-dir", folder])
        #expect(result.exitCode == 65, "\(result.summary)")
        #expect(result.stderrLines.filter { $0.contains(bad) }.count == 1, "\(result.stderr)")
        #expect(folderContents(folder) == ["basn2c08.large@1x.jpg", "basn6a08.large@1x.png", "testorig.large@1x.jpg"],
                "got \(folderContents(folder))")
        #expect(result.maxRSSBytes <= Self.maxRSS)
    }

    @Test("a good input renders, exit 0, the file named on stdout")
    func goodInput() throws {
        let scratch = try ScratchDirectory("out")
        defer { scratch.remove() }
        let folder = scratch.path
        let input = Paths.corpusFile("exif-orientation", "Portrait_6.jpg")
        let result = try MeasuredChild.run(try requireThumbd(), ["render", input, "--slot", "contact-avatar@3x",
                                                                "--config", Paths.sampleConfig, "--out-dir", folder])
        #expect(result.exitCode == 0, "\(result.summary)")
        #expect(folderContents(folder) == ["Portrait_6.contact-avatar@3x.png"], "got \(folderContents(folder))")
        #expect(result.stdout.contains("144x144"), "stdout: \(result.stdout)")
    }
}
