package import ThumbPipeline

extension FailureAnswer {
    /// Each kind of failure answer as an HTTP status (the failure table, `ThumbFailure.disposition`,
    /// says which kind a failure is).
    package var httpStatus: Int {
        switch self {
        case .conflict: 409
        case .tooManyRequests: 429
        case .notFound: 404
        case .forbidden: 403
        case .unsupportedContent: 415
        case .tooLarge: 413
        case .failed: 500
        case .unavailable: 503
        }
    }
}

extension FailureDisposition {
    /// The failure's HTTP status.
    package var httpStatus: Int { answer.httpStatus }
}
