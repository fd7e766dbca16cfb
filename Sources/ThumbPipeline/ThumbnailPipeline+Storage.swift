import Dispatch
import ThumbImaging

extension ThumbnailPipeline {
    /// The cache file of `thumbnail` if it is on disk now, whole. Otherwise nil — never a path
    /// to nothing — and the file is written again in the background (a removed cache folder is
    /// recreated, room made on a full disk), so that a client that retries finds it.
    package func storedFilePath(of thumbnail: CachedThumbnail) -> String? {
        if let path = thumbnail.storedFilePath { return path }
        let memory = memory
        stores.thumbnails.storeInBackground(thumbnail) { stored in memory.insert(stored) }
        return nil
    }
}
