// The render worker's seccomp allow-list. Found by running the whole corpus through a worker
// traced with `strace -f -p` with the filter's default action set to SCMP_ACT_LOG (allow), then
// checked with the default set to kill: the corpus walk and every fault of the test worker
// (ThumbWorkerTests) die only of what they were told to.
#define _GNU_SOURCE
#include <errno.h>
#include <unistd.h>
#include <sched.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <seccomp.h>
#include "CThumbWorker.h"

/// What decoding, encoding and answering need, beyond the calls with argument rules below. A
/// render of the whole corpus (632 files) made only recvmsg, sendmsg, read, newfstatat (glibc's
/// fstat), close, brk, mmap, munmap and clock_gettime (the process CPU clock), and one openat
/// (/etc/localtime, from gmtime in lcms: EPERM, so UTC). The rest are the paths of failure and
/// growth: write (messages on stderr), mremap and madvise (realloc and free of large blocks),
/// mprotect (malloc's mmap fallback when brk meets RLIMIT_AS), futex (the runtime's locks),
/// getpid, gettid and rt_sig* (abort), exit; fstat for other architectures, getrandom and
/// sched_yield for the Swift runtime. newfstatat can name a path: it would tell a file's metadata,
/// never its bytes.
static const char *const CThumb_SandboxAllowed[] = {
    "read", "write", "close", "fstat", "newfstatat",
    "mmap", "munmap", "mremap", "mprotect", "madvise", "brk",
    "futex", "sched_yield", "clock_gettime", "getrandom", "getpid", "gettid",
    "rt_sigprocmask", "rt_sigaction", "rt_sigreturn", "exit", "exit_group",
    // Threads of the HEIF/AVIF decoders (see the clone rule in CThumb_SandboxApply): what glibc's
    // pthread_create and a new thread's start make besides clone (mmap, mprotect of the guard
    // page, futex, and madvise and exit when it ends): the robust-futex list and restartable
    // sequences registered by every new thread, and sched_getaffinity, dav1d's count of the
    // CPUs it may use (its number of threads). It tells the worker's own affinity, nothing else.
    "set_robust_list", "rseq", "sched_getaffinity",
    NULL,
};

/// Creating a file or a socket: refused politely, so that a library that tries fails with EPERM
/// (and a test can see it) instead of killing the render.
static const char *const CThumb_SandboxRefused[] = {
    "open", "openat", "openat2", "creat", "socket", "socketpair", "connect", "bind", "listen", "accept", "accept4",
    // glibc's qsort (libwebp sorts Huffman trees for an alpha plane or a lossless WebP) asks
    // sysconf(_SC_PHYS_PAGES), i.e. sysinfo(2), once a process; refused, glibc assumes memory
    // enough and sorts in a malloc'ed buffer. Refused rather than allowed: the worker needs no
    // fact of the host.
    "sysinfo",
    NULL,
};

const char *const *CThumb_SandboxAllowedNames(void) { return CThumb_SandboxAllowed; }

const char *const *CThumb_SandboxRefusedNames(void) { return CThumb_SandboxRefused; }

int CThumb_SandboxApply(int socket, const char **step) {
    *step = "seccomp_init";
    scmp_filter_ctx filter = seccomp_init(SCMP_ACT_KILL_PROCESS);
    // libseccomp accepts KILL_PROCESS only where it can ask the kernel (the seccomp(2) call) that
    // the action exists; under a service manager's own filter that refuses seccomp(2) (systemd's
    // SystemCallFilter=@system-service does) it cannot, and init fails. Killing the thread is
    // nearly the same here: the render runs on the main thread, and a decoder thread killed
    // alone leaves the render waiting for it until the daemon's deadline kills the worker.
    if (!filter) filter = seccomp_init(SCMP_ACT_KILL_THREAD);
    if (!filter) { errno = EINVAL; return -1; }
    int result = 0;
    *step = "seccomp_rule_add";
    for (const char *const *name = CThumb_SandboxAllowed; *name; name++) {
        int number = seccomp_syscall_resolve_name(*name);
        if (number == __NR_SCMP_ERROR) continue; // not a call of this architecture (open on arm64)
        if ((result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, number, 0)) < 0) goto failed;
    }
    for (const char *const *name = CThumb_SandboxRefused; *name; name++) {
        int number = seccomp_syscall_resolve_name(*name);
        if (number == __NR_SCMP_ERROR) continue;
        if ((result = seccomp_rule_add(filter, SCMP_ACT_ERRNO(EPERM), number, 0)) < 0) goto failed;
    }
    // A large TIFF is decoded from its file (see SourceBytes): pread of the descriptor it was
    // passed, which the worker keeps as a copy of its own (fcntl F_DUPFD_CLOEXEC, and no other
    // fcntl) while it decodes.
    if ((result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(pread64), 0)) < 0
        || (result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
                                      SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)F_DUPFD_CLOEXEC))) < 0)
        goto failed;
    // Messages only on its own socket (a descriptor it was passed is a file, read with read).
    if ((result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(recvmsg), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)socket))) < 0
        || (result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(sendmsg), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)socket))) < 0)
        goto failed;
    // Threads, and only threads: libheif 1.15 gives no way to keep its codecs on the calling
    // thread. libde265 starts one worker thread for every image it decodes (libheif's plugin
    // calls de265_start_worker_threads(ctx, 1): each tile of a grid is a new decoder), and dav1d,
    // whose thread count libheif leaves at 0 (= one per CPU of the affinity mask), starts that
    // many for each AV1 image. clone is allowed only with CLONE_THREAD set: a thread shares the
    // process's memory, descriptors and filter; a new process (fork, vfork, or a clone without
    // CLONE_THREAD) still kills the worker. clone3 passes its flags in memory a filter cannot
    // read, so it answers ENOSYS and glibc (2.34+) falls back to clone. A thread's own name is
    // allowed, set (prctl PR_SET_NAME, "dav1d-worker") and read (PR_GET_NAME: a Foundation
    // Thread reads it as it starts; thumbd builds a new colour profile's transform on one, so
    // that a cancel need not wait for lcms); every other prctl kills.
    if ((result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
                                   SCMP_A0(SCMP_CMP_MASKED_EQ, (scmp_datum_t)CLONE_THREAD, (scmp_datum_t)CLONE_THREAD))) < 0
        || (result = seccomp_rule_add(filter, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0)) < 0
        || (result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)PR_SET_NAME))) < 0
        || (result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1, SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)PR_GET_NAME))) < 0)
        goto failed;
    // Signals only to itself (abort() raises SIGABRT with tgkill): never to the daemon, which runs
    // as the same user. kill(2) is not allowed at all.
    scmp_datum_t self = (scmp_datum_t)getpid();
    if ((result = seccomp_rule_add(filter, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ, self))) < 0)
        goto failed;
    *step = "seccomp_load";
    if ((result = seccomp_load(filter)) < 0) goto failed;
    seccomp_release(filter);
    return 0;
failed:
    seccomp_release(filter);
    errno = -result;
    return -1;
}
