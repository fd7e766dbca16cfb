/// What a failure means to each consumer: the one table. HTTP answers, `thumbd` exit codes,
/// batch verdicts and negative-cache records all read it, so they cannot disagree.
package struct FailureDisposition: Sendable, Equatable {
    /// What kind of answer it is; ThumbServer says it as an HTTP status.
    package var answer: FailureAnswer
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

/// What kind of answer a failure is, in no transport's words: the pipeline knows no HTTP
/// (ThumbServer's `FailureAnswer.httpStatus` says each in a status).
package enum FailureAnswer: Sendable, Equatable, CaseIterable {
    /// The request lost its slot to a newer one, or its token is out of reach.
    case conflict
    /// Over the caller's fair share: ask again after a pause.
    case tooManyRequests
    case notFound
    case forbidden
    /// The file is no image thumbd reads.
    case unsupportedContent
    /// The source or the output is over a limit.
    case tooLarge
    /// thumbd's or the host's trouble.
    case failed
    /// Not now: ask again (the disposition says when).
    case unavailable
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
        case .superseded: D(answer: .conflict, code: "superseded", exitCode: SysExit.temporaryFailure, isPermanent: false)
        case .cancelled: D(answer: .conflict, code: "cancelled", exitCode: SysExit.temporaryFailure, isPermanent: false)
        case .tokenTooFar: D(answer: .conflict, code: "tokenTooFar", exitCode: SysExit.usage, isPermanent: true)
        case .fairShare(let seconds, _): D(answer: .tooManyRequests, code: "tooManyRequests", exitCode: SysExit.temporaryFailure, isPermanent: false,
                                           retryAfterSeconds: max(1, seconds))
        case .notFound: D(answer: .notFound, code: "notFound", exitCode: SysExit.noInput, isPermanent: true)
        case .forbidden: D(answer: .forbidden, code: "forbidden", exitCode: SysExit.dataError, isPermanent: true)
        case .permissionDenied: D(answer: .forbidden, code: "permissionDenied", exitCode: SysExit.noPermission, isPermanent: true)
        case .assetChanging: D(answer: .unavailable, code: "assetChanging", exitCode: SysExit.temporaryFailure, isPermanent: false,
                               retryAfterSeconds: 1)
        case .unreadable: D(answer: .failed, code: "unreadable", exitCode: SysExit.ioError, isPermanent: false)
        case .undecodable: D(answer: .unsupportedContent, code: "undecodable", exitCode: SysExit.dataError, isPermanent: true,
                             negativeRecord: .undecodable)
        case .tooLarge: D(answer: .tooLarge, code: "tooLarge", exitCode: SysExit.dataError, isPermanent: true, negativeRecord: .tooLarge)
        case .outputTooLarge: D(answer: .tooLarge, code: "outputTooLarge", exitCode: SysExit.dataError, isPermanent: true)
        case .notStored: D(answer: .unavailable, code: "notStored", exitCode: SysExit.temporaryFailure, isPermanent: false,
                           retryAfterSeconds: 1)
        case .encodingFailed: D(answer: .failed, code: "encodingFailed", exitCode: SysExit.software, isPermanent: false)
        // Not permanent for a batch: the job is delivered again (and meets the negative entry)
        // until the queue's own delivery bound dead-letters it.
        case .renderCrashed: D(answer: .failed, code: "renderCrashed", exitCode: SysExit.software, isPermanent: false,
                               negativeRecord: .renderCrashed)
        case .renderTimedOut: D(answer: .failed, code: "renderTimedOut", exitCode: SysExit.software, isPermanent: false,
                                negativeRecord: .renderTimedOut)
        case .rendererUnavailable: D(answer: .unavailable, code: "rendererUnavailable", exitCode: SysExit.temporaryFailure, isPermanent: false,
                                     retryAfterSeconds: 1)
        case .overloaded: D(answer: .unavailable, code: "overloaded", exitCode: SysExit.temporaryFailure, isPermanent: false,
                            retryAfterSeconds: 1)
        case .shuttingDown: D(answer: .unavailable, code: "shuttingDown", exitCode: SysExit.temporaryFailure, isPermanent: false,
                              retryAfterSeconds: 5)
        }
    }
}
