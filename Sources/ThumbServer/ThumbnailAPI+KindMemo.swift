import Synchronization
import ThumbImaging

/// The catalog and format policy one request is parsed against, with what parsing a kind name
/// and negotiating its format came to for earlier requests: the same few kinds and `Accept`
/// headers come back on every hit, and resolving a kind (its text, its scales against the bounds)
/// and reading an `Accept` list cost more than the rest of a hit. A config reload makes a new
/// one, so nothing remembered outlives the catalog it was worked out from.
final class ParsingContext: Sendable {
    let catalog: SlotCatalog
    let formats: OutputFormatPolicy
    private let memo = Mutex(Memo())

    /// What is remembered, at most: past the caps, requests are worked out each time (counted).
    static let maxSelections = 1024
    static let maxChoices = 256
    /// `Accept` values longer than this are not remembered (nor worth it: a real one is shorter).
    static let maxRememberedAcceptBytes = 1024

    struct SelectionKey: Hashable {
        var text: String
        var scale: Int?
    }

    /// What `OutputFormatPolicy.formats(for:)` reads of a kind: its name and whether it is pre-rendered.
    struct ChoiceKey: Hashable {
        var kind: String
        var pregenerate: Bool
        var asked: EncoderSettings.Format?
        var accept: String?
        /// The scale asked is one the kind declares (and so pre-renders).
        var declaredScale: Bool
    }

    struct Memo {
        var selections: [SelectionKey: SlotSelection] = [:]
        var choices: [ChoiceKey: (format: EncoderSettings.Format, variesWithAccept: Bool)] = [:]
        /// Results not kept because a table was full.
        var notKept = 0

        /// Counts a result not kept; the first one is logged (later ones only counted).
        mutating func full(_ table: String, _ cap: Int) {
            if notKept == 0 {
                Log.notice("request parsing remembers at most \(cap) \(table): later ones are worked out at each request "
                           + "(thumbd_request_parse_not_remembered_total)")
            }
            notKept += 1
        }
    }

    init(catalog: SlotCatalog, formats: OutputFormatPolicy) {
        self.catalog = catalog
        self.formats = formats
    }

    /// `catalog.resolve(text, scale:)`, remembered when it succeeds.
    func selection(_ text: String, scale: DisplayScale?) throws(SlotSpecError) -> SlotSelection {
        let key = SelectionKey(text: text, scale: scale?.value)
        if let known = memo.withLock({ $0.selections[key] }) { return known }
        let selection = try catalog.resolve(text, scale: scale)
        memo.withLock { memo in
            if memo.selections.count < Self.maxSelections { memo.selections[key] = selection } else { memo.full("kinds", Self.maxSelections) }
        }
        return selection
    }

    /// The kind's format for `asked` and `accept` (`OutputFormats.choose`) at `scale`, remembered
    /// when it succeeds. AVIF only at a scale the kind declares: pre-rendering writes those, and an
    /// AVIF encode is too slow for a request's path (a negotiated AVIF falls back to the next
    /// choice, an asked one is refused).
    func choice(for kind: SlotKind, scale: Int, asked: EncoderSettings.Format?,
                accept: String?) throws(OutputFormats.Refusal) -> (format: EncoderSettings.Format, variesWithAccept: Bool) {
        let remembered = (accept?.utf8.count ?? 0) <= Self.maxRememberedAcceptBytes
        let declaredScale = kind.scales.contains(scale)
        let key = ChoiceKey(kind: kind.name, pregenerate: kind.pregenerate, asked: asked, accept: accept, declaredScale: declaredScale)
        if remembered, let known = memo.withLock({ $0.choices[key] }) { return known }
        var kindFormats = formats.formats(for: kind)
        if !declaredScale, kindFormats.allowed.contains(.avif) {
            if asked == .avif {
                let scales = kind.scales.map { "\($0)x" }.joined(separator: ", ")
                throw OutputFormats.Refusal(reason: "this kind is written as avif only at its pre-rendered scales (\(scales)), not at \(scale)x: "
                                            + "an AVIF encode is too slow for a request's path")
            }
            kindFormats.allowed.remove(.avif)
            if kindFormats.preferred == .avif { kindFormats.preferred = kindFormats.allowed.contains(.webp) ? .webp : .auto }
        }
        let chosen = try kindFormats.choose(asked: asked, accept: accept)
        if remembered {
            memo.withLock { memo in
                if memo.choices.count < Self.maxChoices { memo.choices[key] = chosen } else { memo.full("format choices", Self.maxChoices) }
            }
        }
        return chosen
    }

    /// Results worked out but not remembered because a table was full (for `/metrics`).
    var resultsNotKept: Int { memo.withLock { $0.notKept } }
}
