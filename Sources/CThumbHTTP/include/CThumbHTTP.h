// The calls of libmicrohttpd that Swift cannot make: MHD_start_daemon and
// MHD_get_connection_info are variadic.
#ifndef CTHUMB_HTTP_H
#define CTHUMB_HTTP_H

#include <stdarg.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <microhttpd.h>

/// How one listener is served.
struct CThumb_HTTPSettings {
    int listenDescriptor;
    unsigned int threads;
    unsigned int connectionLimit;
    /// Open connections one client address may hold (IPv4/IPv6 only; 0: no cap). libmicrohttpd
    /// closes a connection over the cap as soon as it accepts it.
    unsigned int connectionsPerAddress;
    size_t connectionMemoryBytes;
    /// Idle time after which libmicrohttpd closes a connection; every byte received restarts it.
    unsigned int idleTimeoutSeconds;
    MHD_AccessHandlerCallback handler;
    void *handlerContext;
    MHD_RequestCompletedCallback completed;
    void *completedContext;
    /// Called when a connection is accepted and when it is closed (before its descriptor is).
    MHD_NotifyConnectionCallback connectionEvents;
    void *connectionEventsContext;
};

/// Starts a daemon on an already bound and listening socket, with an internal epoll thread
/// pool, suspend/resume, and bounded connections. Returns NULL on failure.
struct MHD_Daemon *CThumb_HTTPStart(const struct CThumb_HTTPSettings *settings);

/// The socket of a connection, or -1.
int CThumb_HTTPConnectionDescriptor(struct MHD_Connection *connection);

/// The pointer the connection-events callback stored for this connection, or NULL.
void *CThumb_HTTPConnectionContext(struct MHD_Connection *connection);

/// The peer of a Unix socket connection (SO_PEERCRED, SO_PEERGROUPS): its uid, gid and up to
/// `*groupCount` supplementary groups (`*groupCount` is set to how many were stored; 0 when the
/// kernel cannot say or there are more than fit). Returns 0, or -1 with errno (ENOTSOCK, or not
/// a Unix socket: EINVAL / ENOPROTOOPT).
int CThumb_PeerCredentials(int descriptor, uid_t *uid, gid_t *gid, gid_t *groups, int *groupCount);

/// Whether a request's body framing is ambiguous: Content-Length given more than once, or with
/// Transfer-Encoding, or Transfer-Encoding more than once. 1: ambiguous (answer 400 and close: a proxy in front may have read another
/// body length than libmicrohttpd, and the rest would be taken for the next request), 0: not.
int CThumb_HTTPFramingIsAmbiguous(struct MHD_Connection *connection);

/// Whether a socket is AF_UNIX (1), another family (0), or cannot be asked (-1, errno).
int CThumb_SocketIsUnix(int descriptor);

#endif
