import ThumbPipeline
import ThumbWorker

/// The `thumbd` command: dispatches to one subcommand type per verb.
enum Thumbd {
    static let version = "0.1.0"

    nonisolated(unsafe) static let commands: [any ThumbdCommand.Type] = [RenderCommand.self, SlotsCommand.self, ServeCommand.self, BatchCommand.self, CacheCommand.self,
                                                                    SignCommand.self]

    static let usage = """
        usage: thumbd <command> [options]

        commands:
        \(commands.map { "  " + $0.name.padding(toLength: 8, withPad: " ", startingAt: 0) + $0.summary }.joined(separator: "\n"))

        thumbd <command> --help   options of one command
        thumbd --version
        """

    static func main(arguments: [String]) -> ExitCode {
        guard let verb = arguments.first else {
            Console.error(usage)
            return .usage
        }
        switch verb {
        case "--help", "-h", "help":
            Console.out(usage)
            return .ok
        case "--version", "-V":
            Console.out("thumbd \(version)")
            return .ok
        case WorkerLaunch.workerSubcommand:
            // Internal, not listed: the daemon's render worker (socket on fd 3), sandboxed before
            // it reads a byte. Started by RenderWorkerSupervisor, never by hand.
            RenderWorkerMain.run()
        default:
            break
        }
        guard let command = commands.first(where: { $0.name == verb }) else {
            Console.error("thumbd: unknown command '\(verb)'\n\n\(usage)")
            return .usage
        }
        let rest = Array(arguments.dropFirst())
        if rest.contains("--help") || rest.contains("-h") {
            Console.out(command.usage)
            return .ok
        }
        do {
            return try command.init(arguments: rest).run()
        } catch {
            Console.error("thumbd \(verb): \(error.message)\n\n\(command.usage)")
            return .usage
        }
    }
}

/// One subcommand: parsed from its arguments, then run once.
protocol ThumbdCommand {
    static var name: String { get }
    static var summary: String { get }
    static var usage: String { get }
    init(arguments: [String]) throws(UsageError)
    func run() -> ExitCode
}

/// Exit statuses, from sysexits.h.
enum ExitCode: Int32 {
    case ok = 0
    case usage = 64
    case dataError = 65
    case noInput = 66
    case unavailable = 69
    case cannotCreate = 73
    /// Another thumbd holds the cache folder (or answers on the socket): try again once it is gone.
    case tempFail = 75
    case ioError = 74
    case software = 70
    case osError = 71
    case noPermission = 77
    case config = 78

    /// A render's failure, as `ThumbFailure.disposition` says.
    init(_ failure: ThumbFailure) {
        self = ExitCode(rawValue: failure.disposition.exitCode) ?? .software
    }
}
