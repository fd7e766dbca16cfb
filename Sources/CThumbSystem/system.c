#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
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

int CThumb_fileSystemType(const char *path, int64_t *type) {
    struct statfs system;
    if (statfs(path, &system) != 0) return -1;
    *type = (int64_t)system.f_type;
    return 0;
}

size_t CThumb_heapBytesInUse(void) {
    struct mallinfo2 info = mallinfo2();
    return info.uordblks + info.hblkhd;
}

int CThumb_nameThisThread(const char *name) {
    char kept[16];
    size_t length = strnlen(name, sizeof kept - 1);
    memcpy(kept, name, length);
    kept[length] = 0;
    return pthread_setname_np(pthread_self(), kept);
}
