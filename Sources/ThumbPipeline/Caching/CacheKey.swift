#if canImport(Glibc)
import Glibc
#endif
package import ThumbImaging
import ThumbSystem

/// Identifies one thumbnail: asset version, kind geometry, scale, encoder settings and the
/// pipeline version. A changed file or a changed kind gives a different key, so it can never
/// be answered with an old thumbnail.
package struct CacheKey: Hashable, Sendable, CustomStringConvertible {
    /// Bumped whenever rendering changes output for the same inputs.
    package static let pipelineVersion = 1

    /// The full text the key stands for (kept in the index, compared on lookup).
    package let descriptor: String
    /// 32 hex digits: the cache file's name and the ETag.
    package let digest: String
    package let assetPath: String
    /// The focus the thumbnail is cropped around: the asset's, for a kind whose crop follows it
    /// (`SlotKind.cropFollowsFocus`); nil for every other kind, whatever was passed.
    package let focus: FocusRegion?

    /// `focus`: the asset's focus (nil: none); only a kind whose crop follows it keeps it.
    package init(asset: AssetVersion, kind: SlotKind, scale: Int, encoder: EncoderSettings, appliesOrientation: Bool = true,
                focus: FocusRegion? = nil) {
        let kept = kind.cropFollowsFocus ? focus : nil
        let geometry = Self.shape(of: kind) + Self.cropPart(kind, focus: kept)
        var encoding = "\(encoder.format.rawValue)|q\(encoder.jpegQuality)|\(encoder.jpegProgressive ? "prog" : "base")|z\(encoder.pngCompressionLevel)"
        // Only the settings of the format written: keys of JPEG and PNG thumbnails stay what
        // they were before WebP and AVIF existed, so an upgrade keeps its cache.
        switch encoder.format {
        case .auto, .jpeg, .png: break
        case .webp: encoding += "|wq\(encoder.webpQuality)|\(encoder.webpMode.rawValue)"
        case .avif: encoding += "|aq\(encoder.avifQuality)|s\(encoder.avifSpeed)"
        }
        descriptor = "v\(Self.pipelineVersion)|\(asset)|\(geometry)|@\(scale)|\(encoding)|\(appliesOrientation ? "rot" : "norot")"
        digest = Self.digest(of: descriptor)
        assetPath = asset.path
        self.focus = kept
    }

    package var description: String { digest }

    /// Size, mode, mask and upscaling: a kind's thumbnails are keyed by what they look like, not
    /// by its name.
    static func shape(of kind: SlotKind) -> String {
        let mask = switch kind.mask {
        case .none: "none"
        case .circle: "circle"
        case .cornerRadius(let points): "radius\(points)"
        }
        // Nothing for a still kind, so keys from before animation stay what they were.
        let animation = kind.animation == .keep ? "|anim" : ""
        return "\(kind.widthPoints)x\(kind.heightPoints)|\(kind.mode.rawValue)|\(mask)|\(kind.upscale ? "up" : "noup")\(animation)"
    }

    /// What every descriptor of `kind`'s thumbnails holds after its asset's part, at any scale,
    /// in any encoding (for a focus kind, around any focus): how `DELETE /v1/cache?kind=` finds
    /// them. Thumbnails of another kind of the same shape and crop match as well, whatever their
    /// encoding (those of the same encoding are the very same files).
    package static func kindMarker(_ kind: SlotKind) -> String {
        switch kind.effectiveCrop {
        case .centre, .attention: "|" + shape(of: kind) + cropPart(kind, focus: nil) + "|@"
        case .focus: "|" + shape(of: kind) + focusCropMarker
        }
    }

    /// Marks the descriptors of thumbnails cropped around a focus (or its absence): setting or
    /// removing an asset's focus drops its rows whose descriptor has it.
    static let focusCropMarker = "|crop=focus:"

    /// Nothing for a centred crop (and every `fit`), so that keys from before crop modes stay
    /// what they were and an upgrade keeps its cache; the mode otherwise, and for `focus` the
    /// focus itself or "none" (cropped as `attention`, but keyed apart: a focus set later must
    /// not find it).
    static func cropPart(_ kind: SlotKind, focus: FocusRegion?) -> String {
        switch kind.effectiveCrop {
        case .centre: ""
        case .attention: "|crop=attention"
        case .focus: focusCropMarker + (focus?.description ?? "none")
        }
    }

    /// Two independent 64-bit FNV-1a lanes, each finished with a SplitMix64 mix: a name for a
    /// file, not a security boundary (the index keeps and compares the full descriptor).
    static func digest(of text: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in text.utf8 {
            first = (first ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
            second = (second ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 ^ (second >> 29)
        }
        func mix(_ value: UInt64) -> UInt64 {
            var z = value &+ 0x9E37_79B9_7F4A_7C15
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        func hex(_ value: UInt64) -> String {
            let text = String(value, radix: 16)
            return String(repeating: "0", count: 16 - text.count) + text
        }
        return hex(mix(first)) + hex(mix(second))
    }
}

/// A thumbnail as the cache holds it: encoded bytes and where they live on disk.
package struct CachedThumbnail: Sendable, Equatable {
    /// What a server built to answer with this thumbnail, shared by every copy (see
    /// `ServingAttachment`); not part of the value (`==` ignores it).
    package let serving: ServingAttachment
    package var key: CacheKey
    package var bytes: [UInt8]
    /// Where the cache file is, or would be: other local services may read it directly — but
    /// only through `storedFilePath`, which says whether it was written and is still there.
    package var filePath: String
    /// Whether the disk cache wrote the file (false: rendered while the cache could not write;
    /// served from memory only).
    package var isStored: Bool
    package var format: ImageFormat
    /// Output size, pixels.
    package var width: Int
    package var height: Int
    /// The part of the displayed source shown, source pixels; nil when not known (an index row
    /// from before crops were recorded).
    package var crop: CropRectangle?

    /// A strong ETag: the key's digest, quoted.
    package var etag: String { "\"\(key.digest)\"" }

    package init(key: CacheKey, bytes: [UInt8], filePath: String, format: ImageFormat, width: Int, height: Int,
                isStored: Bool = true, crop: CropRectangle? = nil) {
        self.key = key
        self.bytes = bytes
        self.filePath = filePath
        self.isStored = isStored
        self.format = format
        self.width = width
        self.height = height
        self.crop = crop
        serving = ServingAttachment()
    }

    package static func == (lhs: CachedThumbnail, rhs: CachedThumbnail) -> Bool {
        lhs.key == rhs.key && lhs.bytes == rhs.bytes && lhs.filePath == rhs.filePath && lhs.isStored == rhs.isStored
            && lhs.format == rhs.format && lhs.width == rhs.width && lhs.height == rhs.height && lhs.crop == rhs.crop
    }
}

extension CachedThumbnail {
    /// The cache file's path if it was written and is there now, whole (a regular file of
    /// exactly these bytes' size); nil otherwise. A client is never handed a path to nothing:
    /// the folder may have been removed, or the disk full, since.
    package var storedFilePath: String? {
        guard isStored else { return nil }
        var status = stat()
        guard (try? systemCall("stat \(filePath)", { lstat(filePath, &status) })) != nil,
              (status.st_mode & S_IFMT) == S_IFREG, Int(status.st_size) == bytes.count else { return nil }
        return filePath
    }
}
