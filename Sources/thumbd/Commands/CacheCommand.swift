import Foundation
import ThumbImaging
import ThumbPipeline

/// `thumbd cache stats|purge|verify`: a cache folder administered without a daemon. It takes the
/// folder's lock like any thumbd, so it refuses (75) while a daemon or batch has it open: the
/// running daemon answers `GET /v1/cache/stats` and `DELETE /v1/cache` instead.
struct CacheCommand: ThumbdCommand {
    static let name = "cache"
    static let summary = "count, purge or verify a cache folder (no daemon running)"
    static let usage = """
        usage: thumbd cache stats  [--config FILE] [--cache DIR] [--json]
               thumbd cache purge  [--config FILE] [--cache DIR] (--asset PATH | --prefix FOLDER | --kind KIND) [--json]
               thumbd cache verify [--config FILE] [--cache DIR] [--json]

          stats   thumbnails and bytes, against the config's cache.diskBytes; assets, placeholders,
                  remembered failures, waiting pre-renders and focus points in the index
          purge   one asset's thumbnails (with its placeholder and failure record), those of every
                  asset under a folder (paths as the index keys them, relative to the asset folder), or
                  every thumbnail of a kind of the config (or an inline spec), at every scale or the
                  one named (contact-avatar@3x)
          verify  every file checked against the index and every disagreement mended: files without
                  a row removed, rows whose file is missing, of another size or misnamed removed
                  (rendered again when asked); says what it found

        The cache folder is --cache, else the config's cache.directory, else $CACHE_DIRECTORY/thumbnails
        (systemd's, as `thumbd serve` uses it). Nothing is evicted, whatever the budget.

        exit status: 0 done (verify: whether or not it mended something); 64 usage; 66 no such cache folder;
        73 cannot open the cache; 75 a running thumbd has the cache folder open; 78 bad config.
        """

    enum Action: String { case stats, purge, verify }

    var action: Action
    var configPath: String?
    var cache: String?
    var selection: CachePurgeSelection?
    var json = false

    enum CachePurgeSelection { case asset(String), folder(String), kind(String) }

    init(arguments: [String]) throws(UsageError) {
        let scanner = try ArgumentScanner(arguments, valued: ["--config", "--cache", "--asset", "--prefix", "--kind"], flags: ["--json"])
        guard let first = scanner.positionals.first, let action = Action(rawValue: first) else {
            throw UsageError(message: "say what to do: stats, purge or verify")
        }
        guard scanner.positionals.count == 1 else { throw UsageError(message: "unexpected argument '\(scanner.positionals[1])'") }
        self.action = action
        configPath = try scanner.value("--config")
        cache = try scanner.value("--cache")
        json = scanner.flag("--json")
        let asset = try scanner.value("--asset"), prefix = try scanner.value("--prefix"), kind = try scanner.value("--kind")
        if let kind {
            guard action == .purge, asset == nil, prefix == nil else {
                throw UsageError(message: action == .purge ? "purge takes exactly one of --asset PATH, --prefix FOLDER or --kind KIND"
                                                            : "--kind goes with purge only")
            }
            guard (1...SlotBounds.maxTextBytes).contains(kind.utf8.count) else {
                throw UsageError(message: "--kind must be 1 to \(SlotBounds.maxTextBytes) bytes")
            }
            selection = .kind(kind)
            return
        }
        switch (action, asset, prefix) {
        case (.purge, let asset?, nil):
            guard (1...PipelineRequest.maxAssetPathBytes).contains(asset.utf8.count) else {
                throw UsageError(message: "--asset must be 1 to \(PipelineRequest.maxAssetPathBytes) bytes")
            }
            selection = .asset(asset)
        case (.purge, nil, let prefix?):
            var folder = Substring(prefix)
            while folder.hasSuffix("/") { folder = folder.dropLast() }
            guard !folder.isEmpty, folder.utf8.count <= PipelineRequest.maxAssetPathBytes else {
                throw UsageError(message: "--prefix must name a folder under the asset folder, not the whole of it")
            }
            selection = .folder(String(folder))
        case (.purge, _, _):
            throw UsageError(message: "purge takes exactly one of --asset PATH, --prefix FOLDER or --kind KIND")
        case (_, nil, nil):
            selection = nil
        default:
            throw UsageError(message: "--asset, --prefix and --kind go with purge only")
        }
    }

