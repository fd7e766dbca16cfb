import CThumbVideo
import Synchronization

/// FFmpeg's functions (`CThumb_FFmpeg`), valid once `VideoLibraries.load()` said nil: FFmpeg
/// is loaded at run time, never linked (see Sources/CThumbVideo/ffmpeg.c).
var ff: CThumbFFmpegFunctions { CThumb_FFmpeg().pointee }

/// FFmpeg's libraries, loaded once per process: by the render worker before it sandboxes
/// itself, by anything else on its first video.
package enum VideoLibraries {
    /// Why this process must not load FFmpeg (a still worker, sandboxed without it), when it must not.
    private static let withheld = Mutex<String?>(nil)

    /// nil when FFmpeg is there; otherwise why not (a library or a function missing, or withheld).
    package static func load() -> String? {
        if let reason = withheld.withLock({ $0 }) { return reason }
        var message = [CChar](repeating: 0, count: 512)
        return CThumb_FFmpegLoad(&message, message.count) == 0 ? nil : VideoFile.text(message)
    }

    /// From now on `load` answers `reason` instead of loading (a worker whose sandbox would refuse
    /// the dlopen says why in words).
    package static func withhold(_ reason: String) {
        withheld.withLock { $0 = reason }
    }
}
