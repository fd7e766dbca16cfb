package import ThumbImaging
import ThumbSystem

/// One listed asset: its path and the placeholder the index holds for it, if any.
package struct ListedAsset: Sendable, Equatable {
    package var path: String
    /// The placeholder of the version last decoded (`nil` before any decode): a file changed
    /// since shows its previous version's until it is decoded again, which is what a
    /// placeholder is for (`POST /v1/placeholders` answers for the current version).
    package var placeholder: Placeholder?

    /// What the name's extension says the file holds (`SourceFormatRow.media`: a client shows a
    /// play badge on a video); nil for a name without one of the table's extensions.
    package var media: SourceMedia? {
        let name = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(decoding: path.utf8[path.utf8.index(after: $0)...], as: UTF8.self) } ?? path
        guard let dot = name.lastIndex(of: ".") else { return nil }
        return SourceFormat.named(extension: name[name.index(after: dot)...])?.row.media
    }
}

extension ThumbnailPipeline {
    /// A page of the asset listing (`AssetListing.page`), with the placeholders known.
    package func listAssets(prefix: String, after: String, limit: Int) -> [ListedAsset] {
        let paths = stores.listing.page(prefix: prefix, after: after, limit: limit)
        let stored = stores.placeholders.stored(ofAssets: paths)
        return paths.map { ListedAsset(path: $0, placeholder: stored[ExactPath($0)]?.placeholder) }
    }
}
