// struct ucred (SO_PEERCRED) is a GNU extension of <sys/socket.h>.
#define _GNU_SOURCE
#include "CThumbHTTP.h"

#include <errno.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>

// Leaves %-escapes in the URL and the query as the client sent them: libmicrohttpd hands the
// URL over NUL-terminated, so its own decoding would turn "a.jpg%00.png" into "a.jpg". The API
// decodes (and refuses NUL) itself (see HTTPRequest, APIRequest.parse).
static size_t CThumb_KeepEscapes(void *context, struct MHD_Connection *connection, char *text) {
    (void)context;
    (void)connection;
    return strlen(text);
}

struct MHD_Daemon *CThumb_HTTPStart(const struct CThumb_HTTPSettings *settings) {
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME;
    // port 0 and no default handler for other paths: every request goes to `handler`.
    return MHD_start_daemon(flags, 0, NULL, NULL, settings->handler, settings->handlerContext,
                            MHD_OPTION_LISTEN_SOCKET, (MHD_socket)settings->listenDescriptor,
                            MHD_OPTION_THREAD_POOL_SIZE, settings->threads,
                            MHD_OPTION_CONNECTION_LIMIT, settings->connectionLimit,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, settings->connectionsPerAddress,
                            MHD_OPTION_CONNECTION_MEMORY_LIMIT, settings->connectionMemoryBytes,
                            MHD_OPTION_CONNECTION_TIMEOUT, settings->idleTimeoutSeconds,
                            MHD_OPTION_NOTIFY_COMPLETED, settings->completed, settings->completedContext,
                            MHD_OPTION_NOTIFY_CONNECTION, settings->connectionEvents, settings->connectionEventsContext,
                            MHD_OPTION_UNESCAPE_CALLBACK, CThumb_KeepEscapes, NULL,
                            MHD_OPTION_END);
}

int CThumb_HTTPConnectionDescriptor(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : (int)info->connect_fd;
}

void *CThumb_HTTPConnectionContext(struct MHD_Connection *connection) {
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

int CThumb_PeerCredentials(int descriptor, uid_t *uid, gid_t *gid, gid_t *groups, int *groupCount) {
    struct ucred credentials;
    socklen_t length = sizeof credentials;
    int capacity = *groupCount;
    *groupCount = 0;
    if (getsockopt(descriptor, SOL_SOCKET, SO_PEERCRED, &credentials, &length) != 0) return -1;
    *uid = credentials.uid;
    *gid = credentials.gid;
    socklen_t groupBytes = (socklen_t)(capacity > 0 ? (size_t)capacity * sizeof(gid_t) : 0);
    // ERANGE (more groups than fit) or an old kernel: the primary group still counts.
    if (capacity > 0 && getsockopt(descriptor, SOL_SOCKET, SO_PEERGROUPS, groups, &groupBytes) == 0) {
        *groupCount = (int)(groupBytes / sizeof(gid_t));
    }
    return 0;
}

struct CThumb_FramingCount {
    int contentLengths;
    int transferEncodings;
};

static enum MHD_Result CThumb_CountFraming(void *context, enum MHD_ValueKind kind, const char *key, const char *value) {
    (void)kind;
    (void)value;
    struct CThumb_FramingCount *count = context;
    if (key == NULL) return MHD_YES;
    if (strcasecmp(key, "content-length") == 0) count->contentLengths += 1;
    if (strcasecmp(key, "transfer-encoding") == 0) count->transferEncodings += 1;
    return MHD_YES;
}

int CThumb_HTTPFramingIsAmbiguous(struct MHD_Connection *connection) {
    struct CThumb_FramingCount count = {0, 0};
    MHD_get_connection_values(connection, MHD_HEADER_KIND, CThumb_CountFraming, &count);
    return count.contentLengths > 1 || count.transferEncodings > 1 || (count.contentLengths > 0 && count.transferEncodings > 0) ? 1 : 0;
}

int CThumb_SocketIsUnix(int descriptor) {
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(descriptor, (struct sockaddr *)&address, &length) != 0) return -1;
    return address.ss_family == AF_UNIX ? 1 : 0;
}
