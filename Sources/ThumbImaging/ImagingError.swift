/// Why an image could not be turned into a thumbnail. Each case maps to one exit code and one
/// HTTP status; `reason` is one line for a person, naming what the decoder or check said.
package enum ImagingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Not a JPEG or PNG at all (by content, whatever its name).
    case unsupportedFormat(reason: String)
    /// A JPEG or PNG that the decoder aborted on.
    case undecodable(reason: String)
    /// The source breaks a configured limit (pixels, dimension, file size, scans).
    case tooLarge(reason: String)
    /// The requested output breaks `limits.maxOutputPixels`: a fact about the request, not the source.
    case outputTooLarge(reason: String)
    /// The caller cancelled the work at a checkpoint.
    case cancelled
    /// The encoder failed (should not happen for valid pixels).
    case encodingFailed(reason: String)

    package var description: String {
        switch self {
        case .unsupportedFormat(let reason): "not a supported image: \(reason)"
        case .undecodable(let reason): "cannot decode: \(reason)"
        case .tooLarge(let reason): "over a limit: \(reason)"
        case .outputTooLarge(let reason): "output over a limit: \(reason)"
        case .cancelled: "cancelled"
        case .encodingFailed(let reason): "cannot encode: \(reason)"
        }
    }
}

/// A decoder that ran out of memory says nothing about the file's bytes: the image is too large
/// for the memory it was given (a worker's `limits.workerMemoryBytes`, libjpeg's working
/// memory). Reported as `.tooLarge`, never as undecodable (a 415 remembered for a file that
/// renders with more memory).
enum OutOfMemory {
    static func reason(_ decoder: String, _ said: String) -> String {
        "\(decoder) ran out of memory (\(said)): the image needs more than this process may use "
            + "(limits.workerMemoryBytes for a sandboxed render)"
    }
}
