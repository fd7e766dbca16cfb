#if canImport(Glibc)
import Glibc
#endif
package import ThumbImaging
package import ThumbWorker

extension PipelineConfiguration {
    /// The encoder of a thumbnail of `kind` in `format` (nil: the kind's preferred format).
    package func encoder(for kind: SlotKind, format: EncoderSettings.Format? = nil) -> EncoderSettings {
        var settings = encoder
        settings.format = format ?? preferredFormat(for: kind)
        return settings
    }

    /// The kind's own `encoding.format`, else `encoder.format` (AVIF only for pre-rendered kinds).
    package func preferredFormat(for kind: SlotKind) -> EncoderSettings.Format {
        if let own = outputFormats.byKind[kind.name] { return own.preferred }
        return encoder.format == .avif && !kind.pregenerate ? .auto : encoder.format
    }

    /// What pre-rendering writes of a kind: its preferred format, and AVIF too when the kind allows
    /// it (an AVIF encode is too slow for a request's path, so it must be there before one asks).
    package func pregeneratedFormats(for kind: SlotKind) -> [EncoderSettings.Format] {
        let preferred = preferredFormat(for: kind)
        let avifAllowed = outputFormats.formats(for: kind).allowed.contains(.avif)
        return preferred != .avif && avifAllowed ? [preferred, .avif] : [preferred]
    }
}

extension WorkerLaunch {
    /// The `thumbd` binary that runs this code, with its internal worker subcommand.
    /// `/proc/self/exe` is this process's own executable even after a package upgrade replaced
    /// the file, so a respawned worker always speaks this daemon's protocol version.
    /// `THUMBD_WORKER_EXECUTABLE` names another (the tests' fault-hook worker, `thumbd-test-worker`).
    package static func thumbd(memoryLimitBytes: Int) -> WorkerLaunch {
        if let path = getenv("THUMBD_WORKER_EXECUTABLE").map({ String(cString: $0) }), path.hasPrefix("/") {
            return WorkerLaunch(executablePath: path, arguments: [], memoryLimitBytes: memoryLimitBytes)
        }
        return WorkerLaunch(executablePath: "/proc/self/exe", arguments: [workerSubcommand], memoryLimitBytes: memoryLimitBytes)
    }

    /// The hidden `thumbd` subcommand that runs `RenderWorkerMain`.
    package static let workerSubcommand = "render-worker"
}
