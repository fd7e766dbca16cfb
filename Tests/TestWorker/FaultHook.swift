#if canImport(Glibc)
import Glibc
#endif
import CThumbSystem
import CThumbWorker
import Synchronization
import ThumbImaging
import ThumbSystem
import ThumbWorker

/// The faults a test can order through a source's first line, `THUMBD-FAULT:<word>\n`:
///
/// - `trap`: a Swift trap (arithmetic overflow).
/// - `loop`: spins forever, past every checkpoint.
/// - `alloc`: allocates and touches 64 MiB blocks without end (RLIMIT_AS must stop it).
/// - `exit-mid-answer`: writes the first half of a valid answer frame to its socket, then _exits(3).
/// - `malformed-answer`: sends a whole answer frame whose payload is 5 bytes of junk, then waits.
/// - `send-descriptor`: sends the first bytes of an answer with its fd 0 attached, then waits.
/// - `open-file`: tries open and openat2 of /etc/hostname and socket(AF_INET): fails the request
///   with `undecodable("open: E…; openat2: E…; socket: E…")`.
/// - `descriptors`: fails the request with `undecodable("descriptors: 0:chr 1:chr …")`, each open
///   descriptor of 0...1023 with its type.
/// - `exec`: execve("/bin/true") (seccomp kills the process).
/// - `signal <pid>`: kill(pid, SIGTERM) of another process (seccomp kills the worker first).
/// - `stderr-flood`: writes a forged log line (CR, `<0>`, ESC) and then 1 MiB of lines to its
///   stderr, then fails the request with `undecodable("flooded")`.
enum FaultHook {
    @Sendable static func act(_ source: SourceBytes) throws(ImagingError) {
        guard let (word, argument) = instruction(in: source) else { return }
        switch word {
        case "trap":
            var total = Int.max - 1
            total += source.count // the source is longer than 1 byte: overflow
            print(total)
        case "loop":
            // An atomic add per turn: a side effect the optimizer must keep (an empty infinite
            // loop may be deleted, and the code would run on into whatever follows).
            let spins = Atomic<UInt64>(0)
            while true { spins.add(1, ordering: .relaxed) }
        case "alloc":
            var hoard: [[UInt8]] = []
            while true { hoard.append([UInt8](repeating: UInt8(truncatingIfNeeded: hoard.count | 1), count: 64 << 20)) }
        case "exit-mid-answer":
            exitMidAnswer()
        case "malformed-answer":
            var frame = WorkerAnswer(results: [], cpuSeconds: 0).encode(for: fakeOrder())
            frame.replaceSubrange(WorkerFrameHeader.byteCount..., with: [1, 2, 3, 4, 5])
            frame.replaceSubrange(16..<20, with: [5, 0, 0, 0])
            frame.withUnsafeBytes { _ = write(3, $0.baseAddress, $0.count) }
            waitForTheDaemon()
        case "send-descriptor":
            let frame = WorkerAnswer(results: [], cpuSeconds: 0).encode(for: fakeOrder())
            frame.withUnsafeBytes { _ = CThumb_SendWithDescriptor(3, $0.baseAddress, 8, 0) }
            waitForTheDaemon()
        case "open-file":
            throw .undecodable(reason: openAttempts())
        case "descriptors":
            throw .undecodable(reason: "descriptors: " + openDescriptors())
        case "exec":
            let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
            execve("/bin/true", argv, environ)
            throw .undecodable(reason: "execve returned: \(errorName(errno))")
        case "signal":
            let target = pid_t(argument) ?? 0
            let result = kill(target, SIGTERM)
            throw .undecodable(reason: "kill(\(target)) returned \(result): \(errorName(errno))")
        case "stderr-flood":
            let forged = Array("x\r<0>EMERGENCY forged by a worker\n<0>EMERGENCY at a line's start\u{1b}[2J\n".utf8)
            forged.withUnsafeBytes { _ = write(2, $0.baseAddress, $0.count) }
            let flood = Array(String(repeating: String(repeating: "A", count: 1023) + "\n", count: 1024).utf8)
            var offset = 0
            while offset < flood.count {
                let written = flood.withUnsafeBytes { write(2, $0.baseAddress! + offset, $0.count - offset) }
                guard written > 0 else { break } // a full pipe: EAGAIN, the rest is lost
                offset += written
            }
            throw .undecodable(reason: "flooded")
        case "heap-leftovers":
            throw .undecodable(reason: heapLeftovers())
        default:
            throw .undecodable(reason: "unknown fault \(word)")
        }
    }

