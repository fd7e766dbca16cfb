import Foundation
import ThumbImaging
import ThumbPipeline
#if canImport(Glibc)
import Glibc
#endif

extension BatchRunner {
    /// `OUT/<kind>@<scale>x/<asset path>.<ext>` (`photos/a.png` → `large@1x/photos/a.png.jpg`):
    /// the asset's whole name stays, so `a.jpg` and `a.png` never share an output.
    func outputPath(_ task: Task, format: ImageFormat) -> String? {
        guard let outputTree else { return nil }
        return "\(outputTree)/\(task.kindName)@\(task.scale)x/\(task.asset).\(format.fileExtension)"
    }

    /// Up to date: in the cache (cache mode), or an output whose modification time is the
    /// source's (output-tree mode: set on write, so a changed source is rendered again).
    func isUpToDate(_ task: Task) -> Bool {
        guard outputTree != nil else { return pipeline.isCached(assetPath: task.asset, kind: task.kind, scale: task.scale) }
        var source = stat()
        guard stat(assetRoot + "/" + task.asset, &source) == 0 else { return false }
        for format in [ImageFormat.jpeg, .png] {
            guard let path = outputPath(task, format: format) else { continue }
            var output = stat()
            if stat(path, &output) == 0, output.st_mtim.tv_sec == source.st_mtim.tv_sec, output.st_mtim.tv_nsec == source.st_mtim.tv_nsec {
                return true
            }
        }
        return false
    }

    /// Writes the thumbnail into the output tree (temporary name, fsync, rename, then the
    /// source's mtime): a killed run never leaves a partial file. Nil on success.
    func writeOutput(_ task: Task, _ thumbnail: CachedThumbnail) -> Failure? {
        guard let path = outputPath(task, format: thumbnail.format) else { return nil }
        let folder = (path as NSString).deletingLastPathComponent
        let temporary = "\(folder)/.\((path as NSString).lastPathComponent).\(getpid()).tmp"
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let descriptor = try systemCall("create \(temporary)") { open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644) }
            defer { close(descriptor) }
            var written = 0
            while written < thumbnail.bytes.count {
                written += try thumbnail.bytes.withUnsafeBytes { bytes in
                    try systemCall("write \(temporary)") { Glibc.write(descriptor, bytes.baseAddress! + written, bytes.count - written) }
                }
            }
            try systemCall("fsync \(temporary)") { fsync(descriptor) }
            var source = stat()
            if stat(assetRoot + "/" + task.asset, &source) == 0 {
                var times = [source.st_atim, source.st_mtim]
                _ = futimens(descriptor, &times)
            }
            try systemCall("rename \(temporary)") { rename(temporary, path) }
            return nil
        } catch {
            unlink(temporary)
            return Failure(asset: task.asset, kind: "\(task.kindName)@\(task.scale)x", reason: "cannot write \(path): \(error)",
                           isPermanent: false)
        }
    }
}
