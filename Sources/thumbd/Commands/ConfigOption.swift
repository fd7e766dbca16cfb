import Foundation
import ThumbConfiguration
import ThumbImaging

/// `--config FILE`, shared by the subcommands: the file when given, else the built-in kinds.
enum ConfigOption {
    /// The config, or nil once the error is on stderr (the command then exits 78).
    static func loadReporting(_ path: String?) -> ThumbConfig? {
        switch load(path) {
        case .success(let config): return config
        case .failure(let error):
            Console.error("thumbd: \(error)")
            return nil
        }
    }

    /// Whether `path` is a folder (following a symlink), for the commands that take one.
    static func isFolder(_ path: String) -> Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue
    }

    static func load(_ path: String?) -> Result<ThumbConfig, ConfigError> {
        guard let path else { return .success(.builtIn) }
        do {
            return .success(try ThumbConfig.load(path: path))
        } catch {
            return .failure(error)
        }
    }
}