    /// The word (and what follows it on the line) of `THUMBD-FAULT:<word>[ argument]\n`.
    static func instruction(in source: SourceBytes) -> (String, String)? {
        let prefix = Array("THUMBD-FAULT:".utf8)
        return source.withUnsafeBytes { bytes in
            guard bytes.starts(with: prefix), let newline = bytes.firstIndex(of: 0x0A) else { return nil }
            let line = String(decoding: bytes[prefix.count..<newline], as: UTF8.self)
            let parts = line.split(separator: " ", maxSplits: 1).map(String.init)
            return (parts.first ?? "", parts.count > 1 ? parts[1] : "")
        }
    }

    /// An order of one 64 × 64 request with the running request's id, to forge answers to.
    static func fakeOrder() -> WorkerRenderOrder {
        var order = WorkerRenderOrder(requestID: RenderWorkerMain.currentRequestID, status: FileStatus(size: 0, modifiedNanoseconds: 0, inode: 0, device: 0),
                                      label: "", limits: ImageLimits(), tuning: ShrinkPlan.Tuning(),
                                      requests: [ThumbnailRequest(kind: SlotKind(name: "fault", widthPoints: 64, heightPoints: 64), scale: 1)])
        order.limits.maxOutputPixels = 64 * 64
        return order
    }

    /// Blocks on the socket (the sandbox allows no sleep) until the daemon kills the worker or closes it.
    static func waitForTheDaemon() -> Never {
        var byte: UInt8 = 0
        while read(3, &byte, 1) > 0 {}
        _exit(0)
    }

    static func exitMidAnswer() -> Never {
        let order = fakeOrder()
        let bytes: [UInt8] = [0xFF, 0xD8, 0xFF] + [UInt8](repeating: 0x42, count: 4096)
        let thumbnail = Thumbnail(encoded: bytes, format: .jpeg, width: 64, height: 64, warning: nil,
                                  crop: CropRectangle(x: 0, y: 0, width: 64, height: 64))
        let frame = WorkerAnswer(results: [.success(thumbnail)], cpuSeconds: 0.001).encode(for: order)
        frame.withUnsafeBytes { _ = write(3, $0.baseAddress, $0.count / 2) }
        _exit(3)
    }

    /// Takes blocks of many sizes from malloc, as a decoder takes its buffers, and counts the
    /// bytes in them that are neither 0 (fresh from the kernel) nor the worker's fill: bytes an
    /// earlier render left behind, which a decoder that reads memory it never wrote would show.
    static func heapLeftovers() -> String {
        let fresh = WorkerLaunch.heapFillByte ^ 0xFF
        var blocks: [UnsafeMutableRawPointer] = []
        var examined = 0, leftovers = 0
        for size in [24, 40, 72, 136, 264, 520, 1_000, 2_056, 4_104, 8_200, 16_400, 32_800, 65_600, 100_000] {
            for _ in 0..<8 {
                guard let block = malloc(size) else { continue }
                blocks.append(block)
                let bytes = UnsafeRawBufferPointer(start: block, count: size)
                examined += size
                leftovers += bytes.reduce(0) { $0 + ($1 == 0 || $1 == fresh ? 0 : 1) }
            }
        }
        blocks.forEach { free($0) }
        return "heap: \(leftovers) leftover bytes in \(examined)"
    }

    static func openAttempts() -> String {
        let opened = open("/etc/hostname", O_RDONLY)
        let openError = opened >= 0 ? "succeeded (fd \(opened))" : errorName(errno)
        let confined = CThumb_openat2(AT_FDCWD, "/etc/hostname", UInt64(O_RDONLY), 0)
        let confinedError = confined >= 0 ? "succeeded (fd \(confined))" : errorName(errno)
        let socketDescriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        let socketError = socketDescriptor >= 0 ? "succeeded (fd \(socketDescriptor))" : errorName(errno)
        return "open: \(openError); openat2: \(confinedError); socket: \(socketError)"
    }

    static func openDescriptors() -> String {
        // fstat, not fcntl(F_GETFD): the sandbox allows no fcntl, and fstat of a closed descriptor
        // fails with EBADF just the same.
        (0..<1024).compactMap { descriptor -> String? in
            var status = stat()
            guard fstat(Int32(descriptor), &status) == 0 else { return errno == EBADF ? nil : "\(descriptor):?" }
            let type = switch status.st_mode & S_IFMT {
            case S_IFREG: "reg"
            case S_IFCHR: "chr"
            case S_IFSOCK: "sock"
            case S_IFIFO: "fifo"
            case S_IFDIR: "dir"
            default: "other"
            }
            return "\(descriptor):\(type)"
        }.joined(separator: " ")
    }

    static func errorName(_ code: Int32) -> String {
        switch code {
        case EPERM: "EPERM"
        case EACCES: "EACCES"
        case ENOENT: "ENOENT"
        case ENOSYS: "ENOSYS"
        default: "errno \(code) (\(String(cString: strerror(code))))"
        }
    }
}
