import Foundation
import ThumbImaging
import ThumbPipeline
#if canImport(Glibc)
import Glibc
import ThumbSystem
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
        guard outputTree != nil else { return pipeline.isCached(assetPath: task.asset, kind: task.kind, scale: task.scale, format: task.format) }
        guard let source = FileSystem.modificationTime(assetRoot + "/" + task.asset) else { return false }
        let written = task.format.imageFormat.map { [$0] } ?? [ImageFormat.jpeg, .png]
        for format in written {
            guard let path = outputPath(task, format: format) else { continue }
            if let output = FileSystem.modificationTime(path), output.tv_sec == source.tv_sec, output.tv_nsec == source.tv_nsec {
                return true
            }
        }
        return false
    }

    /// Writes the thumbnail into the output tree (temporary name, fsync, rename) stamped with
    /// the source's mtime: a killed run never leaves a partial file, and what it left under a
    /// temporary name goes once a later run writes into that folder. Nil on success.
    func writeOutput(_ task: Task, _ thumbnail: CachedThumbnail) -> Failure? {
        guard let path = outputPath(task, format: thumbnail.format) else { return nil }
        let sourceTime = FileSystem.modificationTime(assetRoot + "/" + task.asset)
        do {
            if let slash = path.lastIndex(of: "/") {
                let folder = String(path[..<slash])
                try FileSystem.createFolders(folder)
                let removed = staleTemporaries.sweepOnce(folder)
                if removed > 0 {
                    pipeline.configuration.log.notice("removed \(removed) temporary file(s) left in \(folder) by a writer that is gone")
                }
            }
            try AtomicFile.replace(path, with: thumbnail.bytes, modificationTime: sourceTime)
            return nil
        } catch {
            return Failure(asset: task.asset, kind: "\(task.kindName)@\(task.scale)x", reason: "cannot write \(path): \(error)",
                           isPermanent: false)
        }
    }
}
