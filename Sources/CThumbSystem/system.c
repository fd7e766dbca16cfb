#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/openat2.h>
#include "CThumbSystem.h"

const int CThumb_O_PATH = O_PATH;

int CThumb_openat2(int directory, const char *path, uint64_t flags, uint64_t resolve) {
#ifdef SYS_openat2
    struct open_how how = { .flags = flags, .mode = 0, .resolve = resolve };
    return (int)syscall(SYS_openat2, directory, path, &how, sizeof how);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int CThumb_releaseFreedHeap(void) {
    return malloc_trim(0);
}
