#if canImport(Glibc)
import Glibc
#endif
import CThumbWorker
import Synchronization
import ThumbSystem

/// One page of shared memory between the daemon and one worker (a memfd, MAP_SHARED): the id of
/// the request to cancel. The worker's checkpoints compare it with the request they render, so a
/// cancel reaches a running decode without a message (the worker reads no socket while it decodes).
/// Ids only grow, so a stale value never matches a later request.
final class CancelPage: @unchecked Sendable {
    // Immutable after init; the word itself is only touched through atomics.
    private let mapping: UnsafeMutableRawPointer
    private let length: Int

    private var word: UnsafeMutablePointer<Atomic<UInt64>> { mapping.assumingMemoryBound(to: Atomic<UInt64>.self) }

    private init(mapping: UnsafeMutableRawPointer, length: Int) {
        self.mapping = mapping
        self.length = length
    }

    deinit { munmap(mapping, length) }

    /// The daemon's page: a fresh memfd of one page (returned, close-on-exec, to be passed as the
    /// worker's fd 4 and then closed), mapped read-write.
    static func create() throws(SystemError) -> (page: CancelPage, descriptor: Int32) {
        let descriptor = try systemCall("memfd_create for a worker's cancel page") { CThumb_MemfdCreate("thumbd-cancel") }
        do throws(SystemError) {
            let length = Int(sysconf(Int32(_SC_PAGESIZE)))
            try systemCall("ftruncate of a worker's cancel page") { ftruncate(descriptor, off_t(length)) }
            let page = try map(descriptor, length: length, protection: PROT_READ | PROT_WRITE)
            page.word.initialize(to: Atomic(0))
            return (page, descriptor)
        } catch {
            close(descriptor)
            throw error
        }
    }

    /// The worker's view of the page on `descriptor`: read-only.
    static func attach(_ descriptor: Int32) throws(SystemError) -> CancelPage {
        let length = Int(sysconf(Int32(_SC_PAGESIZE)))
        return try map(descriptor, length: length, protection: PROT_READ)
    }

    private static func map(_ descriptor: Int32, length: Int, protection: Int32) throws(SystemError) -> CancelPage {
        guard let mapping = mmap(nil, length, protection, MAP_SHARED, descriptor, 0), mapping != MAP_FAILED else {
            throw SystemError(operation: "mmap of a worker's cancel page", errno: errno)
        }
        return CancelPage(mapping: mapping, length: length)
    }

    /// The request the daemon asked to cancel (0: none yet).
    var cancelledRequest: UInt64 { word.pointee.load(ordering: .acquiring) }

    func cancel(_ requestID: UInt64) { word.pointee.store(requestID, ordering: .releasing) }
}
