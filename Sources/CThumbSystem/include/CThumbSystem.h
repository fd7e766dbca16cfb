// The system calls Swift cannot make: syscall(2) is variadic, and glibc 2.36 has no openat2 wrapper.
#ifndef CTHUMB_SYSTEM_H
#define CTHUMB_SYSTEM_H

#include <stddef.h>
#include <stdint.h>

/// openat2(2)'s RESOLVE_* flags (linux/openat2.h), for Swift.
enum {
    CThumb_RESOLVE_NO_XDEV = 0x01,
    CThumb_RESOLVE_NO_MAGICLINKS = 0x02,
    CThumb_RESOLVE_NO_SYMLINKS = 0x04,
    CThumb_RESOLVE_BENEATH = 0x08,
};

/// O_PATH, which the Glibc module does not export (it needs _GNU_SOURCE).
extern const int CThumb_O_PATH;

/// openat2(directory, path, {flags, 0, resolve}): a descriptor, or -1 with errno set (ENOSYS on
/// kernels before 5.6, or where the headers lack the call).
int CThumb_openat2(int directory, const char *path, uint64_t flags, uint64_t resolve);

/// malloc_trim(0) (malloc.h, which the Glibc module does not export): gives the heap that is
/// free back to the system. 1 when some was released.
int CThumb_releaseFreedHeap(void);

/// statfs(path)'s f_type (the file system's magic number) into *type: 0, or -1 with errno set.
/// The Glibc module does not export <sys/vfs.h>.
int CThumb_fileSystemType(const char *path, int64_t *type);

/// Bytes malloc has handed out and not had back (mallinfo2's uordblks + hblkhd, every arena):
/// the Glibc module does not export <malloc.h>.
size_t CThumb_heapBytesInUse(void);

/// Names the calling thread (at most 15 bytes are kept): pthread_setname_np is a GNU extension
/// the Glibc module does not export. 0, or an errno.
int CThumb_nameThisThread(const char *name);

#endif
