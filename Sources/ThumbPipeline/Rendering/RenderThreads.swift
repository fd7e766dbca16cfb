#if canImport(Glibc)
import Glibc
#endif
import ThumbSystem

/// What the render threads take their work from and give their results to: the pipeline.
protocol RenderFeed: AnyObject, Sendable {
    /// Renders `group` on the calling render thread with its renderer, outside every lock.
    func render(_ group: RenderGroup, with renderer: any ThumbnailRendering) -> FinishedGroup
    /// In one hold of the pipeline's lock: answers the finished group's waiters (nil at a
    /// thread's start), then takes the thread's next group, or counts the thread idle (nil:
    /// it waits for `RenderThreads.hand`) unless the pipeline is shutting down.
    func takeGroup(after finished: FinishedGroup?) -> RenderGroup?
}

/// The render threads (`workers` of them), each with its own renderer (and, sandboxed, its own
/// worker process: one render at a time each). A thread goes from group to group without
/// waiting while there is work; an idle one waits for a group handed to it by whoever queued
/// work (`hand`, under the pipeline's lock: the lock order is pipeline lock → mailbox, and
/// nothing waits under the mailbox's lock but an idle thread for its next group).
final class RenderThreads: Sendable {
    private struct Mailbox {
        var groups: [RenderGroup] = []
        var stopped = false
    }

    private let mailbox = Condition(Mailbox())
    private let threads = Condition<[LongLivedThread]>([])

    /// Starts one thread per renderer. A thread that cannot start is logged; the pipeline runs
    /// with those that did (none: an error).
    func start(_ renderers: [any ThumbnailRendering], feed: any RenderFeed, log: PipelineLog) throws(SystemError) {
        var started: [LongLivedThread] = []
        var lastError: SystemError?
        for (index, renderer) in renderers.enumerated() {
            do throws(SystemError) {
                started.append(try LongLivedThread.start(name: "thumbd-render-\(index)") { [self] in
                    run(renderer, feed: feed)
                })
            } catch {
                log.warning("render thread \(index): \(error)")
                lastError = error
            }
        }
        threads.update { $0 += started }
        if started.isEmpty, let lastError { throw lastError }
    }

    /// Gives a group to an idle thread (the feed counted one idle and took the group for it).
    func hand(_ group: RenderGroup) {
        // One group, one thread to wake.
        mailbox.update(wakingAll: false) { $0.groups.append(group) }
    }

    /// The threads finish the groups they hold (and those handed to them), then exit; waits for them.
    func stop() {
        mailbox.update { $0.stopped = true }
        for thread in threads.withLock({ $0 }) { thread.join() }
    }

    private func run(_ renderer: any ThumbnailRendering, feed: any RenderFeed) {
        renderer.start()
        var next = feed.takeGroup(after: nil)
        while true {
            if next == nil {
                next = mailbox.wait(until: { !$0.groups.isEmpty || $0.stopped }) { mailbox -> RenderGroup? in
                    mailbox.groups.isEmpty ? nil : mailbox.groups.removeFirst()
                } ?? nil
            }
            guard let group = next else { break }
            next = feed.takeGroup(after: feed.render(group, with: renderer))
        }
        renderer.stop()
    }
}
