import Foundation
import Synchronization
import ThumbImaging
import ThumbPipeline

/// The HTTP API over a pipeline: routes, parameters, status codes. Pure request → response
/// logic; the transport is `HTTPServer`.
public final class ThumbnailAPI: Sendable {
    let pipeline: ThumbnailPipeline
    /// Kinds can be replaced by a config reload (SIGHUP) while requests run.
    let catalog: Mutex<SlotCatalog>
    let maxWaitMilliseconds: Int
    let counters = Mutex(RequestCounters())
    let shuttingDown = Atomic<Bool>(false)

    public init(pipeline: ThumbnailPipeline, catalog: SlotCatalog, maxWaitMilliseconds: Int) {
        self.pipeline = pipeline
        self.catalog = Mutex(catalog)
        self.maxWaitMilliseconds = maxWaitMilliseconds
    }

    public func replaceCatalog(_ newCatalog: SlotCatalog) {
        catalog.withLock { $0 = newCatalog }
    }

    /// From now on every request is answered 503.
    public func beginShutdown() { shuttingDown.store(true, ordering: .relaxed) }

    public func handle(_ request: HTTPRequest, respond: @escaping @Sendable (HTTPResponse) -> Void) {
        let route = Self.route(of: request)
        let counted: @Sendable (HTTPResponse) -> Void = { [self] response in
            counters.withLock { $0.count(route: route, status: response.status) }
            respond(response)
        }
        if shuttingDown.load(ordering: .relaxed) && route != "healthz" {
            counted(.error(503, "shuttingDown", "the server is shutting down", headers: [("Retry-After", "5")]))
            return
        }
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // HEAD is GET without a body (libmicrohttpd drops the body).
        switch (request.method == "HEAD" ? "GET" : request.method, route) {
        case ("GET", "thumbnails"):
            thumbnail(request, respond: counted)
        case ("DELETE", "slots"):
            guard segments.count == 5, !segments[3].isEmpty, !segments[4].isEmpty else {
                return counted(.error(400, "badRequest", "expected DELETE /v1/slots/{client}/{slot}"))
            }
            pipeline.release(SlotID(client: segments[3], slot: segments[4]))
            counted(HTTPResponse(status: 204))
        case ("POST", "prefetch"):
            counted(prefetch(request))
        case ("DELETE", "prefetch") where segments.count == 4:
            let withdrawn = pipeline.cancelGroup(segments[3])
            counted(.json(200, ["id": segments[3], "cancelled": withdrawn]))
        case ("GET", "kinds"):
            counted(kinds())
        case ("GET", "healthz"):
            counted(.json(shuttingDown.load(ordering: .relaxed) ? 503 : 200,
                          ["status": shuttingDown.load(ordering: .relaxed) ? "stopping" : "ok"]))
        case ("GET", "metrics"):
            counted(.text(200, metricsText(), contentType: "text/plain; version=0.0.4; charset=utf-8"))
        case (_, "other"):
            counted(.error(404, "notFound", "no route for \(request.path)"))
        default:
            counted(.error(405, "methodNotAllowed", "\(request.method) is not allowed on \(request.path)"))
        }
    }

    /// The route label for metrics (bounded cardinality).
    static func route(of request: HTTPRequest) -> String {
        let path = request.path
        if path.hasPrefix("/v1/thumbnails/") { return "thumbnails" }
        if path.hasPrefix("/v1/slots/") { return "slots" }
        if path == "/v1/prefetch" || path.hasPrefix("/v1/prefetch/") { return "prefetch" }
        if path == "/v1/kinds" { return "kinds" }
        if path == "/healthz" { return "healthz" }
        if path == "/metrics" { return "metrics" }
        return "other"
    }

    func kinds() -> HTTPResponse {
        let catalog = catalog.withLock { $0 }
        let list: [[String: Any]] = catalog.kinds.keys.sorted().compactMap { name in
            guard let kind = catalog.kinds[name] else { return nil }
            let mask: String = switch kind.mask {
            case .none: "none"
            case .circle: "circle"
            case .cornerRadius(let radius): "radius \(radius)"
            }
            return ["name": name, "widthPoints": kind.widthPoints, "heightPoints": kind.heightPoints,
                    "mode": kind.mode.rawValue, "mask": mask, "upscale": kind.upscale, "pregenerate": kind.pregenerate,
                    "pixels": kind.scales.map { scale -> [String: Any] in
                        let size = kind.pixelSize(scale: scale)
                        return ["scale": scale, "width": size.width, "height": size.height]
                    }]
        }
        return .json(200, ["kinds": list])
    }

    func prefetch(_ request: HTTPRequest) -> HTTPResponse {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
              let assets = object["assets"] as? [String], let kindNames = object["kinds"] as? [String], !assets.isEmpty, !kindNames.isEmpty else {
            return .error(400, "badRequest", #"body must be JSON {"assets": ["path", …], "kinds": ["kind", …], "scale": N?}"#)
        }
        guard assets.count * kindNames.count <= 10_000 else { return .error(413, "tooMany", "at most 10000 thumbnails per prefetch") }
        let scale = object["scale"] as? Int
        let catalog = catalog.withLock { $0 }
        var selections: [(SlotKind, [Int])] = []
        for name in kindNames {
            do {
                let selection = try catalog.resolve(name)
                selections.append((selection.kind, scale.map { [$0] } ?? selection.scales))
            } catch {
                return .error(400, "badKind", error.description)
            }
        }
        let id = UUID().uuidString.lowercased()
        var queued = 0
        for asset in assets {
            for (kind, scales) in selections {
                for scale in scales where pipeline.prerender(assetPath: asset, kind: kind, scale: scale, priority: .prefetch, group: id) {
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
