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
    /// The output format; nil: the kind's preferred one (`PipelineConfiguration.preferredFormat`).
    public var format: EncoderSettings.Format?
    /// The client reads placeholders from its answers (a `wait=0` miss, JSON): a render this
    /// request waits on computes the version's placeholder whatever it costs, not only from a
    /// frame it decodes whole anyway (`PlaceholderDemand`).
    public var wantsPlaceholder = false

    public init(assetPath: String, kind: SlotKind, scale: Int, priority: Priority = .visible,
                slot: SlotID? = nil, token: UInt64? = nil, format: EncoderSettings.Format? = nil) {
        self.format = format
        self.assetPath = assetPath
        self.kind = kind
        self.scale = scale
        self.priority = priority
        self.slot = slot
        self.token = token
    }
}

/// The one answer every submitted request gets.
public struct PipelineResponse: Sendable {
    /// The token the request ran under (issued by the pipeline when the client sent none).
    public var token: UInt64?
    public var result: Result<CachedThumbnail, ThumbFailure>
}
