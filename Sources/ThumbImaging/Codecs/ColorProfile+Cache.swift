import ThumbSystem
import Synchronization

extension ColorProfileTransform {
    /// The transform for `profile` and `layout`, built once and then shared.
    ///
    /// lcms builds a transform in one call that cannot be stopped: ~4 ms for a plain matrix/TRC
    /// RGB profile, ~50 ms for a LUT-based one (a half-MB CMYK profile: the 17⁴-point table it
    /// precalculates). Photos carry a handful of distinct profiles (a camera's sRGB, Display P3,
    /// Adobe RGB), so a small cache skips nearly every build. A profile seen for the first time
    /// is built on a thread of its own while the caller keeps asking `isCancelled` (every
    /// `cancelPollMilliseconds`), so that a cancel is not held up by the build: the build goes on
    /// and is cached for the next render that needs it.
    /// As `shared(profile:layout:isCancelled:)`, built on this thread when new.
    static func shared(profile: [UInt8], layout: Layout) -> ColorProfileTransform? {
        let key = TransformCache.Key(profile: profile, layout: layout)
        return TransformCache.lookUp(key) ?? TransformCache.buildAndKeep(key)
    }

    /// As `shared(profile:layout:isCancelled:)`, nil for no profile.
    static func shared(_ profile: [UInt8]?, layout: Layout, isCancelled: CancellationCheck?) throws(ImagingError) -> ColorProfileTransform? {
        guard let profile else { return nil }
        return try shared(profile: profile, layout: layout, isCancelled: isCancelled)
    }

    static func shared(profile: [UInt8], layout: Layout,
                       isCancelled: CancellationCheck?) throws(ImagingError) -> ColorProfileTransform? {
        let key = TransformCache.Key(profile: profile, layout: layout)
        if let hit = TransformCache.lookUp(key) { return hit }
        guard let isCancelled, let build = TransformCache.startBuild(key) else {
            // Nobody to tell, or builds enough already under way: built here (as every build was).
            return TransformCache.buildAndKeep(key)
        }
        while true {
            if let built = build.wait(milliseconds: TransformCache.cancelPollMilliseconds) { return built }
            if isCancelled() { throw .cancelled }
        }
    }
}

/// The most recently used transforms, a bounded number of them (each holds lcms's tables, up to
/// a few hundred KB for a CMYK LUT), keyed by the profile's bytes; and the builds under way.
enum TransformCache {
    struct Key: Hashable {
        var profile: [UInt8]
        var layout: ColorProfileTransform.Layout

        /// The profile's bytes hashed as one buffer: the synthesized hash feeds a half-MB CMYK
        /// profile to the hasher a byte at a time, ~5 ms a look-up (a third of such a render).
        func hash(into hasher: inout Hasher) {
            profile.withUnsafeBytes { hasher.combine(bytes: $0) }
            hasher.combine(layout)
        }
    }

    static let capacity = 16
    /// Larger profiles are built each time rather than kept (an ICC profile in JPEG can be 16 MB).
    static let maxProfileBytes = 1 << 20
    /// Builds that may run on threads of their own at once: a stream of files with new profiles,
    /// each cancelled, must not pile up threads. Past it, the caller builds (uncancellable).
    static let maxBuildsUnderWay = 2
    static let cancelPollMilliseconds = 1

    private struct Entries {
        var transforms: [Key: ColorProfileTransform] = [:]
        var recency: [Key] = [] // least recently used first
        var building: [Key: Build] = [:]
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

    /// Whether a build of `key` is under way on a thread of its own.
    static func isBuilding(_ key: Key) -> Bool {
        entries.withLock { $0.building[key] != nil }
    }

    static func insert(_ transform: ColorProfileTransform, for key: Key) {
        entries.withLock { keep(transform, for: key, in: &$0) }
    }

    private static func keep(_ transform: ColorProfileTransform, for key: Key, in entries: inout Entries) {
        guard key.profile.count <= maxProfileBytes, entries.transforms.updateValue(transform, forKey: key) == nil else { return }
        entries.recency.append(key)
        while entries.recency.count > capacity {
            entries.transforms[entries.recency.removeFirst()] = nil
        }
    }

    /// Builds on the calling thread and keeps the result.
    static func buildAndKeep(_ key: Key) -> ColorProfileTransform? {
        // Two threads may both build a new profile's transform this way; one is kept.
        guard let built = ColorProfileTransform(profile: key.profile, layout: key.layout) else { return nil }
        insert(built, for: key)
        return built
    }

    /// The build of `key` under way (joined) or a new one on a thread of its own; nil when
    /// `maxBuildsUnderWay` others are running.
    static func startBuild(_ key: Key) -> Build? {
        let (build, isNew): (Build?, Bool) = entries.withLock { entries in
            if let running = entries.building[key] { return (running, false) }
            guard entries.building.count < maxBuildsUnderWay else { return (nil, false) }
            let build = Build()
            entries.building[key] = build
            return (build, true)
        }
        if let build, isNew {
            let run: @Sendable () -> Void = {
                let built = ColorProfileTransform(profile: key.profile, layout: key.layout)
                entries.withLock { entries in
                    if let built { keep(built, for: key, in: &entries) }
                    entries.building[key] = nil
                }
                build.finish(built)
            }
            do throws(SystemError) {
                try LongLivedThread.detach(name: "thumbd-icc-build", run)
            } catch {
                // No thread to be had: built here, the render waiting for it (uncancellable, as before threads).
                run()
            }
        }
        return build
    }

    /// One build under way; any number of renders may wait for it.
    final class Build: Sendable {
        /// Done, and the transform (nil for a profile lcms refused).
        private let state = Condition<(isDone: Bool, transform: ColorProfileTransform?)>((false, nil))

        func finish(_ built: ColorProfileTransform?) {
            state.update { $0 = (true, built) }
        }

        /// `.some(transform)` once the build is done (its transform is nil for a profile lcms
        /// refused), nil if it is still under way after `milliseconds`. (The render asks again
        /// after each wait: its cancellation has no event to wait on here.)
        func wait(milliseconds: Int) -> ColorProfileTransform?? {
            state.wait(until: { $0.isDone }, timeoutSeconds: Double(milliseconds) / 1000) { $0.transform }
        }
    }
}
