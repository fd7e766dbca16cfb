import Foundation
import Testing
import ThumbTestSupport
@testable import ThumbImaging

/// A large TIFF is decoded from its file (libtiff reads the strips it needs), not from a copy of
/// the file in memory: the same thumbnail, and a file rewritten meanwhile is refused.
@Suite("TIFF: large files are read where needed, from the file")
struct TIFFFromFileTests {
    /// The corpus photo (4608x1976) as striped LZW, about 14 MB: over `SourceFileWindow.minimumBytes`.
    static func largeTIFF(in scratch: ScratchDirectory) throws -> String {
        let path = scratch.path("photo.tif")
        try TIFFTestSupport.run("vips", ["tiffsave", TIFFTestSupport.photo, path, "--compression", "lzw"])
        return path
    }

    @Test("a large TIFF stays in its file and renders exactly as from memory; a small one is read whole")
    func sameThumbnailFromTheFile() throws {
        let scratch = try ScratchDirectory("tiff-file")
        defer { scratch.remove() }
        let path = try Self.largeTIFF(in: scratch)
        let fromFile = try loadSource(path)
        let window = try #require(fromFile.file, "a \(fromFile.count)-byte TIFF is read from its file")
        #expect(fromFile.count >= SourceFileWindow.minimumBytes && fromFile.format == .tiff)
        #expect(window.status.size == fromFile.count)
        let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
        let inMemory = SourceBytes(bytes)
        #expect(inMemory.file == nil)
        for box in [256, 64] {
            let request = try TIFFTestSupport.request(width: box, height: box)
            let expected = try Thumbnailer().render(inMemory, request: request)
            let got = try Thumbnailer().render(fromFile, request: request)
            #expect(got.pixels == expected.pixels, "\(box)")
        }
        // Something other than the TIFF decoder that asks for the bytes gets the file's.
        #expect(fromFile.withUnsafeBytes { Array($0) } == bytes)

        let small = scratch.path("small.tif")
        try TIFFTestSupport.run("vips", ["tiffsave", TIFFTestSupport.photo + "[shrink=8]", small])
        let smallSource = try loadSource(small)
        #expect(smallSource.count < SourceFileWindow.minimumBytes && smallSource.file == nil)
    }

    @Test("a TIFF rewritten or cut after it was opened is refused, saying so; never a mixed thumbnail")
    func changedWhileDecoded() throws {
        let scratch = try ScratchDirectory("tiff-file-changed")
        defer { scratch.remove() }
        let path = try Self.largeTIFF(in: scratch)
        let request = try TIFFTestSupport.request(width: 256, height: 256)

        // Same bytes, a new mtime: a writer that rewrote the file in place.
        let rewritten = try loadSource(path)
        #expect(rewritten.file != nil)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: 60)], ofItemAtPath: path)
        #expect(throws: ImagingError.undecodable(reason: "TIFF: \(path) was modified while being decoded")) {
            try Thumbnailer().render(rewritten, request: request)
        }

        // Cut in half after the open: the strips past the cut are gone.
        let cut = try loadSource(path)
        #expect(cut.file != nil)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(cut.count / 2))
        try handle.close()
        do {
            let image = try Thumbnailer().render(cut, request: request)
            Issue.record("a cut file rendered \(image.pixels.width)x\(image.pixels.height)")
        } catch {
            #expect(error.description.contains("was modified while being decoded"), "\(error)")
        }
    }
}
