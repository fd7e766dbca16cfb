/// What a failure means to each consumer: the one table. HTTP answers, `thumbd` exit codes,
/// batch verdicts and negative-cache records all read it, so they cannot disagree.
package struct FailureDisposition: Sendable, Equatable {
    package var httpStatus: Int
    /// The `error` field of the JSON body.
    package var code: String
    /// sysexits.h status for one-shot commands.
    package var exitCode: Int32
    /// Whether a batch job (spool, Redis) fails for good (dead letter) rather than being retried.
    package var isPermanent: Bool
    /// Seconds a client should wait before asking again, for 503s.
    package var retryAfterSeconds: Int? = nil
    /// What the disk cache remembers for this version of the asset, if anything.
    package var negativeRecord: NegativeRecord? = nil
}

/// A failure remembered per asset version, stored as its raw value in SQLite.
package enum NegativeRecord: Int, Sendable, CaseIterable {
    case undecodable = 1
    case tooLarge = 2
    case renderCrashed = 3
    case renderTimedOut = 4

    /// The failure a remembered record answers with.
    package func failure(reason: String) -> ThumbFailure {
        switch self {
        case .undecodable: .undecodable(reason: reason)
        case .tooLarge: .tooLarge(reason: reason)
        case .renderCrashed: .renderCrashed(reason: reason)
        case .renderTimedOut: .renderTimedOut(reason: reason)
        }
    }
}

/// sysexits.h statuses thumbd uses.
package enum SysExit {
    package static let usage: Int32 = 64, dataError: Int32 = 65, noInput: Int32 = 66, unavailable: Int32 = 69,
                      software: Int32 = 70, ioError: Int32 = 74, temporaryFailure: Int32 = 75, noPermission: Int32 = 77
}

extension ThumbFailure {
    package var disposition: FailureDisposition {
        typealias D = FailureDisposition
        return switch self {
        case .superseded: D(httpStatus: 409, code: "superseded", exitCode: SysExit.temporaryFailure, isPermanent: false)
        case .cancelled: D(httpStatus: 409, code: "cancelled", exitCode: SysExit.temporaryFailure, isPermanent: false)
        case .tokenTooFar: D(httpStatus: 409, code: "tokenTooFar", exitCode: SysExit.usage, isPermanent: true)
        case .fairShare(let seconds, _): D(httpStatus: 429, code: "tooManyRequests", exitCode: SysExit.temporaryFailure, isPermanent: false,
                                           retryAfterSeconds: max(1, seconds))
        case .notFound: D(httpStatus: 404, code: "notFound", exitCode: SysExit.noInput, isPermanent: true)
        case .forbidden: D(httpStatus: 403, code: "forbidden", exitCode: SysExit.dataError, isPermanent: true)
        case .permissionDenied: D(httpStatus: 403, code: "permissionDenied", exitCode: SysExit.noPermission, isPermanent: true)
        case .assetChanging: D(httpStatus: 503, code: "assetChanging", exitCode: SysExit.temporaryFailure, isPermanent: false,
                               retryAfterSeconds: 1)
        case .unreadable: D(httpStatus: 500, code: "unreadable", exitCode: SysExit.ioError, isPermanent: false)
        case .undecodable: D(httpStatus: 415, code: "undecodable", exitCode: SysExit.dataError, isPermanent: true,
                             negativeRecord: .undecodable)
        case .tooLarge: D(httpStatus: 413, code: "tooLarge", exitCode: SysExit.dataError, isPermanent: true, negativeRecord: .tooLarge)
        case .outputTooLarge: D(httpStatus: 413, code: "outputTooLarge", exitCode: SysExit.dataError, isPermanent: true)
        case .notStored: D(httpStatus: 503, code: "notStored", exitCode: SysExit.temporaryFailure, isPermanent: false,
                           retryAfterSeconds: 1)
        case .encodingFailed: D(httpStatus: 500, code: "encodingFailed", exitCode: SysExit.software, isPermanent: false)
        // Not permanent for a batch: the job is delivered again (and meets the negative entry)
        // until the queue's own delivery bound dead-letters it.
        case .renderCrashed: D(httpStatus: 500, code: "renderCrashed", exitCode: SysExit.software, isPermanent: false,
                               negativeRecord: .renderCrashed)
        case .renderTimedOut: D(httpStatus: 500, code: "renderTimedOut", exitCode: SysExit.software, isPermanent: false,
                                negativeRecord: .renderTimedOut)
        case .rendererUnavailable: D(httpStatus: 503, code: "rendererUnavailable", exitCode: SysExit.temporaryFailure, isPermanent: false,
                                     retryAfterSeconds: 1)
        case .overloaded: D(httpStatus: 503, code: "overloaded", exitCode: SysExit.temporaryFailure, isPermanent: false,
                            retryAfterSeconds: 1)
        case .shuttingDown: D(httpStatus: 503, code: "shuttingDown", exitCode: SysExit.temporaryFailure, isPermanent: false,
                              retryAfterSeconds: 5)
        }
    }
}
