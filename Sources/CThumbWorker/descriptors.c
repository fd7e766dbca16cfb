#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include "CThumbWorker.h"

ssize_t CThumb_SendWithDescriptor(int socket, const void *bytes, size_t count, int descriptor) {
    struct iovec part = { .iov_base = (void *)bytes, .iov_len = count };
    struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1 };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int))]; } control;
    if (descriptor >= 0) {
        memset(&control, 0, sizeof control);
        message.msg_control = control.space;
        message.msg_controllen = sizeof control.space;
        struct cmsghdr *header = CMSG_FIRSTHDR(&message);
        header->cmsg_level = SOL_SOCKET;
        header->cmsg_type = SCM_RIGHTS;
        header->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(header), &descriptor, sizeof(int));
    }
    return sendmsg(socket, &message, MSG_NOSIGNAL);
}

/// Room for a few descriptors: more than one is a protocol violation, but each must be seen to
/// be closed rather than dropped into this process's table.
enum { CThumb_MaxReceivedDescriptors = 8 };

ssize_t CThumb_ReceiveWithDescriptor(int socket, void *bytes, size_t capacity, int flags,
                                     int *descriptor, int *discarded) {
    *descriptor = -1;
    *discarded = 0;
    struct iovec part = { .iov_base = bytes, .iov_len = capacity };
    union { struct cmsghdr header; char space[CMSG_SPACE(sizeof(int) * CThumb_MaxReceivedDescriptors)]; } control;
    struct msghdr message = { .msg_iov = &part, .msg_iovlen = 1,
                              .msg_control = control.space, .msg_controllen = sizeof control.space };
    ssize_t received = recvmsg(socket, &message, MSG_CMSG_CLOEXEC | flags);
    if (received < 0) return received;
    if (message.msg_flags & MSG_CTRUNC) *discarded += 1;
    for (struct cmsghdr *header = CMSG_FIRSTHDR(&message); header; header = CMSG_NXTHDR(&message, header)) {
        if (header->cmsg_level != SOL_SOCKET || header->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (header->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t index = 0; index < count; index++) {
            int received_descriptor;
            memcpy(&received_descriptor, CMSG_DATA(header) + index * sizeof(int), sizeof(int));
            if (*descriptor < 0) {
                *descriptor = received_descriptor;
            } else {
                close(received_descriptor);
                *discarded += 1;
            }
        }
    }
    return received;
}

int CThumb_CloseFrom(unsigned int lowest) { return close_range(lowest, ~0U, 0); }

int CThumb_MemfdCreate(const char *name) { return memfd_create(name, MFD_CLOEXEC); }

int CThumb_SpawnAddCloseFrom(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}

int CThumb_PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int CThumb_KeepFreedMemory(int mmapThresholdBytes, int trimThresholdBytes) {
    // mallopt returns 1 on success and 0 on failure, without errno.
    if (mallopt(M_MMAP_THRESHOLD, mmapThresholdBytes) != 1 || mallopt(M_TRIM_THRESHOLD, trimThresholdBytes) != 1) {
        errno = EINVAL;
        return -1;
    }
    return 0;
}

int CThumb_SetParentDeathSignal(int signal) { return prctl(PR_SET_PDEATHSIG, (unsigned long)signal, 0, 0, 0); }

int CThumb_SetNoNewPrivileges(void) { return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); }

int CThumb_PipeCloexecNonblocking(int ends[2]) { return pipe2(ends, O_CLOEXEC | O_NONBLOCK); }
