import ThumbSystem

/// The one question vouched versions ask the watcher (see `VouchingWatch`).
extension FolderWatcher: VouchAuthority {
    /// Whether `relative` ("" is the root) has a live watch now, so that a change to a file in
    /// it will be reported. False once the watcher stops.
    func isWatching(folder relative: String) -> Bool {
        !isStopping && table.withLock { $0.wds[ExactPath(relative)] != nil }
    }

    /// Vouches rest on the watcher only while it runs.
    var vouches: Bool { !isStopping }
}
