#if canImport(Glibc)
import Glibc
#endif

enum System {
    /// Cores this process may run on (respects CPU affinity, as under systemd's CPUAffinity=).
    static var activeProcessorCount: Int {
        max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))
    }
}
