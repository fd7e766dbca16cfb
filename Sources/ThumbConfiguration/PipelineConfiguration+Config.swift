package import ThumbImaging
import ThumbPipeline
import ThumbWorker

extension PipelineConfiguration {
    /// The one mapping from the config file to a pipeline, for `serve` (and its spool) and
    /// `batch`: what a command does differently it sets afterwards, in one place of its own.
    /// `workers` overrides the file's (a command-line flag); nil with neither: one per core.
    package init(_ config: ThumbConfig, assetRoot: String, cacheDirectory: String, workers: Int? = nil) {
        self.init(assetRoot: assetRoot, cacheDirectory: cacheDirectory)
        memoryCacheBytes = config.service.memoryCacheBytes
        diskCacheBytes = config.service.diskCacheBytes
        self.workers = workers ?? config.service.workers ?? max(1, System.processorCount)
        maxQueuedJobs = config.service.maxQueuedJobs
        maxSlots = config.service.maxSlots
        maxSlotTableBytes = config.service.maxSlotTableBytes
        slotIdleSeconds = Double(config.service.slotIdleSeconds)
        limits = config.limits
        encoder = config.encoder
        outputFormats = config.outputFormats
        tuning = config.shrinkTuning
        renderSeconds = config.service.renderSeconds
        worker = config.service.sandbox ? .thumbd(memoryLimitBytes: config.service.workerMemoryBytes) : nil
        attentionPlaced = Self.attentionPlaced(config.catalog)
    }

    /// Every scale of the catalog's kinds whose crop attention places (`attention`, or `focus`
    /// for assets without one): `attentionPlaced`.
    package static func attentionPlaced(_ catalog: SlotCatalog) -> [(kind: SlotKind, scale: Int)] {
        catalog.kinds.values.filter { $0.mode == .fill && ($0.crop == .attention || $0.crop == .focus) }
            .sorted { $0.name < $1.name }.flatMap { kind in kind.scales.map { (kind, $0) } }
    }
}
