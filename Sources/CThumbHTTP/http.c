#include "CThumbHTTP.h"

#include <string.h>

// Leaves %-escapes in the URL and the query as the client sent them: libmicrohttpd hands the
// URL over NUL-terminated, so its own decoding would turn "a.jpg%00.png" into "a.jpg". The API
// decodes (and refuses NUL) itself (see HTTPRequest, APIRequest.parse).
static size_t CThumb_KeepEscapes(void *context, struct MHD_Connection *connection, char *text) {
    (void)context;
    (void)connection;
    return strlen(text);
}

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
                            MHD_OPTION_UNESCAPE_CALLBACK, CThumb_KeepEscapes, NULL,
                            MHD_OPTION_END);
}
