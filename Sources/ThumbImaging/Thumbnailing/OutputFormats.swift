import Foundation

/// Which formats a kind's thumbnails are written in: the one a request gets when it names none
/// (`preferred`), and the ones a request may pick with `format=` or `Accept` (`allowed`).
package struct OutputFormats: Sendable, Equatable {
    /// `auto` is today's choice: PNG for an image with transparency, JPEG otherwise.
    package var preferred: EncoderSettings.Format = .auto
    /// `auto` needs both JPEG and PNG here.
    package var allowed: Set<ImageFormat> = [.jpeg, .png, .webp]

    package init(preferred: EncoderSettings.Format = .auto, allowed: Set<ImageFormat> = [.jpeg, .png, .webp]) {
        self.preferred = preferred
        self.allowed = allowed
    }

    /// The formats `Accept` may pick, best first: smaller files for the same quality. AVIF first
    /// where a kind allows it (only pregenerate kinds may: see `ThumbConfig.parseFormats`).
    static let negotiable: [ImageFormat] = [.avif, .webp]

    /// Why a request's `format=` cannot be served.
    package struct Refusal: Error, Equatable, Sendable {
        package var reason: String
        package init(reason: String) { self.reason = reason }
    }

    /// The encoder format for a request: `asked` (its `format=`) when given and allowed (`auto` is
    /// the kind's preferred); else the best negotiable format `accept` names and the kind allows;
    /// else `preferred`. `variesWithAccept`: the answer would differ for another `Accept`.
    package func choose(asked: EncoderSettings.Format?, accept: String?) throws(Refusal) -> (format: EncoderSettings.Format, variesWithAccept: Bool) {
        if let asked {
            switch asked {
            case .auto: return (preferred, false)
            case .jpeg, .png, .webp, .avif:
                guard let format = asked.imageFormat, allowed.contains(format) else {
                    let names = allowed.map(\.rawValue).sorted().joined(separator: ", ")
                    throw Refusal(reason: "this kind is not written as \(asked.rawValue) (it allows \(names))")
                }
                return (asked, false)
            }
        }
        let candidates = Self.negotiable.filter { allowed.contains($0) && preferred.imageFormat != $0 }
        guard !candidates.isEmpty else { return (preferred, false) }
        let accepted = AcceptHeader(accept ?? "")
        if let best = candidates.first(where: { accepted.accepts($0.mediaType) }), let format = EncoderSettings.Format(rawValue: best.rawValue) {
            return (format, true)
        }
        return (preferred, true)
    }
}

extension EncoderSettings.Format {
    /// The one format this choice writes; nil for `auto`, which depends on the pixels.
    package var imageFormat: ImageFormat? {
        switch self {
        case .auto: nil
        case .jpeg: .jpeg
        case .png: .png
        case .webp: .webp
        case .avif: .avif
        }
    }
}

/// The media types an `Accept` header names with a quality above zero. Only exact types count:
/// `*/*` and `image/*` promise nothing about WebP or AVIF (old browsers and HTTP libraries send
/// them), so they never switch a client away from JPEG and PNG.
struct AcceptHeader {
    private var accepted: Set<String> = []

    /// Reads at most 64 ranges of at most 128 bytes each: the server bounds the header already,
    /// and a longer list names nothing a thumbnail needs.
    init(_ header: String) {
        for range in header.split(separator: ",", maxSplits: 64).prefix(64) where range.utf8.count <= 128 {
            let parts = range.split(separator: ";")
            guard let type = parts.first?.trimmingCharacters(in: .whitespaces).lowercased(), !type.isEmpty else { continue }
            var quality = 1.0
            for parameter in parts.dropFirst() {
                let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
                if pair.count == 2, pair[0].lowercased() == "q" { quality = Double(pair[1]).map { $0.isFinite ? $0 : 0 } ?? 0 }
            }
            if quality > 0 { accepted.insert(type) } else { accepted.remove(type) }
        }
    }

    func accepts(_ mediaType: String) -> Bool { accepted.contains(mediaType) }
}

/// The output formats of every kind: the `encoding` section's `format` and `formats`, and a
/// kind's own `encoding` over them.
package struct OutputFormatPolicy: Sendable, Equatable {
    package var defaults = OutputFormats()
    package var byKind: [String: OutputFormats] = [:]

    package init() {}

    /// A kind's formats. AVIF encodes take far longer than JPEG (see the AVIF
    /// measurements of Benchmarks/README.md): it comes only to kinds that are pre-rendered, never on a request's path.
    package func formats(for kind: SlotKind) -> OutputFormats {
        if let own = byKind[kind.name] { return own }
        var formats = defaults
        if !kind.pregenerate {
            formats.allowed.remove(.avif)
            if formats.preferred == .avif {
                formats.preferred = .auto
                formats.allowed.formUnion([.jpeg, .png])
            }
        }
        return formats
    }
}
