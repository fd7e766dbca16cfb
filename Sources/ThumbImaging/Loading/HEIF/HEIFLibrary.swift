import CHeif
import Synchronization

/// libheif as a whole: its one-time set-up, and its errors in thumbd's terms.
package enum HEIFLibrary {
    private static let initialized = Mutex(false)

    /// Registers libheif's built-in decoders and encoders (libde265, dav1d, aom, x265), once per
    /// process. Debian's 1.15 also scans its plugin folder here (an `openat` of
    /// /usr/lib/…/libheif/plugins, absent: every codec is linked in), so the render worker calls
    /// this before its seccomp filter refuses `openat`; a process that never calls it gets the same
    /// registration from the first context (libheif does it lazily), folder scan included.
    package static func initialize() {
        initialized.withLock { done in
            guard !done else { return }
            _ = heif_init(nil)
            done = true
        }
    }

    /// The message of a `heif_error` thumbd's callbacks return for success (libheif may read it).
    static var successMessage: UnsafePointer<CChar> {
        let text: StaticString = "Success" // in the binary's read-only data: valid for ever
        return UnsafeRawPointer(text.utf8Start).assumingMemoryBound(to: CChar.self)
    }

    /// Whether libheif has a decoder for `format` (false only for a libheif built without one).
    static func canDecode(_ compression: heif_compression_format) -> Bool {
        heif_have_decoder_for_format(compression) != 0
    }
}

extension heif_error {
    var isOK: Bool { code == heif_error_Ok }

    /// libheif's message on one line, with its suberror number (the message already names the
    /// error category and the suberror in words, e.g. "Invalid input: No 'meta' box").
    var reasonLine: String {
        let text = message.map { String(cString: $0) } ?? "no message"
        let oneLine = text.split(whereSeparator: \.isNewline).joined(separator: " ")
        return "libheif: \(oneLine.isEmpty ? "error \(code.rawValue)" : oneLine) (error \(code.rawValue), suberror \(subcode.rawValue))"
    }

    /// The thumbd error for a failed libheif call: unsupported codecs and file types are
    /// `.unsupportedFormat`, libheif's security limits `.tooLarge`, the rest `.undecodable`.
    var imagingError: ImagingError {
        switch (code, subcode) {
        case (heif_error_Unsupported_filetype, _), (heif_error_Unsupported_feature, heif_suberror_Unsupported_codec),
             (heif_error_Unsupported_feature, heif_suberror_Unsupported_image_type):
            .unsupportedFormat(reason: reasonLine)
        case (_, heif_suberror_Security_limit_exceeded):
            .tooLarge(reason: reasonLine)
        case (heif_error_Memory_allocation_error, _):
            .tooLarge(reason: OutOfMemory.reason("libheif", reasonLine))
        default:
            .undecodable(reason: reasonLine)
        }
    }

    /// Throws the error a failed call stands for.
    func check() throws(ImagingError) {
        if !isOK { throw imagingError }
    }
}
