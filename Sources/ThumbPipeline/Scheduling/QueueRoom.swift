extension PipelineConfiguration {
    /// How many queued jobs there may be when a new job of `priority` joins. Visible requests may
    /// fill the queue; prefetch and batch work only three quarters of it, so that a prefetch of
    /// thousands of thumbnails (or a spool) can never answer the cell on screen 503.
    func queueLimit(for priority: Priority) -> Int {
        priority == .visible ? maxQueuedJobs : maxQueuedJobs - maxQueuedJobs / 4
    }
}
