#include "CThumbHTTP.h"

struct MHD_Daemon *CThumb_HTTPStart(int listenDescriptor, unsigned int threads, unsigned int connectionLimit,
                                    size_t connectionMemoryBytes, unsigned int timeoutSeconds,
                                    MHD_AccessHandlerCallback handler, void *handlerContext,
                                    MHD_RequestCompletedCallback completed, void *completedContext) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    // port 0 and no default handler for other paths: every request goes to `handler`.
    return MHD_start_daemon(flags, 0, NULL, NULL, handler, handlerContext,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listenDescriptor,
                            MHD_OPTION_THREAD_POOL_SIZE, threads,
                            MHD_OPTION_CONNECTION_LIMIT, connectionLimit,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, connectionMemoryBytes,
                            MHD_OPTION_CONNECTION_TIMEOUT, timeoutSeconds,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completedContext,
                            MHD_OPTION_END);
}
