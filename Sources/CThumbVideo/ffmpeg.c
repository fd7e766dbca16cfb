// FFmpeg loaded at run time. Linking it would map 160 libraries (its codecs' and protocols':
// x265, aom, OpenCL, VA-API, GnuTLS, libssh, ZeroMQ…) into the daemon and every command, and run
// their constructors there, for a decoder only the sandboxed worker uses. The worker calls
// CThumb_FFmpegLoad before it sandboxes itself (dlopen needs open and mmap); nothing else does
// until a video is decoded in a test's or the CLI's own process.
#include "CThumbFFmpeg.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define CTHUMB_STRING(x) #x
#define CTHUMB_SONAME(library, major) "lib" library ".so." CTHUMB_STRING(major)

static CThumbFFmpegFunctions functions;
static char failure[512];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *openLibrary(const char *soname) {
    void *handle = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (handle == NULL && failure[0] == 0) {
        const char *why = dlerror();
        snprintf(failure, sizeof failure, "cannot load FFmpeg's %s: %s", soname, why ? why : "unknown error");
    }
    return handle;
}

static void load(void) {
    void *avutil = openLibrary(CTHUMB_SONAME("avutil", LIBAVUTIL_VERSION_MAJOR));
    void *avcodec = openLibrary(CTHUMB_SONAME("avcodec", LIBAVCODEC_VERSION_MAJOR));
    void *avformat = openLibrary(CTHUMB_SONAME("avformat", LIBAVFORMAT_VERSION_MAJOR));
    void *swscale = openLibrary(CTHUMB_SONAME("swscale", LIBSWSCALE_VERSION_MAJOR));
    if (failure[0] != 0) return;
    CThumbFFmpegFunctions found;
    memset(&found, 0, sizeof found);
#define CTHUMB_RESOLVE(handle, name)                                                             \
    found.name = (__typeof__(&name))dlsym(handle, #name);                                        \
    if (found.name == NULL) {                                                                    \
        snprintf(failure, sizeof failure, "FFmpeg's %s is missing from the installed library", #name); \
        return;                                                                                  \
    }
#define CTHUMB_RESOLVE_AVUTIL(name) CTHUMB_RESOLVE(avutil, name)
#define CTHUMB_RESOLVE_AVCODEC(name) CTHUMB_RESOLVE(avcodec, name)
#define CTHUMB_RESOLVE_AVFORMAT(name) CTHUMB_RESOLVE(avformat, name)
#define CTHUMB_RESOLVE_SWSCALE(name) CTHUMB_RESOLVE(swscale, name)
    CTHUMB_FFMPEG_AVUTIL(CTHUMB_RESOLVE_AVUTIL)
    CTHUMB_FFMPEG_AVCODEC(CTHUMB_RESOLVE_AVCODEC)
    CTHUMB_FFMPEG_AVFORMAT(CTHUMB_RESOLVE_AVFORMAT)
    CTHUMB_FFMPEG_SWSCALE(CTHUMB_RESOLVE_SWSCALE)
    functions = found;
}

int CThumb_FFmpegLoad(char *message, size_t messageSize) {
    pthread_once(&once, load);
    if (failure[0] == 0) return 0;
    if (messageSize > 0) snprintf(message, messageSize, "%s", failure);
    return -1;
}

const CThumbFFmpegFunctions *CThumb_FFmpeg(void) { return &functions; }
