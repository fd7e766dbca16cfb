import Testing
import ThumbPipeline
@testable import ThumbServer

/// The one failure table (`ThumbFailure.disposition`) as the API answers it: its rules hold for
/// every case, in HTTP statuses (ThumbServer's; the pipeline names kinds of answer only).
@Suite("failure table: HTTP statuses")
struct FailureStatusTests {
    /// One value of every case.
    static let everyFailure: [ThumbFailure] = [
        .superseded(currentToken: 7), .cancelled, .notFound(path: "a.jpg"), .forbidden(path: "../a", reason: "outside"),
        .permissionDenied(path: "a.jpg", reason: "EACCES"), .assetChanging(path: "a.jpg", reason: "size moved"),
        .unreadable(path: "a.jpg", reason: "EIO"), .undecodable(reason: "bad huffman"), .tooLarge(reason: "pixels"),
        .outputTooLarge(reason: "4096x4096"), .notStored,
        .encodingFailed(reason: "png"), .renderCrashed(reason: "SIGSEGV"), .renderTimedOut(reason: "over 30 s"),
        .rendererUnavailable(reason: "spawn failed"),
        .overloaded, .shuttingDown,
    ]

    @Test("every failure: 503 and only 503 carries Retry-After; a remembered failure is permanent and answers 4xx")
    func tableRules() {
        for failure in Self.everyFailure {
            let disposition = failure.disposition
            #expect((disposition.httpStatus == 503) == (disposition.retryAfterSeconds != nil), "\(failure)")
            // A remembered failure of the file is the client's (4xx, permanent), but for the
            // renderer's death or deadline: remembered so one file cannot crash-loop the pool, yet
            // thumbd's trouble (500), which a batch retries until its delivery bound.
            switch failure {
            case .renderCrashed, .renderTimedOut:
                #expect(disposition.negativeRecord != nil && disposition.httpStatus == 500 && !disposition.isPermanent)
            default:
                if disposition.negativeRecord != nil {
                    #expect(disposition.isPermanent && (400..<500).contains(disposition.httpStatus), "\(failure)")
                }
            }
            // The host's or thumbd's own trouble is never a client error, and is retried.
            if disposition.httpStatus >= 500 { #expect(!disposition.isPermanent, "\(failure)") }
            #expect((64...78).contains(disposition.exitCode), "\(failure)")
        }
        // An encoder failure is thumbd's, not the source's: not 415, not remembered, retried.
        let encoding = ThumbFailure.encodingFailed(reason: "x").disposition
        #expect(encoding.httpStatus == 500 && encoding.negativeRecord == nil && !encoding.isPermanent)
        // An output over the limit says nothing about the file: other kinds of it still render.
        #expect(ThumbFailure.outputTooLarge(reason: "x").disposition.negativeRecord == nil)
    }

    @Test("every kind of failure answer has its own status, and the 5xx ones are exactly failed and unavailable")
    func answersHaveDistinctStatuses() {
        let statuses = FailureAnswer.allCases.map(\.httpStatus)
        #expect(Set(statuses).count == statuses.count)
        #expect(Set(FailureAnswer.allCases.filter { $0.httpStatus >= 500 }) == [.failed, .unavailable])
    }
}
