package import ThumbImaging

/// Why a request, job or render produced no thumbnail: thumbd's one failure type. Every stage
/// reports one of these, and `disposition` (ThumbFailure+Disposition.swift) is the only table
/// that turns it into an HTTP status, an exit code, a batch verdict or a negative-cache record.
package enum ThumbFailure: Error, Equatable, Sendable, CustomStringConvertible {
    /// A newer request took the slot (or the token was older than the slot's): never answered with bytes.
    case superseded(currentToken: UInt64)
    /// The slot was released, or the pipeline cancelled the work.
    case cancelled
    /// The token would move the slot more than `SlotToken.maximumStep` past `currentToken`.
    case tokenTooFar(currentToken: UInt64)
    /// The caller's share of renders is used up (`FairShare`): retry after that many seconds.
    case fairShare(retryAfterSeconds: Int, reason: String)
    case notFound(path: String)
    /// Outside the asset root, or not a regular file.
    case forbidden(path: String, reason: String)
    /// The daemon may not read the asset (EACCES, EPERM): the host's permissions, not the request.
    case permissionDenied(path: String, reason: String)
    /// The asset was being written while it was read, twice in a row: ask again shortly.
    case assetChanging(path: String, reason: String)
    /// Reading the asset failed for another reason of the host (EIO, …): not the request's fault.
    case unreadable(path: String, reason: String)
    /// Not an image thumbd reads, or one its decoder gave up on.
    case undecodable(reason: String)
    /// The source breaks a configured limit (remembered for that version of the file).
    case tooLarge(reason: String)
    /// The requested output breaks `limits.maxOutputPixels` (another kind of the same file may be fine).
    case outputTooLarge(reason: String)
    /// Rendered, but the cache could not write its file, so there is no path to name (`as=path`).
    case notStored
    /// The encoder failed on good pixels: thumbd's fault, not the source's.
    case encodingFailed(reason: String)
    /// The render worker process died on this file (a signal, a trap, the memory limit, or an
    /// answer cut off): the file is remembered so that it cannot crash-loop the pool.
    case renderCrashed(reason: String)
    /// The render took longer than `limits.renderSeconds`: the worker was killed, the file remembered.
    case renderTimedOut(reason: String)
    /// No render worker could be started (spawn failed, or it never said hello): thumbd's
    /// trouble, not the file's; retry later.
    case rendererUnavailable(reason: String)
    /// The queue is full: retry later.
    case overloaded
    case shuttingDown

    package var description: String {
        switch self {
        case .superseded(let token): "superseded by token \(token)"
        case .cancelled: "cancelled"
        case .tokenTooFar(let token):
            "a token may move a slot at most \(SlotToken.maximumStep) past its current token \(token) (release the slot to start again)"
        case .fairShare(_, let reason): "over this caller's share: \(reason)"
        case .notFound(let path): "\(path): no such asset"
        case .forbidden(let path, let reason): "\(path): \(reason)"
        case .permissionDenied(let path, let reason): "\(path): permission denied: \(reason)"
        case .assetChanging(_, let reason): "\(reason), twice: try again once it is written"
        case .unreadable(let path, let reason): "\(path): cannot read: \(reason)"
        case .undecodable(let reason): "not a decodable image: \(reason)"
        case .tooLarge(let reason): "over a limit: \(reason)"
        case .outputTooLarge(let reason): "output over a limit: \(reason)"
        case .notStored: "the thumbnail is rendered but the cache could not write its file; ask again shortly, or without as=path for the bytes"
        case .encodingFailed(let reason): "cannot encode: \(reason)"
        case .renderCrashed(let reason): "the renderer died on this file: \(reason)"
        case .renderTimedOut(let reason): "the render took too long: \(reason)"
        case .rendererUnavailable(let reason): "no renderer: \(reason)"
        case .overloaded: "queue full"
        case .shuttingDown: "shutting down"
        }
    }
}

extension ThumbFailure {
    /// What went wrong without the category's prefix: the text a negative record keeps.
    package var reason: String {
        switch self {
        case .forbidden(_, let reason), .permissionDenied(_, let reason), .assetChanging(_, let reason),
             .unreadable(_, let reason), .undecodable(let reason), .tooLarge(let reason), .outputTooLarge(let reason), .encodingFailed(let reason),
             .renderCrashed(let reason), .renderTimedOut(let reason), .rendererUnavailable(let reason), .fairShare(_, let reason): reason
        case .superseded, .cancelled, .tokenTooFar, .notFound, .notStored, .overloaded, .shuttingDown: description
        }
    }

    /// The one mapping from the imaging layer's errors.
    package init(_ error: ImagingError) {
        switch error {
        case .cancelled: self = .cancelled
        case .tooLarge(let reason): self = .tooLarge(reason: reason)
        case .outputTooLarge(let reason): self = .outputTooLarge(reason: reason)
        case .unsupportedFormat(let reason), .undecodable(let reason): self = .undecodable(reason: reason)
        case .encodingFailed(let reason): self = .encodingFailed(reason: reason)
        }
    }

    /// The one mapping from refusals of an asset path (at submit and at open).
    package init(_ error: AssetPathError) {
        switch error {
        case .forbidden(let path, let reason): self = .forbidden(path: path, reason: reason)
        case .notFound(let path): self = .notFound(path: path)
        case .permissionDenied(let path, let reason): self = .permissionDenied(path: path, reason: reason)
        case .unreadable(let path, let reason): self = .unreadable(path: path, reason: reason)
        }
    }

    /// The one mapping from reading a file named by the user (`thumbd render`).
    package init(_ error: SourceFileError) {
        switch error.kind {
        case .notFound: self = .notFound(path: error.path)
        case .notRegularFile: self = .forbidden(path: error.path, reason: error.reason)
        case .unreadable: self = .unreadable(path: error.path, reason: error.reason)
        case .tooLarge: self = .tooLarge(reason: error.description)
        }
    }
}
