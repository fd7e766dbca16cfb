import Foundation
import Synchronization
import ThumbAccess
import ThumbBatch
package import ThumbImaging
package import ThumbPipeline
import ThumbSystem

/// The HTTP API over a pipeline: routes, parameters, status codes. Pure request → response
/// logic; the transport is `HTTPServer`.
package final class ThumbnailAPI: Sendable {
    let pipeline: ThumbnailPipeline
    /// Kinds can be replaced by a config reload (SIGHUP) while requests run.
    let catalog: Mutex<SlotCatalog>
    /// The kinds' output formats, replaced with the catalog.
    let formats: Mutex<OutputFormatPolicy>
    let maxWaitMilliseconds: Int
    /// The catalog and formats requests are parsed against, with what parsing them came to so far.
    let parsing: Mutex<ParsingContext>
    let counters = Mutex(RequestCounters())
    /// `thumbnails` answered 200, the hits' count kept without the counters' lock (merged into
    /// `thumbd_http_requests_total`).
    let thumbnailsAnswered = Atomic<Int>(0)
    /// The `"queue"` consumer's counters, once it is started (nil without a queue).
    let queueCounters = Mutex<RedisQueueCounters?>(nil)
    /// A child of the pipeline's: once stopping (`beginShutdown`, the pipeline's shutdown or the
    /// daemon's stop), every request but the health checks is answered 503.
    let lifecycle: Lifecycle
    /// Who may do what; the default (no `access` section, no files) for a daemon without one.
    let access: AccessControl

    package convenience init(pipeline: ThumbnailPipeline, catalog: SlotCatalog, maxWaitMilliseconds: Int) {
        // Settings without files cannot fail to resolve.
        let access = try! AccessControl(settings: AccessSettings(), environment: [:])
        self.init(pipeline: pipeline, catalog: catalog, maxWaitMilliseconds: maxWaitMilliseconds, access: access)
    }

    package init(pipeline: ThumbnailPipeline, catalog: SlotCatalog, maxWaitMilliseconds: Int, access: AccessControl) {
        self.access = access
        self.pipeline = pipeline
        lifecycle = pipeline.lifecycle.child()
        self.catalog = Mutex(catalog)
        formats = Mutex(pipeline.configuration.outputFormats)
        parsing = Mutex(ParsingContext(catalog: catalog, formats: pipeline.configuration.outputFormats))
        self.maxWaitMilliseconds = maxWaitMilliseconds
    }

    package func replaceCatalog(_ newCatalog: SlotCatalog, formats newFormats: OutputFormatPolicy) {
        catalog.withLock { $0 = newCatalog }
        formats.withLock { $0 = newFormats }
        parsing.withLock { $0 = ParsingContext(catalog: newCatalog, formats: newFormats) }
    }

    /// From now on every request is answered 503.
    package func beginShutdown() { lifecycle.stop() }

    package func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let route = Self.route(of: request)
        let counted: @Sendable (HTTPResponse) -> Void = { [self] response in
            if response.status == 200 && route == "thumbnails" {
                thumbnailsAnswered.add(1, ordering: .relaxed)
            } else {
                counters.withLock { $0.count(route: route, status: response.status) }
            }
            respond(response.varyingWithOrigin)
        }
        if lifecycle.isStopping && route != "healthz" && route != "readyz" {
            counted(.failure(.shuttingDown, message: "the server is shutting down"))
            return
        }
        // Who asks, and what no browser may send, before the request is even parsed.
        let principal: Principal
        switch access.principal(of: request) {
        case .success(let found): principal = found
        case .failure(let refusal): return refuse(refusal, route: route, principal: "unauthenticated", respond: counted)
        }
        if let refusal = access.screen(request) { return refuse(refusal, route: route, principal: principal.key, respond: counted) }
        let cors = access.corsHeaders(for: request)
        let answer: @Sendable (HTTPResponse) -> Void
        if cors.isEmpty {
            answer = counted
        } else {
            answer = { response in
                var withCORS = response
                withCORS.headers += cors
                counted(withCORS)
            }
        }
        if request.method == "OPTIONS", let preflight = access.preflight(request, allowedMethods: Self.allowedMethods(route: route, path: request.path)) {
            return answer(preflight)
        }
        let parsed = APIRequest.parse(request, context: parsing.withLock { $0 }, maxWaitMilliseconds: maxWaitMilliseconds)
        if case .success(let call) = parsed, let refusal = access.authorize(call, principal: principal, caller: request.caller) {
            return refuse(refusal, route: route, principal: principal.key, respond: answer)
        }
        let owner = principal.key
        switch parsed {
        case .failure(let error):
            answer(error.response)
        case .success(.thumbnail(var call)):
            // Operators are trusted (batch renders, tools): not rationed. Slots are everyone's own.
            call.owner = principal.role == .operator ? nil : owner
            call.slot?.owner = owner
            thumbnail(call, respond: answer)
        case .success(.releaseSlot(var slot)):
            slot.owner = owner
            pipeline.release(slot)
            answer(HTTPResponse(status: 204))
        case .success(.prefetch(let call)):
            answer(prefetch(call))
        case .success(.cancelPrefetch(let id)):
            let withdrawn = pipeline.cancelGroup(id)
            answer(.json(200, ["id": id, "cancelled": withdrawn]))
        case .success(.placeholders(let call)):
            answer(placeholders(call))
        case .success(.kinds):
            answer(kinds())
        case .success(.focus(let call)):
            answer(focus(call))
        case .success(.health):
            answer(.json(lifecycle.isStopping ? 503 : 200,
                          ["status": lifecycle.isStopping ? "stopping" : "ok"]))
        case .success(.ready):
            answer(readiness())
        case .success(.metrics):
            answer(.text(200, metricsText(), contentType: "text/plain; version=0.0.4; charset=utf-8"))
        case .success(.openAPI):
            answer(.text(200, OpenAPIDocument.yaml, contentType: "application/yaml"))
        case .success(.cacheStatistics):
            answer(cacheStatistics())
        case .success(.purgeCache(let call)):
            answer(purgeCache(call))
        case .success(.listAssets(let call)):
            answer(assetList(call))
        case .success(.signatures(let call)):
            answer(signatures(call))
        case .success(.webFile(let file)):
            answer(file.response(ifNoneMatch: request.headers["if-none-match"]))
        }
    }

    /// Answers a refusal of the access model: counted by route and reason, logged at most once a
    /// minute per principal.
    func refuse(_ refusal: AccessRefusal, route: String, principal: String, respond: @Sendable (HTTPResponse) -> Void) {
        if access.refusals.record(route: route, reason: refusal.reason, principal: principal, now: HTTPConnectionTable.now()) {
            Log.notice("refused \(principal) on \(route): \(refusal.status) \(refusal.code): \(refusal.message) (logged once a minute per caller)")
        }
        respond(refusal.response)
    }

    /// A thumbnail request over its caller's share (the pipeline's 429): counted and logged like
    /// the access model's refusals.
    func noteShareRefusal(owner: String, reason: String) {
        if access.refusals.record(route: "thumbnails", reason: "share", principal: owner, now: HTTPConnectionTable.now()) {
            Log.notice("refused \(owner) on thumbnails: 429 tooManyRequests: over this caller's share: \(reason) (logged once a minute per caller)")
        }
    }

    /// The route label for metrics (bounded cardinality).
    static func route(of request: HTTPRequest) -> String {
        let path = request.path
        if path.hasPrefix("/v1/thumbnails/") { return "thumbnails" }
        if path.hasPrefix("/v1/slots/") { return "slots" }
        if path == "/v1/prefetch" || path.hasPrefix("/v1/prefetch/") { return "prefetch" }
        if path == "/v1/kinds" { return "kinds" }
        if path == "/v1/placeholders" { return "placeholders" }
        if path == "/v1/assets" { return "assetList" }
        if path.hasPrefix(FocusCall.prefix) { return "assets" }
        if path == "/v1/signatures" { return "signatures" }
        if path == WebFile.cellsPath { return "cells" }
        if path == WebFile.consolePrefix || path.hasPrefix(WebFile.consolePrefix + "/") { return "console" }
        if path == "/healthz" { return "healthz" }
        if path == "/readyz" { return "readyz" }
        if path == "/metrics" { return "metrics" }
        if path == OpenAPIDocument.path { return "openapi" }
        if path == "/v1/cache" || path == "/v1/cache/stats" { return "cache" }
        return "other"
    }

    /// What each route's resource takes (HEAD wherever GET is): a method outside it is 405 with
    /// this list in `Allow`, checked before the route's own shape.
    static func allowedMethods(route: String, path: String) -> [String] {
        switch route {
        case "thumbnails", "kinds", "healthz", "readyz", "metrics", "openapi", "assetList", "cells", "console": ["GET", "HEAD"]
        case "signatures": ["POST"]
        case "slots": ["DELETE"]
        case "prefetch": path == "/v1/prefetch" ? ["POST"] : ["DELETE"]
        case "placeholders": ["GET", "HEAD", "POST"]
        case "assets": ["GET", "HEAD", "PUT", "DELETE"]
        case "cache": path == "/v1/cache" ? ["DELETE"] : ["GET", "HEAD"]
        default: []
        }
    }

    /// `/readyz`: 503 with what is pending (and how far it is) until the cache's files and the
    /// asset folder are reconciled with the index, then 200. `/healthz` answers 200 from the
    /// moment the socket serves (hits are answered during the reconciles).
    func readiness() -> HTTPResponse {
        if lifecycle.isStopping { return .json(503, ["status": "stopping"]) }
        let progress = pipeline.startupProgress
        if progress.isReady { return .json(200, ["status": "ready"]) }
        let files = progress.cacheFiles
        return .json(503, ["status": "starting", "pending": progress.pending,
                           "cache": ["shardsDone": files.shardsDone, "shards": CacheIndex.FileReconcileProgress.shardCount,
                                     "rowsChecked": files.rowsChecked, "rows": files.rowsAtStart],
                           "assets": ["checked": progress.assetsChecked]],
                     headers: [("Retry-After", "1")])
    }

    func kinds() -> HTTPResponse {
        let catalog = catalog.withLock { $0 }
        let policy = formats.withLock { $0 }
        let list: [[String: Any]] = catalog.kinds.keys.sorted().compactMap { name in
            guard let kind = catalog.kinds[name] else { return nil }
            let formats = policy.formats(for: kind)
            let mask: String = switch kind.mask {
            case .none: "none"
            case .circle: "circle"
            case .cornerRadius(let radius): "radius \(radius)"
            }
            return ["name": name, "widthPoints": kind.widthPoints, "heightPoints": kind.heightPoints,
                    "mode": kind.mode.rawValue, "crop": kind.effectiveCrop.rawValue, "mask": mask, "upscale": kind.upscale, "pregenerate": kind.pregenerate,
                    "animation": kind.animation.rawValue, "format": formats.preferred.rawValue, "formats": formats.allowed.map(\.rawValue).sorted(),
                    "pixels": kind.scales.map { scale -> [String: Any] in
                        let size = kind.pixelSize(scale: scale)
                        return ["scale": scale, "width": size.width, "height": size.height]
                    }]
        }
        return .json(200, ["kinds": list])
    }

    /// Queues a parsed prefetch at prefetch priority; what the queue refuses (full, or the share
    /// kept for visible requests taken) is left out of `queued`.
    func prefetch(_ call: PrefetchCall) -> HTTPResponse {
        let id = UUID().uuidString.lowercased()
        var queued = 0
        let context = parsing.withLock { $0 }
        // Chosen per (kind, scale) as a request would be (AVIF only at declared scales), once.
        let chosen = call.work.map { work in
            work.scales.map { scale in (scale, (try? context.choice(for: work.kind, scale: scale, asked: nil, accept: call.accept))?.format) }
        }
        for asset in call.assets {
            for (work, formats) in zip(call.work, chosen) {
                for (scale, format) in formats where pipeline.prerender(assetPath: asset, kind: work.kind, scale: scale, priority: .prefetch,
                                                                       group: id, format: format) {
                    queued += 1
                }
            }
        }
        return .json(202, ["id": id, "queued": queued])
    }
}

/// Requests by route and status, for /metrics.
struct RequestCounters {
    var counts: [String: [Int: Int]] = [:]

    mutating func count(route: String, status: Int) {
        counts[route, default: [:]][status, default: 0] += 1
    }
}
