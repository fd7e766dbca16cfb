import ThumbBatch
import ThumbImaging
import ThumbPipeline
import ThumbWorker

extension ThumbnailAPI {
    /// The render failures a file (not the daemon) causes, exported from the start.
    static let seededFailureCodes = [ThumbFailure.undecodable(reason: ""), .tooLarge(reason: ""), .renderCrashed(reason: ""),
                                     .renderTimedOut(reason: "")].map(\.disposition.code)

    /// Prometheus text exposition format.
    func metricsText() -> String {
        let metrics = pipeline.metrics
        let cache = pipeline.cacheStatistics
        var lines: [String] = []
        func metric(_ name: String, _ type: String, _ help: String, _ samples: [(String, Double)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in samples {
                let whole = CheckedConversion.wholeNumber(value, in: -(1 << 53)...(1 << 53))
                lines.append("\(name)\(labels.isEmpty ? "" : "{\(labels)}") \(whole.map(String.init) ?? String(value))")
            }
        }
        var requests = counters.withLock { $0.counts }
        if case let answered = thumbnailsAnswered.load(ordering: .relaxed), answered > 0 { requests["thumbnails", default: [:]][200, default: 0] += answered }
        metric("thumbd_http_requests_total", "counter", "HTTP requests by route and status.",
               requests.keys.sorted().flatMap { route in
                   (requests[route] ?? [:]).keys.sorted().map { status in
                       ("route=\"\(route)\",status=\"\(status)\"", Double(requests[route]?[status] ?? 0))
                   }
               })
        let refused = access.refusals.counts
        metric("thumbd_access_refusals_total", "counter",
               "Requests the access model refused, by route and reason (role, signature, host, origin, contentType, token, share).",
               refused.keys.sorted().flatMap { route in
                   (refused[route] ?? [:]).keys.sorted().map { reason in
                       ("route=\"\(route)\",reason=\"\(reason)\"", Double(refused[route]?[reason] ?? 0))
                   }
               })
        metric("thumbd_fair_share_refused_renders_total", "counter",
               "Misses refused 429 because their caller's bucket of renders was empty.", [("", Double(metrics.refusedByShare))])
        let transport = HTTPTransportMetrics.process
        metric("thumbd_http_slow_clients_total", "counter",
               "Connections closed because their request was not whole within the request deadline (slow or idle clients), by the deadline that applied.",
               [("deadline=\"normal\"", Double(transport.slowClientsCut.load(ordering: .relaxed))),
                ("deadline=\"crowded\"", Double(transport.slowClientsCutWhileCrowded.load(ordering: .relaxed)))])
        metric("thumbd_http_over_limit_connections_total", "counter",
               "Connections accepted beyond a listener's connection limit, and of their requests those refused 503 at once (probes are answered).",
               [("outcome=\"accepted\"", Double(transport.acceptedOverLimit.load(ordering: .relaxed))),
                ("outcome=\"refused\"", Double(transport.refusedOverLimit.load(ordering: .relaxed)))])
        metric("thumbd_http_ambiguous_framing_total", "counter",
               "Requests refused 400 and closed for Content-Length given twice or with Transfer-Encoding (request smuggling through a proxy).",
               [("", Double(transport.ambiguousFramingRefused.load(ordering: .relaxed)))])
        metric("thumbd_http_connections", "gauge", "Open HTTP connections, every listener.",
               [("", Double(transport.openConnections.load(ordering: .relaxed)))])
        if let queue = queueCounters.withLock({ $0 })?.snapshot {
            for (name, type, help, samples) in StreamMetrics.families(queue) { metric(name, type, help, samples) }
        }
        metric("thumbd_cache_hits_total", "counter", "Thumbnails answered from a cache.",
               [("level=\"memory\"", Double(metrics.memoryHits)), ("level=\"disk\"", Double(metrics.diskHits))])
        metric("thumbd_cache_misses_total", "counter", "Requests that needed a render.", [("", Double(metrics.misses))])
        metric("thumbd_negative_cache_hits_total", "counter", "Requests refused from the failed-source record.", [("", Double(metrics.negativeHits))])
        var cumulative = 0
        var buckets: [(String, Int)] = []
        for (index, bound) in PipelineMetrics.renderBucketBounds.enumerated() {
            cumulative += metrics.renderSecondsBuckets[index]
            buckets.append(("le=\"\(bound)\"", cumulative))
        }
        buckets.append(("le=\"+Inf\"", metrics.renders))
        lines.append("# HELP thumbd_render_seconds Wall time of each render.")
        lines.append("# TYPE thumbd_render_seconds histogram")
        for (labels, value) in buckets { lines.append("thumbd_render_seconds_bucket{\(labels)} \(value)") }
        lines.append("thumbd_render_seconds_sum \(metrics.renderSecondsSum)")
        lines.append("thumbd_render_seconds_count \(metrics.renders)")
        metric("thumbd_queue_depth", "gauge", "Jobs waiting for a worker, by priority.",
               Priority.allCases.map { ("priority=\"\($0)\"", Double(metrics.queuedJobs[$0] ?? 0)) })
        metric("thumbd_running_renders", "gauge", "Renders in progress.", [("", Double(metrics.runningJobs))])
        metric("thumbd_superseded_total", "counter", "Requests superseded by a newer one on their slot.", [("", Double(metrics.superseded))])
        metric("thumbd_cancelled_total", "counter", "Requests cancelled by a slot release.", [("", Double(metrics.cancelled))])
        metric("thumbd_coalesced_total", "counter", "Requests that joined identical work already queued or running.", [("", Double(metrics.coalesced))])
        metric("thumbd_overloaded_total", "counter", "Requests refused because the queue was full.", [("", Double(metrics.overloaded))])
        // The codes a file can cause are there from the start, at 0: a series that appears with
        // its first failure hides that failure from rate() and increase().
        var failures = Dictionary(uniqueKeysWithValues: Self.seededFailureCodes.map { ($0, 0) })
        failures.merge(metrics.failuresByCode) { $1 }
        metric("thumbd_render_failures_total", "counter", "Renders that failed, by the failure's error code (undecodable, tooLarge, renderCrashed, …).",
               failures.sorted { $0.key < $1.key }.map { ("code=\"\($0.key)\"", Double($0.value)) })
        // Every format of the table from the start, at 0 (as the failure codes above).
        metric("thumbd_decodes_total", "counter", "Decodes of a source (one per group of requests), by the format its bytes are.",
               SourceFormat.table.map { ("format=\"\($0.format.rawValue)\"", Double(metrics.decodesBySourceFormat[$0.format] ?? 0)) })
        metric("thumbd_render_cpu_seconds_total", "counter", "Thread CPU spent rendering.", [("", metrics.renderCPUSeconds)])
        metric("thumbd_wasted_render_cpu_seconds_total", "counter", "Thread CPU spent on renders nobody waited for any more.", [("", metrics.wastedCPUSeconds)])
        metric("thumbd_watcher_events_total", "counter", "Folder watcher events handled.", [("", Double(metrics.watcherEvents))])
        metric("thumbd_cache_bytes", "gauge", "Bytes of thumbnails held.",
               [("level=\"memory\"", Double(cache.memory.bytes)), ("level=\"disk\"", Double(cache.disk.bytes))])
        metric("thumbd_cache_entries", "gauge", "Thumbnails held.",
               [("level=\"memory\"", Double(cache.memory.entries)), ("level=\"disk\"", Double(cache.disk.entries))])
        metric("thumbd_worker_spawns_total", "counter", "Render worker processes started.", [("", Double(metrics.workers?.spawns ?? 0))])
        metric("thumbd_worker_restarts_total", "counter", "Render workers that ended and were replaced, by reason.",
               WorkerRestartReason.allCases.map { ("reason=\"\($0.rawValue)\"", Double(metrics.workers?.count($0) ?? 0)) })
        metric("thumbd_slots", "gauge", "Slots remembered.", [("", Double(metrics.liveSlots))])
        metric("thumbd_slots_forgotten_total", "counter", "Slots forgotten: expired after slotIdleSeconds, or trimmed at maxSlots/maxSlotTableBytes.",
               [("reason=\"expired\"", Double(metrics.expiredSlots)), ("reason=\"trimmed\"", Double(metrics.trimmedSlots))])
        metric("thumbd_slot_tokens_remembered", "gauge", "Tokens of trimmed slots kept until their idle time is up.",
               [("", Double(metrics.rememberedSlotTokens))])
        // The pre-render backlog and the start-up reconciles.
        let backlog = metrics.backlog
        metric("thumbd_backlog_assets", "gauge", "Assets waiting in the pre-render backlog (in the cache index), those being pre-rendered included.",
               [("", Double(backlog.rows))])
        metric("thumbd_backlog_in_flight_assets", "gauge", "Backlog assets whose pre-renders are queued or running now.",
               [("", Double(backlog.assetsInFlight))])
        metric("thumbd_backlog_enqueued_total", "counter", "Assets added to the pre-render backlog.", [("", Double(backlog.enqueued))])
        metric("thumbd_backlog_drained_total", "counter", "Backlog assets done: pre-rendered, or found cached, failed for good or gone.",
               [("", Double(backlog.drained))])
        metric("thumbd_backlog_retried_total", "counter", "Backlog assets sent to the back after a transient failure.",
               [("", Double(backlog.retried))])
        metric("thumbd_backlog_dropped_total", "counter", "Assets not pre-rendered from the backlog, by reason (logged).",
               [("reason=\"gave_up\"", Double(backlog.gaveUp)), ("reason=\"full\"", Double(backlog.refused))])
        let startup = metrics.startup
        metric("thumbd_reconcile_pending", "gauge", "Start-up reconciles not done yet (1) or done (0): the cache's files, the asset folder.",
               [("part=\"cache\"", startup.cacheReconciled ? 0 : 1), ("part=\"assets\"", startup.assetsReconciled ? 0 : 1)])
        metric("thumbd_reconcile_checked", "gauge", "What the start-up reconciles have looked at: cache index entries, assets.",
               [("part=\"cache\"", Double(startup.cacheFiles.rowsChecked)), ("part=\"assets\"", Double(startup.assetsChecked))])
        metric("thumbd_watched_folders", "gauge", "Folders the folder watcher has an inotify watch on.", [("", Double(metrics.watchedFolders))])
        metric("thumbd_unwatched_folders", "gauge",
               "Folders left without a watch by the kernel's limit (fs.inotify.max_user_watches), rescanned periodically.",
               [("", Double(metrics.unwatchedFolders))])
        metric("thumbd_watch_failures_total", "counter", "Folder watches the kernel's limit refused, retries included.",
               [("", Double(metrics.watchFailures))])
        metric("thumbd_missed_folder_rescans_total", "counter", "Periodic rescans of the folders without a watch.",
               [("", Double(metrics.missedFolderRescans))])
        metric("thumbd_watcher_queue_overflows_total", "counter",
               "Overflows of the folder watcher's inotify queue: events dropped, the asset folder rescanned.",
               [("", Double(metrics.watcherQueueOverflows))])
        metric("thumbd_vouched_hits_total", "counter", "Memory hits on a version the folder watcher vouches for (no syscall).",
               [("", Double(metrics.vouchedHits))])
        metric("thumbd_asset_resolves_total", "counter", "Requests that looked at their asset file (open, openat2, fstat).",
               [("", Double(metrics.assetResolves))])
        metric("thumbd_placeholders_computed_total", "counter", "Placeholders computed by decodes and stored in the index.",
               [("", Double(metrics.placeholdersComputed))])
        metric("thumbd_placeholder_lookups_total", "counter", "Assets asked of /v1/placeholders, by what they were answered.",
               [("result=\"ready\"", Double(metrics.placeholderHits)), ("result=\"pending\"", Double(metrics.placeholderPending))])
        metric("thumbd_vouched_assets", "gauge", "Assets whose version the folder watcher vouches for.", [("", Double(metrics.vouchedAssets))])
        metric("thumbd_http_responses_built_total", "counter",
               "libmicrohttpd responses built: prepared once per cached thumbnail (and Vary form), or for one request.",
               [("how=\"prepared\"", Double(ResponseCounters.prepared.load(ordering: .relaxed))),
                ("how=\"per_request\"", Double(ResponseCounters.perRequest.load(ordering: .relaxed)))])
        metric("thumbd_http_prepared_sends_total", "counter", "Answers sent with a prepared response (no copy, no formatting).",
               [("", Double(ResponseCounters.preparedSends.load(ordering: .relaxed)))])
        metric("thumbd_request_parse_not_remembered_total", "counter",
               "Kinds and format choices worked out but not remembered: the memo was full.",
               [("", Double(parsing.withLock { $0 }.resultsNotKept))])
        return lines.joined(separator: "\n") + "\n"
    }
}
