import ThumbImaging
import ThumbPipeline

/// `DELETE /v1/cache?asset=PATH` or `?prefix=FOLDER`: one asset's thumbnails (with its
/// placeholder and failure record), or those of every asset under a folder, from disk and
/// memory. Paths are the index's: relative to the asset folder, percent-encoded in the query.
public struct CachePurgeCall: Sendable, Equatable {
    public enum Selection: Sendable, Equatable {
        case asset(String)
        case folder(String)
    }

    public var selection: Selection

    public static func parse(query: [String: String]) throws(APIError) -> CachePurgeCall {
        if let unknown = query.keys.sorted().first(where: { $0 != "asset" && $0 != "prefix" }) {
            throw .badQuery("unknown parameter '\(DisplayText.truncated(unknown, maxBytes: 40))' (expected asset=PATH or prefix=FOLDER)")
        }
        switch (query["asset"], query["prefix"]) {
        case let (asset?, nil):
            return CachePurgeCall(selection: .asset(try path(asset, field: "asset")))
        case let (nil, prefix?):
            var folder = Substring(try path(prefix, field: "prefix"))
            while folder.hasSuffix("/") { folder = folder.dropLast() }
            // Everything at once is not a typo away: stop the daemon and remove the folder.
            guard !folder.isEmpty else { throw .badQuery("'prefix' must name a folder, not the whole asset folder") }
            return CachePurgeCall(selection: .folder(String(folder)))
        default:
            throw .badQuery("give exactly one of asset=PATH or prefix=FOLDER")
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
        case .asset(let path): (pipeline.purgeCache(asset: path), ["asset": path])
        case .folder(let folder): (pipeline.purgeCache(under: folder), ["prefix": folder])
        }
        return .json(200, ["removed": ["entries": purge.entries, "bytes": purge.bytes], "selection": selection])
    }
}
