/// Who sent a request, as far as the transport can tell: the listener's kind and, on a Unix
/// socket, the peer's credentials as the kernel gave them when the connection was accepted.
package struct HTTPCaller: Sendable, Equatable {
    package enum Transport: Sendable, Equatable {
        case unixSocket, tcp
        /// A request made in this process (tests, tools): no peer to ask.
        case inProcess
    }

    package var transport: Transport
    package var peer: PeerCredentials?

    package init(transport: Transport, peer: PeerCredentials? = nil) {
        self.transport = transport
        self.peer = peer
    }

    package static let inProcess = HTTPCaller(transport: .inProcess)
}

/// SO_PEERCRED and SO_PEERGROUPS of a Unix socket peer.
package struct PeerCredentials: Sendable, Equatable {
    package var uid: UInt32
    package var gid: UInt32
    package var groups: [UInt32]

    package init(uid: UInt32, gid: UInt32, groups: [UInt32]) {
        self.uid = uid
        self.gid = gid
        self.groups = groups
    }
}
