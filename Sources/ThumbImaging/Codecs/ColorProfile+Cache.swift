import Synchronization

extension ColorProfileTransform {
    /// The transform for `profile` and `layout`, built once and then shared.
    ///
    /// lcms builds a transform in one call that cannot be stopped: ~4 ms for a plain matrix/TRC
    /// RGB profile, tens of ms for a LUT-based one (CMYK, XYB, a 400 KB profile). With the
    /// decoders and encoders checking for cancellation every few hundred µs, that build was the
    /// longest stretch a cancelled render ran on. Photos carry a handful of distinct profiles
    /// (a camera's sRGB, Display P3, Adobe RGB), so a small cache skips nearly every build; a
    /// profile seen for the first time still costs its build.
    static func shared(profile: [UInt8], layout: Layout) -> ColorProfileTransform? {
        let key = TransformCache.Key(profile: profile, layout: layout)
        if let hit = TransformCache.lookUp(key) { return hit }
        // Built outside the lock: two workers may both build a new profile's transform; one is kept.
        guard let built = ColorProfileTransform(profile: profile, layout: layout) else { return nil }
        TransformCache.insert(built, for: key)
        return built
    }
}

/// The most recently used transforms, a bounded number of them (each holds lcms's tables, up to
/// a few hundred KB for a CMYK LUT), keyed by the profile's bytes.
enum TransformCache {
    struct Key: Hashable {
        var profile: [UInt8]
        var layout: ColorProfileTransform.Layout
    }

    static let capacity = 16
    /// Larger profiles are built each time rather than kept (an ICC profile in JPEG can be 16 MB).
    static let maxProfileBytes = 1 << 20

    private struct Entries {
        var transforms: [Key: ColorProfileTransform] = [:]
        var recency: [Key] = [] // least recently used first
    }

    private static let entries = Mutex(Entries())

    static func lookUp(_ key: Key) -> ColorProfileTransform? {
        entries.withLock { entries in
            guard let transform = entries.transforms[key] else { return nil }
            if let index = entries.recency.firstIndex(of: key) { entries.recency.remove(at: index) }
            entries.recency.append(key)
            return transform
        }
    }

    static func insert(_ transform: ColorProfileTransform, for key: Key) {
        guard key.profile.count <= maxProfileBytes else { return }
        entries.withLock { entries in
            if entries.transforms.updateValue(transform, forKey: key) != nil { return }
            entries.recency.append(key)
            while entries.recency.count > capacity {
                entries.transforms[entries.recency.removeFirst()] = nil
            }
        }
    }
}
