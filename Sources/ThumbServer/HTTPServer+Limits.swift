import ThumbPipeline
#if canImport(Glibc)
import Glibc
import ThumbSystem
#endif

extension HTTPServer {
    /// Raises the soft open-file limit toward the hard one so that every connection the limits
    /// allow can be accepted: at EMFILE libmicrohttpd stops accepting until one closes. Says so
    /// (once, at start) when the hard limit, or a filter refusing setrlimit, leaves less.
    static func makeRoomForDescriptors(connections: Int) {
        let needed = rlim_t(clamping: connections) &+ rlim_t(reservedDescriptors)
        var limit = rlimit()
        guard (try? systemCall("getrlimit(RLIMIT_NOFILE)") { getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) }) != nil,
              limit.rlim_cur < needed else { return }
        var raised = limit
        raised.rlim_cur = min(needed, limit.rlim_max)
        if (try? systemCall("setrlimit(RLIMIT_NOFILE)") { setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) }) != nil {
            limit = raised
        }
        if limit.rlim_cur < needed {
            Log.notice("open-file limit \(limit.rlim_cur) is below the \(needed) descriptors that \(connections) connections "
                       + "may need: connections beyond it wait until others close (raise LimitNOFILE= or ulimit -n)")
        }
    }

    /// Whether a listening socket is IPv4 or IPv6 (the only kinds with a peer address to cap).
    static func isInternet(_ descriptor: Int32) -> Bool {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                (try? systemCall("getsockname(\(descriptor))") { getsockname(descriptor, raw, &length) }) != nil
            }
        }
        return named && [AF_INET, AF_INET6].contains(Int32(address.ss_family))
    }
}
