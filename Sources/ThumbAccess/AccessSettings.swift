/// The config's `access` section, parsed and bounded (ThumbConfiguration parses it; the daemon
/// resolves user and group names when it starts: `AccessControl`).
package struct AccessSettings: Sendable, Equatable {
    /// Whether a listener asks `public` callers for signed URLs.
    package enum SignatureRule: String, Sendable, Equatable {
        /// Unsigned URLs of named kinds are served; a signature, when given, must be valid.
        case optional
        /// Every thumbnail URL of a `public` caller must carry a valid signature.
        case required
        /// Signatures are not looked at: named kinds only.
        case off
    }

    /// Where a secret comes from: the config itself, or a file read when the daemon starts (a
    /// bare file name is looked up in `$CREDENTIALS_DIRECTORY` first: systemd's `LoadCredential=`).
    package enum Secret: Sendable, Equatable {
        case bytes([UInt8])
        case file(path: String, configFolder: String)
    }

    /// A bearer token: its SHA-256 in the config (`sha256`), or the token in a file (hashed
    /// when read; the token itself is never kept).
    package struct Token: Sendable, Equatable {
        package var name: String
        package var role: Role
        package var sha256: Secret

        package init(name: String, role: Role, sha256: Secret) {
            self.name = name
            self.role = role
            self.sha256 = sha256
        }
    }

    package struct SigningKey: Sendable, Equatable {
        package var id: String
        package var secret: Secret

        package init(id: String, secret: Secret) {
            self.id = id
            self.secret = secret
        }
    }

    /// Per principal other than operators: requests waiting for a render at once, and a token
    /// bucket of the renders it may start. The defaults let a screen of cold cells and a burst of
    /// scrolling through; a caller that wants thousands of renders asks by prefetch.
    package struct FairShare: Sendable, Equatable {
        package var maxQueuedRenders = 64
        package var rendersPerSecond: Double = 100
        package var burstRenders = 400
        /// Renderers one principal may hold at once; nil: all but one (at least one), so that
        /// one principal's flood always leaves a renderer free for the others.
        package var maxRunningRenders: Int?

        package init() {}
    }

    /// Unix-socket peers get this role unless a user or group rule says otherwise.
    package var socketRole = Role.client
    /// `public` callers may name slots (`client`, `slot`, `token`) and release them: pages behind
    /// a proxy run `thumbd-cells.js` through it. Off by default: every page behind one proxy
    /// shares its principal, so slots are kept apart only by the pages' random client ids, and a
    /// hostile page can fill the slot table (bounded by `maxSlots`; new slots are then 503).
    package var publicSlots = false
    /// Members of this group (primary or supplementary) are operators; root always is.
    package var operatorGroup: String?
    /// Roles by user name and by group name (a user's rule wins over its groups').
    package var users: [String: Role] = [:]
    package var groups: [String: Role] = [:]
    package var tokens: [Token] = []
    package var signingKeys: [SigningKey] = []
    /// nil: `required` when keys are configured, `off` otherwise.
    package var socketSignatures: SignatureRule?
    package var tcpSignatures: SignatureRule?
    /// Names the TCP listener answers to besides its address and `localhost` (a Host header
    /// naming anything else is 421: DNS rebinding).
    package var hosts: [String] = []
    /// Origins (`https://app.example`, exactly as browsers send them) whose pages may call the
    /// API, and get CORS answers.
    package var allowedOrigins: [String] = []
    package var fairShare = FairShare()

    package init() {}

    package var effectiveSocketSignatures: SignatureRule { socketSignatures ?? (signingKeys.isEmpty ? .off : .required) }
    package var effectiveTCPSignatures: SignatureRule { tcpSignatures ?? (signingKeys.isEmpty ? .off : .required) }
}
