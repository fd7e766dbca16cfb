package import ThumbImaging

/// How soon a request's thumbnail is wanted. Workers take visible before prefetch before batch.
package enum Priority: Int, Comparable, Sendable, CaseIterable {
    case batch = 0, prefetch = 1, visible = 2

    package static func < (lhs: Priority, rhs: Priority) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// One reusable cell of one client of one principal: at most one live request at a time.
/// The owner (the caller the access model identified: a uid, a token's name, anonymous) is part
/// of the key, so that one caller can neither pin nor release another's cells.
package struct SlotID: Hashable, Sendable, CustomStringConvertible {
    /// The principal's key (`Principal.key`); empty for callers inside the process.
    package var owner: String
    package var client: String
    package var slot: String

    package init(owner: String = "", client: String, slot: String) {
        self.owner = owner
        self.client = client
        self.slot = slot
    }

    package var description: String { owner.isEmpty ? "\(client)/\(slot)" : "\(owner):\(client)/\(slot)" }
}

/// Each caller's share of the renderers. Asked under the pipeline's lock, for misses only (a
/// hit costs nothing), so an implementation takes only its own short lock and never calls back
/// into the pipeline.
package protocol RenderAdmission: Sendable {
    /// A miss of `owner` is to wait for a render (one it starts or one it joins): nil admits it,
    /// and `leaveWait` follows once it is answered; a failure refuses it.
    func enterWait(owner: String) -> ThumbFailure?
    func leaveWait(owner: String)
    /// A miss that starts a render: nil admits it (and charges it to `owner`); a failure refuses it.
    func admitRender(owner: String) -> ThumbFailure?
    /// Renderers one caller may hold at once, of the pipeline's `workers` (`JobTable.maxRunningPerOwner`).
    func maxRunningRenders(workers: Int) -> Int
}

/// A request for one thumbnail.
package struct PipelineRequest: Sendable {
    /// Longest asset path any door accepts, bytes (Linux's PATH_MAX).
    package static let maxAssetPathBytes = 4096

    /// Path relative to the asset root.
    package var assetPath: String
    package var kind: SlotKind
    /// Display scale: output pixels = the kind's points × scale.
    package var scale: Int
    package var priority: Priority
    /// The cell asking, when the client reuses cells; nil for one-off requests.
    package var slot: SlotID?
    /// The client's own generation counter for `slot`; nil lets the pipeline issue one.
    package var token: UInt64?
    /// The output format; nil: the kind's preferred one (`PipelineConfiguration.preferredFormat`).
    package var format: EncoderSettings.Format?
    /// The client reads placeholders from its answers (a `wait=0` miss, JSON): a render this
    /// request waits on computes the version's placeholder whatever it costs, not only from a
    /// frame it decodes whole anyway (`PlaceholderDemand`).
    package var wantsPlaceholder = false
    /// The caller, for its share of renders (`RenderAdmission`); nil: not rationed (pre-renders,
    /// batch jobs, callers inside the process).
    package var owner: String?

    package init(assetPath: String, kind: SlotKind, scale: Int, priority: Priority = .visible,
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
package struct PipelineResponse: Sendable {
    /// The token the request ran under (issued by the pipeline when the client sent none).
    package var token: UInt64?
    package var result: Result<CachedThumbnail, ThumbFailure>
}
