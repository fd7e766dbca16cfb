package import ThumbImaging
import ThumbPipeline

/// `DELETE /v1/cache?asset=PATH`, `?prefix=FOLDER` or `?kind=KIND`: one asset's thumbnails
/// (with its placeholder and failure record), those of every asset under a folder, or every
/// thumbnail of a kind (all scales, or the one named: `contact-avatar@3x`), from disk and
/// memory. Paths are the index's: relative to the asset folder, percent-encoded in the query. A
/// kind is a name of the config (or an inline spec), resolved as `GET /v1/thumbnails` does.
package struct CachePurgeCall: Sendable, Equatable {
    package enum Selection: Sendable, Equatable {
        case asset(String)
        case folder(String)
        /// The kind as resolved, the scale when one was named (`contact-avatar@3x`), and the text.
        case kind(SlotKind, scale: Int?, name: String)
    }

    package var selection: Selection
    /// `failures=true`: the assets' remembered failures go too. By default they stay, so that a
    /// file that crashes workers is not tried again by every request after a purge.
    package var removesFailures = false

    static let shape = "give exactly one of asset=PATH, prefix=FOLDER or kind=KIND (and optionally failures=true)"

    package static func parse(query: [String: String], catalog: SlotCatalog) throws(APIError) -> CachePurgeCall {
        if let unknown = query.keys.sorted().first(where: { !["asset", "prefix", "kind", "failures"].contains($0) }) {
            throw .badQuery("unknown parameter '\(DisplayText.truncated(unknown, maxBytes: 40))' (\(shape))")
        }
        var query = query
        var removesFailures = false
        if let text = query.removeValue(forKey: "failures") {
            guard text == "true" || text == "false" else { throw .badQuery("failures must be true or false") }
            removesFailures = text == "true"
        }
        var call = try parseSelection(query: query, catalog: catalog)
        call.removesFailures = removesFailures
        return call
    }

    private static func parseSelection(query: [String: String], catalog: SlotCatalog) throws(APIError) -> CachePurgeCall {
        guard query.count == 1 else { throw .badQuery(shape) }
        if let asset = query["asset"] { return CachePurgeCall(selection: .asset(try path(asset, field: "asset"))) }
        if let prefix = query["prefix"] {
            var folder = Substring(try path(prefix, field: "prefix"))
            while folder.hasSuffix("/") { folder = folder.dropLast() }
            // Everything at once is not a typo away: stop the daemon and remove the folder.
            guard !folder.isEmpty else { throw .badQuery("'prefix' must name a folder, not the whole asset folder") }
            return CachePurgeCall(selection: .folder(String(folder)))
        }
        let name = try PercentDecoding.decode(query["kind"] ?? "", field: "kind")
        do throws(SlotSpecError) {
            let selection = try catalog.resolve(name)
            return CachePurgeCall(selection: .kind(selection.kind, scale: selection.scale, name: name))
        } catch {
            throw APIError(400, "badKind", "'kind': \(error.description)")
        }
    }

    private static func path(_ raw: String, field: String) throws(APIError) -> String {
        let path = try PercentDecoding.decode(raw, field: field)
        guard (1...PipelineRequest.maxAssetPathBytes).contains(path.utf8.count) else {
            throw .badQuery("'\(field)' must be 1 to \(PipelineRequest.maxAssetPathBytes) bytes, this one is \(path.utf8.count)")
        }
        return path
    }
}

extension ThumbnailAPI {
    /// `GET /v1/cache/stats`.
    func cacheStatistics() -> HTTPResponse {
        let (disk, memory) = pipeline.detailedCacheStatistics
        return .json(200, ["disk": ["entries": disk.entries, "bytes": disk.bytes, "budgetBytes": disk.budgetBytes,
                                    "assets": disk.assets, "placeholders": disk.placeholders, "failures": disk.failures,
                                    "backlog": disk.backlog, "focusPoints": disk.focusPoints],
                           "memory": ["entries": memory.entries, "bytes": memory.bytes]])
    }

    /// `DELETE /v1/cache`: what was removed.
    func purgeCache(_ call: CachePurgeCall) -> HTTPResponse {
        let (purge, selection): (CachePurge, [String: String]) = switch call.selection {
        case .asset(let path): (pipeline.purgeCache(asset: path, keepingFailures: !call.removesFailures), ["asset": path])
        case .folder(let folder): (pipeline.purgeCache(under: folder, keepingFailures: !call.removesFailures), ["prefix": folder])
        case .kind(let kind, let scale, let name): (pipeline.purgeCache(kind: kind, scale: scale), ["kind": name])
        }
        return .json(200, ["removed": ["entries": purge.entries, "bytes": purge.bytes], "selection": selection])
    }
}
