package import ThumbImaging

/// Why an asset's focus could not be read or changed: the asset (not there, outside the root…),
/// or the index that keeps it.
package enum FocusError: Error, Equatable, Sendable, CustomStringConvertible {
    case asset(ThumbFailure)
    case index(CacheError)

    package var description: String {
        switch self {
        case .asset(let failure): failure.description
        case .index(let error): "the index cannot keep the focus: \(error)"
        }
    }
}

/// Focal points: the asset's focus goes into the key (and the render) of every kind whose crop
/// follows it. Setting or removing one drops what was cropped around the old one: on disk the
/// asset's focus-cropped rows and files (in the focus's own transaction), in memory all of the
/// asset's entries and its vouch (its other kinds come back from disk at the next hit). A render
/// that was running with the old focus stores under the old focus's key, which no request forms
/// any more: unreachable, and evicted like any cold entry.
package final class AssetFocus: Sendable {
    let assets: AssetRoot
    let stores: CacheStores
    let memory: MemoryCache

    init(assets: AssetRoot, stores: CacheStores, memory: MemoryCache) {
        self.assets = assets
        self.stores = stores
        self.memory = memory
    }

    /// The key of `kind` for this version, with the asset's focus when the kind's crop follows it
    /// (the key's `focus` then goes into the render's request: one look-up decides both).
    func cacheKey(asset: AssetVersion, kind: SlotKind, scale: Int, encoder: EncoderSettings) -> CacheKey {
        CacheKey(asset: asset, kind: kind, scale: scale, encoder: encoder,
                 focus: kind.cropFollowsFocus ? stores.focus.focus(ofAsset: asset.path) : nil)
    }

    /// The asset's focus; the path is resolved (confined, must exist) and answered as the root
    /// knows it (the form the index keys by).
    package func region(ofAssetPath assetPath: String) throws(FocusError) -> (assetPath: String, focus: FocusRegion?) {
        let path = try resolvedFocusPath(assetPath)
        return (path, stores.focus.focus(ofAsset: path))
    }

    /// Sets (or replaces) the asset's focus. Returns the asset's path as the root knows it.
    @discardableResult
    package func set(_ focus: FocusRegion, ofAssetPath assetPath: String) throws(FocusError) -> String {
        let path = try resolvedFocusPath(assetPath)
        do {
            try stores.focus.setFocus(focus, ofAsset: path)
        } catch {
            throw .index(error)
        }
        memory.removeThumbnails(ofAsset: path)
        return path
    }

    /// Removes the asset's focus; `removed` false when it had none.
    @discardableResult
    package func remove(ofAssetPath assetPath: String) throws(FocusError) -> (assetPath: String, removed: Bool) {
        let path = try resolvedFocusPath(assetPath)
        let removed: Bool
        do {
            removed = try stores.focus.removeFocus(ofAsset: path)
        } catch {
            throw .index(error)
        }
        if removed { memory.removeThumbnails(ofAsset: path) }
        return (path, removed)
    }

    private func resolvedFocusPath(_ assetPath: String) throws(FocusError) -> String {
        do {
            return try assets.resolve(assetPath).version.path
        } catch {
            throw .asset(ThumbFailure(error))
        }
    }
}
