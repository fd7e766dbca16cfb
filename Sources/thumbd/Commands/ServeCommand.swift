import Foundation
import ThumbServer

/// `thumbd serve`: the daemon.
struct ServeCommand: ThumbdCommand {
    static let name = "serve"
    static let summary = "run the thumbnail daemon (HTTP on a Unix socket)"
    static let usage = """
        usage: thumbd serve [--config FILE] [--assets DIR] [--cache DIR] [--socket PATH] [--listen HOST:PORT] [--workers N]
                            [--log-format text|json|journal]

        Serves thumbnails of the asset folder over HTTP/1.1 on a Unix socket (and optionally loopback TCP),
        keeps them in a memory + disk cache, pre-renders new assets for the kinds marked "pregenerate",
        and speaks sd_notify (READY, WATCHDOG, STOPPING) under systemd. SIGHUP reloads the kinds;
        SIGTERM or Ctrl-C stops cleanly. Flags override the config file. The log: under journald (default when
        stderr is the journal's stream) one entry per event with THUMBD_ASSET=, THUMBD_KIND=, THUMBD_CLIENT= and
        THUMBD_EVENT= fields (each render is an entry: journalctl -u thumbd THUMBD_ASSET=photos/a.jpg); `text`
        (default elsewhere) prefixes each line on stderr with its syslog priority <N>; `json` writes one JSON object
        a line (time, priority, level, message, asset, kind, client, event) for a collector outside systemd.

        exit status: 0 stopped cleanly; 64 usage; 71 cannot listen; 73 cannot open the cache; 75 another thumbd
        has the cache folder open or answers on the socket (nothing of it is touched); 78 bad config.
        """

    var options = Daemon.Options()

    init(arguments: [String]) throws(UsageError) {
        let scanner = try ArgumentScanner(arguments, valued: ["--config", "--assets", "--cache", "--socket", "--listen", "--workers",
                                                              "--log-format"], flags: [])
        guard scanner.positionals.isEmpty else { throw UsageError(message: "unexpected argument '\(scanner.positionals[0])'") }
        options.configPath = try scanner.value("--config")
        options.assets = try scanner.value("--assets")
        options.cache = try scanner.value("--cache")
        options.socket = try scanner.value("--socket")
        options.listen = try scanner.value("--listen")
        options.workers = try scanner.integer("--workers", in: 1...256)
        if let name = try scanner.value("--log-format") {
            guard let format = Log.Format(name: name) else {
                throw UsageError(message: "--log-format takes text, json or journal, not '\(name)'")
            }
            logFormat = format
        }
    }

    /// nil: journal under journald, text elsewhere (`Log.Format.automatic`).
    var logFormat: Log.Format?

    func run() -> ExitCode {
        Log.use(logFormat ?? .automatic(environment: ProcessInfo.processInfo.environment))
        let status = Daemon(options: options).run()
        return ExitCode(rawValue: status.rawValue) ?? .software
    }
}
