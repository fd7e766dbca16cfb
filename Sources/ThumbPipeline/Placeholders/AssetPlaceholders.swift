import Synchronization
package import ThumbImaging
import ThumbSystem

/// What the pipeline knows of one asset's placeholder.
package enum PlaceholderState: Sendable, Equatable {
    /// Computed from the asset's current version (`version` is opaque: it changes with the file).
    case known(Placeholder, version: String)
    /// The asset exists and its placeholder is on its way (queued, or being decoded).
    case pending
    /// The asset is remembered as failing to decode: no placeholder until the file changes.
    case failed(reason: String)
    /// No such asset (or not one this root serves).
    case missing(reason: String)
}

/// What the placeholder look-up asks of the pipeline (`ThumbnailPipeline`).
protocol PlaceholderRendering: AnyObject, Sendable {
    /// Queues, in one decision, a render of `kind` for each of these versions whose decode
    /// computes its placeholder (or asks a job of that thumbnail on its way to compute it);
    /// refused quietly when the queue is full (the asset stays pending and the next look-up tries again).
    func queuePlaceholderRenders(_ assets: [(absolutePath: String, version: AssetVersion)], kind: SlotKind, scale: Int,
                                 priority: Priority, format: EncoderSettings.Format?)
}

/// Placeholders from the decode to the index, and the batch look-up a screen of cells asks for.
/// A placeholder belongs to one asset version and is computed from a decode of it (in process
/// or in the worker) that the index has none for: any decode that reads the whole frame anyway,
/// every decode no client waits on (pre-rendering, batch, the look-up's own renders), and one a
/// client waits on that reads placeholders from its answers (`PipelineRequest.wantsPlaceholder`).
/// Another client's render that could skip columns (a JPEG fill crop) leaves it to those.
package final class AssetPlaceholders: Sendable {
    let assets: AssetRoot
    let stores: CacheStores
    /// The pipeline that renders what the index has no placeholder for, bound once it exists.
    let pipeline = PipelineBinding<any PlaceholderRendering>()
    /// Assets the look-ups answered from the index, and those they left pending (for `/metrics`).
    let lookups = Mutex<(hits: Int, pending: Int)>((0, 0))

    init(assets: AssetRoot, stores: CacheStores) {
        self.assets = assets
        self.stores = stores
    }

    /// The placeholders of `paths` (one state each, in order): each path resolved to its
    /// current version, then one batch look-up in the index. An existing asset without one for
    /// that version gets a render of `kind` at `scale` queued at `priority` (coalescing with
    /// any job of the same thumbnail), which computes it; even when that thumbnail is cached.
    package func states(ofAssets paths: [String], rendering kind: SlotKind, scale: Int,
                        priority: Priority = .prefetch, format: EncoderSettings.Format? = nil) -> [PlaceholderState] {
        var resolved: [(absolutePath: String, version: AssetVersion)?] = []
        var states: [PlaceholderState?] = []
        for path in paths {
            do {
                resolved.append(try assets.resolve(path))
                states.append(nil)
            } catch {
                resolved.append(nil)
                states.append(.missing(reason: ThumbFailure(error).reason))
            }
        }
        let stored = stores.placeholders.stored(ofAssets: resolved.compactMap { $0?.version.path })
        var hits = 0
        var renders: [(absolutePath: String, version: AssetVersion)] = []
        for index in paths.indices where states[index] == nil {
            guard let found = resolved[index] else { continue }
            if let row = stored[ExactPath(found.version.path)], row.version == found.version.description {
                states[index] = .known(row.placeholder, version: Self.versionTag(row.version))
                hits += 1
            } else if let failure = stores.failures.failure(for: found.version) {
                states[index] = .failed(reason: failure.reason)
            } else {
                renders.append(found)
                states[index] = .pending
            }
        }
        if !renders.isEmpty {
            pipeline.ability?.queuePlaceholderRenders(renders, kind: kind, scale: scale, priority: priority, format: format)
        }
        lookups.withLock {
            $0.hits += hits
            $0.pending += renders.count
        }
        return states.map { $0 ?? .pending }
    }

    /// The placeholder of the version a thumbnail was rendered from, if the index has it (no
    /// file status read: the key's descriptor names the version).
    package func placeholder(of thumbnail: CachedThumbnail) -> Placeholder? {
        guard let row = stores.placeholders.stored(ofAssets: [thumbnail.key.assetPath])[ExactPath(thumbnail.key.assetPath)],
              thumbnail.key.descriptor.hasPrefix("v\(CacheKey.pipelineVersion)|\(row.version)|") else { return nil }
        return row.placeholder
    }

    /// The placeholder of an asset's current version (resolves the path: one status read), or nil.
    package func known(assetPath: String) -> Placeholder? {
        guard let version = try? assets.resolve(assetPath).version else { return nil }
        return stores.placeholders.placeholder(of: version)
    }

    /// An opaque, stable tag of a version's description (16 hex digits, FNV-1a): clients compare
    /// it, and it shows no inode or device numbers.
    static func versionTag(_ description: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in description.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        let text = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - text.count) + text
    }
}