    func run() -> ExitCode {
        guard let config = ConfigOption.loadReporting(configPath) else { return .config }
        let environment = ProcessInfo.processInfo.environment
        guard let directory = cache ?? config.service.cacheDirectory ?? environment["CACHE_DIRECTORY"].map({ $0 + "/thumbnails" }) else {
            Console.error("thumbd cache: name the cache folder with --cache DIR (or the config's cache.directory)")
            return .usage
        }
        guard ConfigOption.isFolder(directory) else {
            // Opening would create an empty cache there: not what an administrator asked for.
            Console.error("thumbd cache: \(directory): no such folder")
            return .noInput
        }
        let disk: ThumbnailStore
        do {
            // The largest budget the config allows: an administrator's look evicts nothing.
            disk = try ThumbnailStore(directory: directory, byteBudget: 1 << 50, reconcilesFiles: false)
        } catch let error where error.kind == .inUse {
            Console.error("thumbd cache: \(error.reason): stop it first, or ask it (GET /v1/cache/stats, DELETE /v1/cache)")
            return .tempFail
        } catch {
            Console.error("thumbd cache: cannot open the cache \(directory): \(error)")
            return .cannotCreate
        }
        defer { disk.close() }
        switch action {
        case .stats:
            var statistics = disk.index.detailedStatistics
            statistics.budgetBytes = config.service.diskCacheBytes
            report(["entries": statistics.entries, "bytes": statistics.bytes, "budgetBytes": statistics.budgetBytes,
                    "assets": statistics.assets, "placeholders": statistics.placeholders, "failures": statistics.failures,
                    "backlog": statistics.backlog, "focusPoints": statistics.focusPoints],
                   text: "\(directory): \(statistics.entries) thumbnails, \(statistics.bytes) bytes (budget \(statistics.budgetBytes)) "
                       + "of \(statistics.assets) assets; \(statistics.placeholders) placeholders, \(statistics.failures) remembered "
                       + "failures, \(statistics.backlog) pre-renders waiting, \(statistics.focusPoints) focus points")
        case .purge:
            let purge: CachePurge
            let named: String
            switch selection {
            case .asset(let path)?: (purge, named) = (disk.removeThumbnails(ofAssets: [path]), "asset \(path)")
            case .folder(let folder)?: (purge, named) = (disk.purge(under: folder), "folder \(folder)/")
            case .kind(let name)?:
                do throws(SlotSpecError) {
                    let selection = try config.catalog.resolve(name)
                    (purge, named) = (disk.purge(kindMarker: CacheKey.kindMarker(selection.kind), scale: selection.scale), "kind \(name)")
                } catch {
                    Console.error("thumbd cache: --kind: \(error.description)")
                    return .usage
                }
            case nil: return .usage // parsed away above
            }
            disk.index.waitForRemovals()
            report(["entries": purge.entries, "bytes": purge.bytes],
                   text: "\(directory): removed \(purge.entries) thumbnails (\(purge.bytes) bytes) of \(named)")
        case .verify:
            guard let found = disk.index.verify() else {
                Console.error("thumbd cache: the index of \(directory) failed during the check (see above)")
                return .cannotCreate
            }
            report(["filesRemoved": found.filesRemoved, "fileBytesRemoved": found.fileBytesRemoved, "rowsRemoved": found.rowsRemoved,
                    "entries": found.entries, "bytes": found.bytes],
                   text: "\(directory): \(found.filesRemoved) files without a row removed (\(found.fileBytesRemoved) bytes), "
                       + "\(found.rowsRemoved) rows without their file removed; \(found.entries) thumbnails, \(found.bytes) bytes")
        }
        return .ok
    }

    private func report(_ object: [String: Int], text: String) {
        if json, let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) {
            Console.out(String(decoding: data, as: UTF8.self))
        } else {
            Console.out(text)
        }
    }
}
