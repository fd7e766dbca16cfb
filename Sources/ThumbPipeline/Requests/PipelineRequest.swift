import ThumbImaging

/// How soon a request's thumbnail is wanted. Workers take visible before prefetch before batch.
public enum Priority: Int, Comparable, Sendable, CaseIterable {
    case batch = 0, prefetch = 1, visible = 2

    public static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One reusable cell of one client: at most one live request at a time.
public struct SlotID: Hashable, Sendable, CustomStringConvertible {
    public var client: String
    public var slot: String

    public init(client: String, slot: String) {
        self.client = client
        self.slot = slot
    }

    public var description: String { "\(client)/\(slot)" }
}

/// A request for one thumbnail.
public struct PipelineRequest: Sendable {
    /// Longest asset path any door accepts, bytes (Linux's PATH_MAX).
    public static let maxAssetPathBytes = 4096

    /// Path relative to the asset root.
    public var assetPath: String
    public var kind: SlotKind
    /// Display scale: output pixels = the kind's points × scale.
    public var scale: Int
    public var priority: Priority
    /// The cell asking, when the client reuses cells; nil for one-off requests.
    public var slot: SlotID?
    /// The client's own generation counter for `slot`; nil lets the pipeline issue one.
    public var token: UInt64?

    public init(assetPath: String, kind: SlotKind, scale: Int, priority: Priority = .visible,
                slot: SlotID? = nil, token: UInt64? = nil) {
        self.assetPath = assetPath
        self.kind = kind
        self.scale = scale
        self.priority = priority
        self.slot = slot
        self.token = token
    }
}

/// Why a request got no thumbnail.
public enum PipelineError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A newer request took the slot (or the token was older than the slot's): never answered with bytes.
    case superseded(currentToken: UInt64)
    /// The slot was released, or the pipeline cancelled the work.
    case cancelled
    case notFound(path: String)
    /// Outside the asset root, or not a regular file.
    case forbidden(path: String, reason: String)
    /// The daemon may not read the asset (EACCES, EPERM): the host's permissions, not the request.
    case permissionDenied(path: String, reason: String)
    /// The asset was being written while it was read, twice in a row: ask again shortly.
    case assetChanging(path: String, reason: String)
    case undecodable(reason: String)
    case tooLarge(reason: String)
    /// The queue is full: retry later.
    case overloaded
    case shuttingDown

    public var description: String {
        switch self {
        case .superseded(let token): "superseded by token \(token)"
        case .cancelled: "cancelled"
        case .notFound(let path): "\(path): no such asset"
        case .forbidden(let path, let reason): "\(path): \(reason)"
        case .permissionDenied(let path, let reason): "\(path): permission denied: \(reason)"
        case .assetChanging(_, let reason): "\(reason), twice: try again once it is written"
        case .undecodable(let reason): "not a decodable image: \(reason)"
        case .tooLarge(let reason): "over a limit: \(reason)"
        case .overloaded: "queue full"
        case .shuttingDown: "shutting down"
        }
    }
}

/// The one answer every submitted request gets.
public struct PipelineResponse: Sendable {
    /// The token the request ran under (issued by the pipeline when the client sent none).
    public var token: UInt64?
    public var result: Result<CachedThumbnail, PipelineError>
}
