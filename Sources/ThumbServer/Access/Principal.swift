package import ThumbAccess

/// The caller a request speaks for, and what it may do. `key` names it in slot keys, fair
/// shares, metrics' logs and refusals: `uid:1000`, `token:backend`, `anonymous`, `in-process`.
package struct Principal: Sendable, Equatable {
    package var key: String
    package var role: Role
    /// Named by a browser's login (`Authorization: Basic`, the console's prompt): a refusal asks
    /// it to sign in again rather than leave it stuck with the credentials it keeps.
    package var signedInByBrowser = false

    package init(key: String, role: Role, signedInByBrowser: Bool = false) {
        self.key = key
        self.role = role
        self.signedInByBrowser = signedInByBrowser
    }

    package static let inProcess = Principal(key: "in-process", role: .operator)
    /// A caller that names nobody: a TCP client without a token.
    package static let anonymousKey = "anonymous"
    /// The challenge that makes a browser ask for the console's credentials.
    package static let browserChallenge = [("WWW-Authenticate", #"Basic realm="thumbd console", charset="UTF-8""#)]
}

/// A request the access model refuses: the answer, and the reason counted in `/metrics`.
package struct AccessRefusal: Error, Sendable, Equatable {
    package var status: Int
    package var code: String
    package var message: String
    /// The metrics label: role, signature, host, origin, contentType, token, share.
    package var reason: String
    package var headers: [(String, String)] = []

    package static func == (lhs: AccessRefusal, rhs: AccessRefusal) -> Bool {
        lhs.status == rhs.status && lhs.code == rhs.code && lhs.message == rhs.message && lhs.reason == rhs.reason
    }

    package var response: HTTPResponse { .error(status, code, message, headers: headers) }

    static func needs(_ role: Role, _ what: String, has: Role) -> AccessRefusal {
        AccessRefusal(status: 403, code: "forbidden", message: "\(what) needs the \(role) role (this caller is \(has))", reason: "role")
    }
}
