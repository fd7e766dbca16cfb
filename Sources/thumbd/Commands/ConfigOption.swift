import ThumbImaging

/// `--config FILE`, shared by the subcommands: the file when given, else the built-in kinds.
enum ConfigOption {
    static func load(_ path: String?) -> Result<ThumbConfig, ConfigError> {
        guard let path else { return .success(.builtIn) }
        do {
            return .success(try ThumbConfig.load(path: path))
        } catch {
            return .failure(error)
        }
    }
}
