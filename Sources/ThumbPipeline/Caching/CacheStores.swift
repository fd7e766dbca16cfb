/// The cache folder's index and the stores on top of it, as the pipeline's parts hold them:
/// each concern behind the protocol of what its users ask (`FailureRemembering`,
/// `BacklogKeeping`, `PlaceholderKeeping`, `FocusKeeping`, `AssetListing`), so that a test substitutes any of
/// them; the thumbnails as the `ThumbnailStore` itself (eviction, purges and the background
/// rewrite are its own).
package struct CacheStores: Sendable {
    package let index: CacheIndex
    package let thumbnails: ThumbnailStore
    package var failures: any FailureRemembering
    package var backlog: any BacklogKeeping
    package var placeholders: any PlaceholderKeeping
    package var focus: any FocusKeeping
    package var listing: any AssetListing

    /// Every store on `index`, as the daemon runs them.
    package init(index: CacheIndex) {
        self.index = index
        thumbnails = ThumbnailStore(index: index)
        failures = FailureStore(index: index)
        backlog = BacklogStore(index: index)
        placeholders = PlaceholderStore(index: index)
        focus = FocusStore(index: index)
        listing = AssetListStore(index: index)
    }

    /// Opens the index in `directory` (see `CacheIndex.init`) with every store on it.
    package static func open(directory: String, byteBudget: Int, log: PipelineLog = .standardError,
                             reconcilesFiles: Bool = true) throws(CacheError) -> CacheStores {
        CacheStores(index: try CacheIndex(directory: directory, byteBudget: byteBudget, log: log, reconcilesFiles: reconcilesFiles))
    }
}
