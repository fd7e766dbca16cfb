// What the render workers need and Swift cannot say: the CMSG_* macros of SCM_RIGHTS, prctl and
// posix_spawn's closefrom (variadic or _GNU_SOURCE-only), and the libseccomp allow-list.
// Each call returns -1 with errno set on failure, so that Swift wraps it in `systemCall`.
#ifndef CTHUMB_WORKER_H
#define CTHUMB_WORKER_H

#include <spawn.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/// sendmsg(socket, bytes, MSG_NOSIGNAL) with `descriptor` attached as SCM_RIGHTS when it is
/// >= 0. MSG_NOSIGNAL: a peer that died gives EPIPE, never a SIGPIPE that would kill the sender.
ssize_t CThumb_SendWithDescriptor(int socket, const void *bytes, size_t count, int descriptor);

/// recvmsg(socket, MSG_CMSG_CLOEXEC | flags) into `bytes`. `*descriptor` is the one descriptor
/// received with these bytes, or -1; `*discarded` counts any others (closed at once, or dropped by
/// the kernel when they did not fit), so that a peer can never leave descriptors in this process.
ssize_t CThumb_ReceiveWithDescriptor(int socket, void *bytes, size_t capacity, int flags,
                                     int *descriptor, int *discarded);

/// close_range(lowest, ~0U, 0): closes every descriptor from `lowest` up.
int CThumb_CloseFrom(unsigned int lowest);

/// memfd_create(name, MFD_CLOEXEC).
int CThumb_MemfdCreate(const char *name);

/// posix_spawn_file_actions_addclosefrom_np (glibc 2.34): returns 0 or an error number.
int CThumb_SpawnAddCloseFrom(posix_spawn_file_actions_t *actions, int lowest);

/// pipe2(O_CLOEXEC | O_NONBLOCK) (_GNU_SOURCE-only): 0, or -1 with errno set.
int CThumb_PipeCloexecNonblocking(int ends[2]);

/// pidfd_open(pid, 0) (Linux 5.3; glibc 2.36 has no wrapper in every build): a descriptor that
/// polls readable once the process has exited.
int CThumb_PidfdOpen(pid_t pid);

/// mallopt(M_MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD) (malloc.h is not in the Glibc
/// module): returns 0, or -1 when glibc refused a value.
int CThumb_KeepFreedMemory(int mmapThresholdBytes, int trimThresholdBytes);

/// prctl(PR_SET_PDEATHSIG, signal).
int CThumb_SetParentDeathSignal(int signal);

/// prctl(PR_SET_NO_NEW_PRIVS, 1): no exec can ever gain privileges (and seccomp may be loaded
/// without CAP_SYS_ADMIN).
int CThumb_SetNoNewPrivileges(void);

/// Loads the render worker's seccomp filter (see sandbox.c for the list): recvmsg and sendmsg
/// only on `socket`, tgkill only of itself, file and socket creation refused with EPERM,
/// anything not listed kills the process. On failure `*step` names what failed.
int CThumb_SandboxApply(int socket, const char **step);

/// The names of the system calls the filter allows (NULL-terminated), for tests and docs/pipeline.md.
const char *const *CThumb_SandboxAllowedNames(void);
/// The names refused with EPERM (NULL-terminated).
const char *const *CThumb_SandboxRefusedNames(void);

#endif
