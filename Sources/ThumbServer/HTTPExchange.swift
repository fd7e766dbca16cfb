import CMicroHTTPD
import Synchronization

/// One request/response on a connection. The response may come from another thread; the
/// connection is suspended until it does.
final class HTTPExchange: @unchecked Sendable {
    private struct State {
        var response: HTTPResponse?
        var suspended = false
        var finished = false
        var answered = false
    }

    let connection: OpaquePointer
    // Touched only by the HTTP thread that owns the connection:
    var body: [UInt8] = []
    var bodyTooLarge = false
    var started = false
    /// Its headers came after the server began to stop: it gets 503, and `drain` does not wait for it.
    let arrivedWhileStopping: Bool
    /// Its answer ends the connection (`Connection: close`): it came over the listener's limit.
    let closesConnection: Bool
    private let state = Mutex(State())

    init(connection: OpaquePointer, arrivedWhileStopping: Bool, closesConnection: Bool = false) {
        self.connection = connection
        self.arrivedWhileStopping = arrivedWhileStopping
        self.closesConnection = closesConnection
    }

    /// The first response wins; later ones (a timeout racing a render) are dropped.
    func deliver(_ response: HTTPResponse) {
        state.withLock { state in
            guard !state.answered, !state.finished else { return }
            state.answered = true
            state.response = response
            if state.suspended {
                state.suspended = false
                MHD_resume_connection(connection)
            }
        }
    }

    /// After the handler ran: the response if it came already, else the connection is suspended.
    func suspendUnlessAnswered() -> HTTPResponse? {
        state.withLock { state in
            if let response = state.response {
                state.response = nil
                return response
            }
            state.suspended = true
            MHD_suspend_connection(connection)
            return nil
        }
    }

    func takeResponse() -> HTTPResponse? {
        state.withLock { state in
            defer { state.response = nil }
            return state.response
        }
    }

    func finish() {
        state.withLock { $0.finished = true }
    }
}
