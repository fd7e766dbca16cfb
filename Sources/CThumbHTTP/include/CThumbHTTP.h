// The one call of libmicrohttpd that Swift cannot make: MHD_start_daemon is variadic.
#ifndef CTHUMB_HTTP_H
#define CTHUMB_HTTP_H

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// Starts a daemon on an already bound and listening socket, with an internal epoll thread
/// pool, suspend/resume, and bounded connections. Returns NULL on failure.
struct MHD_Daemon *CThumb_HTTPStart(int listenDescriptor, unsigned int threads, unsigned int connectionLimit,
                                    size_t connectionMemoryBytes, unsigned int timeoutSeconds,
                                    MHD_AccessHandlerCallback handler, void *handlerContext,
                                    MHD_RequestCompletedCallback completed, void *completedContext);

#endif
