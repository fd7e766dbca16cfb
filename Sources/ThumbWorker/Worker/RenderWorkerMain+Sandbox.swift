#if canImport(Glibc)
import Glibc
#endif
import CSeccomp // links libseccomp, which CThumbWorker's sandbox.c calls
import CThumbWorker
import ThumbSystem

extension RenderWorkerMain {
    /// Most descriptors the worker may hold: 0, 1, 2, its socket, one source, and a few for the
    /// runtime (a library that tries to open would get EPERM from seccomp anyway).
    static let maxDescriptors: rlim_t = 16

    /// Everything before the first request: no inherited descriptor but 0–4, death with the
    /// daemon, no privilege gain, the memory, descriptor and core limits, the cancel page mapped
    /// (and its descriptor closed), then the seccomp filter, last, since it forbids the rest.
    static func enterSandbox() -> CancelPage {
        for descriptor in [socketDescriptor, cancelPageDescriptor] where fcntl(descriptor, F_GETFD) < 0 {
            exit(.setupFailed, "fd \(descriptor) is not open: the render worker is started by thumbd, with its socket on fd 3 and cancel page on fd 4")
        }
        step("close_range(5, ~0)") { CThumb_CloseFrom(5) }
        step("prctl(PR_SET_PDEATHSIG)") { CThumb_SetParentDeathSignal(SIGKILL) }
        step("prctl(PR_SET_NO_NEW_PRIVS)") { CThumb_SetNoNewPrivileges() }
        if let bytes = memoryLimit(), bytes > 0 {
            setLimit(Int32(RLIMIT_AS.rawValue), to: bytes, "RLIMIT_AS")
        }
        setLimit(Int32(RLIMIT_NOFILE.rawValue), to: maxDescriptors, "RLIMIT_NOFILE")
        setLimit(Int32(RLIMIT_CORE.rawValue), to: 0, "RLIMIT_CORE")
        keepFreedMemory()
        let page: CancelPage
        do throws(SystemError) {
            page = try CancelPage.attach(cancelPageDescriptor)
        } catch {
            exit(.setupFailed, error.description)
        }
        close(cancelPageDescriptor)
        var failedStep: UnsafePointer<CChar>? = nil
        if CThumb_SandboxApply(socketDescriptor, &failedStep) != 0 {
            let what = failedStep.map { String(cString: $0) } ?? "seccomp"
            exit(.setupFailed, "\(SystemError(operation: what, errno: errno))")
        }
        return page
    }

    /// A worker does one render after another of much the same sizes: malloc keeps what they free
    /// (up to 64 MiB at the top of the heap, blocks under 32 MiB from the heap rather than their
    /// own mappings) instead of returning it and faulting fresh zeroed pages in for the next one.
    /// Measured on a 12.6 MB answer: 54–106 ms over the in-process render without, 0–25 ms with
    /// (WorkerMeasurementTests; a busy 2-core machine). The cost: up to 64 MiB of freed memory
    /// kept per worker. RLIMIT_AS still bounds the whole.
    private static func keepFreedMemory() {
        // 32 MiB is the largest M_MMAP_THRESHOLD glibc accepts on 64-bit; a refusal only costs speed.
        _ = CThumb_KeepFreedMemory(32 << 20, 64 << 20)
    }

    /// `THUMBD_WORKER_MEMORY_BYTES`: decimal digits only; anything else stops the worker.
    private static func memoryLimit() -> rlim_t? {
        guard let text = getenv(memoryLimitVariable).map({ String(cString: $0) }) else { return nil }
        guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let bytes = rlim_t(text) else {
            exit(.setupFailed, "\(memoryLimitVariable)=\(text) is not a number of bytes")
        }
        return bytes
    }

    private static func setLimit(_ resource: __rlimit_resource_t, to value: rlim_t, _ name: String) {
        var limit = rlimit(rlim_cur: value, rlim_max: value)
        step("setrlimit(\(name), \(value))") { setrlimit(resource, &limit) }
    }

    private static func step(_ what: String, _ call: () -> Int32) {
        do throws(SystemError) {
            try systemCall(what, call)
        } catch {
            exit(.setupFailed, error.description)
        }
    }
}
