import Foundation
import ThumbAccess
import ThumbConfiguration

/// `thumbd sign`: a signed thumbnail URL (path and query) from the config's signing keys, for
/// back ends, scripts and tests; docs/access.md gives the same algorithm in Python and JavaScript.
struct SignCommand: ThumbdCommand {
    static let name = "sign"
    static let summary = "print a signed thumbnail URL"
    static let usage = """
        usage: thumbd sign --config FILE [--key ID] [--scale N] [--format F] [--expires SECONDS | --expires-at UNIX] KIND ASSET

        Prints /v1/thumbnails/KIND/ASSET?...&key=ID&sig=... signed with the config's access.signingKeys
        (the first key unless --key names another; key files are read as the daemon reads them,
        $CREDENTIALS_DIRECTORY included). KIND is a kind's name or an inline spec; --expires makes
        the URL valid for that many seconds from now, --expires-at until that Unix time.
        """

    var configPath: String?
    var keyID: String?
    var fields: URLSignature.Fields

    init(arguments: [String]) throws(UsageError) {
        let scanner = try ArgumentScanner(arguments, valued: ["--config", "--key", "--scale", "--format", "--expires", "--expires-at"], flags: [])
        guard scanner.positionals.count == 2 else { throw UsageError(message: "give KIND and ASSET") }
        configPath = try scanner.value("--config")
        keyID = try scanner.value("--key")
        var expires: String?
        if let seconds = try scanner.integer("--expires", in: 1...(10 * 366 * 86_400)) {
            expires = String(Int(Date().timeIntervalSince1970) + seconds)
        }
        if let at = try scanner.integer("--expires-at", in: 0...99_999_999_999) {
            guard expires == nil else { throw UsageError(message: "give one of --expires and --expires-at") }
            expires = String(at)
        }
        let scale = try scanner.integer("--scale", in: 1...4).map(String.init)
        fields = URLSignature.Fields(kind: scanner.positionals[0], assetPath: scanner.positionals[1], scale: scale,
                                     format: try scanner.value("--format"), expires: expires)
    }

    func run() -> ExitCode {
        guard let config = ConfigOption.loadReporting(configPath) else { return .config }
        let keys: [URLSignature.Key]
        do {
            keys = try config.access.resolvedSecrets(environment: ProcessInfo.processInfo.environment).keys
        } catch {
            Console.error("thumbd sign: \(error)")
            return .config
        }
        guard let key = keyID.map({ id in keys.first { $0.id == id } }) ?? keys.first else {
            Console.error("thumbd sign: " + (keyID.map { "no signing key '\($0)' in access.signingKeys" } ?? "the config has no access.signingKeys"))
            return .config
        }
        guard let signature = URLSignature.signature(fields, key: key) else {
            Console.error("thumbd sign: KIND, --scale and --format must not hold a line break")
            return .usage
        }
        Console.out(URLSignature.signedPath(fields, key: key, signature: signature))
        return .ok
    }
}
