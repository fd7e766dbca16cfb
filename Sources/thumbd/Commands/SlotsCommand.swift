import ThumbImaging

/// `thumbd slots`: the registered kinds with their pixel sizes at each scale.
struct SlotsCommand: ThumbdCommand {
    static let name = "slots"
    static let summary = "list the slot kinds and their pixel sizes"
    static let usage = """
        usage: thumbd slots [--config FILE]

        Lists every kind of the config (the freedesktop.org flavours without one): size in points,
        content mode, mask, and the output size in pixels at each of its scales.
        """

    var configPath: String?

    init(arguments: [String]) throws(UsageError) {
        let scanner = try ArgumentScanner(arguments, valued: ["--config"], flags: [])
        guard scanner.positionals.isEmpty else { throw UsageError(message: "unexpected argument '\(scanner.positionals[0])'") }
        configPath = try scanner.value("--config")
    }

    func run() -> ExitCode {
        guard let config = ConfigOption.loadReporting(configPath) else { return .config }
        for name in config.catalog.kinds.keys.sorted() {
            guard let kind = config.catalog.kinds[name] else { continue }
            let mask = switch kind.mask {
            case .none: ""
            case .circle: ", circle"
            case .cornerRadius(let radius): ", radius \(formatted(radius)) pt"
            }
            let sizes = kind.scales.map { scale in
                let size = kind.pixelSize(scale: scale)
                return "@\(scale)x \(size.width)x\(size.height) px"
            }.joined(separator: ", ")
            Console.out("\(name): \(formatted(kind.widthPoints))x\(formatted(kind.heightPoints)) pt, \(kind.mode.rawValue)\(mask)"
                        + "\(kind.upscale ? ", upscale" : "") — \(sizes)")
        }
        return .ok
    }

    private func formatted(_ points: Double) -> String {
        CheckedConversion.wholeNumber(points, in: 0...SlotBounds.maxSidePoints).map(String.init) ?? String(points)
    }
}
