import CMicroHTTPD
import Synchronization
import ThumbImaging
import ThumbPipeline

/// Bytes a libmicrohttpd response points into, kept alive until libmicrohttpd frees the
/// response (its free callback releases this box): the body is sent from the cache entry's own
/// storage, never copied. The array is a `let` of a class that nothing mutates, so its storage
/// does not move while the box lives.
final class RetainedBytes: Sendable {
    let bytes: [UInt8]

    init(_ bytes: [UInt8]) {
        self.bytes = bytes
        ResponseCounters.liveBodies.add(1, ordering: .relaxed)
    }

    deinit { ResponseCounters.liveBodies.subtract(1, ordering: .relaxed) }

    /// A response over `bytes` without a copy, or nil (libmicrohttpd out of memory; or no bytes:
    /// an empty array may have no address to point at).
    static func response(over bytes: [UInt8]) -> OpaquePointer? {
        guard !bytes.isEmpty else { return nil }
        let box = RetainedBytes(bytes)
        let base = box.bytes.withUnsafeBufferPointer { UnsafeMutableRawPointer(mutating: $0.baseAddress) }
        let retained = Unmanaged.passRetained(box).toOpaque()
        guard let response = MHD_create_response_from_buffer_with_free_callback_cls(box.bytes.count, base, releaseRetainedBytes, retained) else {
            Unmanaged<RetainedBytes>.fromOpaque(retained).release()
            return nil
        }
        return response
    }
}

/// libmicrohttpd's free callback of a response made by `RetainedBytes.response(over:)`: it runs
/// once, when the last connection sending the response is done with it.
private let releaseRetainedBytes: MHD_ContentReaderFreeCallback = { context in
    guard let context else { return }
    Unmanaged<RetainedBytes>.fromOpaque(context).release()
}

/// How many libmicrohttpd responses this process built, for `/metrics`: prepared ones (one per
/// cache entry and `Vary` form, whatever the number of hits) and the ones built for one request.
/// That hits build none is what `ServeHitPathTests` checks.
enum ResponseCounters {
    static let prepared = Atomic<Int>(0)
    static let preparedSends = Atomic<Int>(0)
    static let perRequest = Atomic<Int>(0)
    /// Bodies libmicrohttpd responses point into now (each released once, by the free callback).
    static let liveBodies = Atomic<Int>(0)
}

/// A libmicrohttpd response built once and queued for every request it answers. libmicrohttpd
/// counts its users (each `MHD_queue_response` adds one, the end of that connection's answer
/// takes it away) and frees it when the count reaches zero; this object holds one count of its
/// own, given back exactly once, in `deinit`. So a connection still sending it after the cache
/// dropped the entry keeps it (and, through the free callback, its bytes) alive until done.
final class PreparedResponse: @unchecked Sendable {
    // @unchecked: the pointer is written once at init and no header is added after that
    // (libmicrohttpd locks its use count itself).
    let pointer: OpaquePointer

    init(pointer: OpaquePointer) { self.pointer = pointer }

    deinit { MHD_destroy_response(pointer) }
}

/// What the server keeps on a cache entry (its `ServingAttachment`) to answer with it: the header
/// lines formatted once, and the 200 responses over the entry's bytes, made at the first answer
/// and sent again for each hit with no copy and no formatting. Counted in the memory cache's
/// budget as `MemoryCache.servingReserveBytes` (`ServeHitPathTests` measures it). Nothing here
/// can go stale: every line follows from the entry's key and bytes (a changed asset is another
/// key, so another entry), and the `Vary: Accept` form is chosen per request.
final class ServedThumbnail: @unchecked Sendable {
    // @unchecked: the lets are immutable; the two lazy references are set atomically, once.
    let etag: String
    /// Content-Type, ETag, Cache-Control and Vary (Origin, and Accept when the format was
    /// negotiated): the lines a 200 carries.
    let headers: [(String, String)]
    let headersVaryingWithAccept: [(String, String)]
    private let bytes: [UInt8]
    private let format: ImageFormat
    private let plain = AtomicLazyReference<PreparedResponse>()
    private let varying = AtomicLazyReference<PreparedResponse>()

    static let cacheControl = "public, max-age=31536000, immutable"

    init(_ thumbnail: CachedThumbnail) {
        bytes = thumbnail.bytes
        format = thumbnail.format
        etag = thumbnail.etag
        let lines = [("Content-Type", thumbnail.format.mediaType), ("ETag", etag), ("Cache-Control", Self.cacheControl)]
        // Every answer varies with Origin (an allowed one gets CORS headers, `AccessControl.corsHeaders`):
        // a shared cache filled by a plain <img> must not answer a page's fetch without them.
        headers = lines + [("Vary", "Origin")]
        headersVaryingWithAccept = lines + [("Vary", "Accept, Origin")]
    }

    /// The entry's served form, made at its first answer.
    static func of(_ thumbnail: CachedThumbnail) -> ServedThumbnail {
        let served = thumbnail.serving.value { ServedThumbnail(thumbnail) }
        // A copy of the thumbnail whose fields were changed after the attachment was made (the
        // fields are `var`s) is not what it describes: serve that copy as it is now.
        guard let served, served.describes(thumbnail) else { return ServedThumbnail(thumbnail) }
        return served
    }

    /// Whether these lines and bytes are `thumbnail`'s: the same storage (a changed array is a
    /// copy elsewhere), the same key and format.
    private func describes(_ thumbnail: CachedThumbnail) -> Bool {
        guard format == thumbnail.format, bytes.count == thumbnail.bytes.count, etag == thumbnail.etag else { return false }
        let mine = bytes.withUnsafeBufferPointer { $0.baseAddress }
        return thumbnail.bytes.withUnsafeBufferPointer { $0.baseAddress == mine }
    }

    /// The prepared 200 response (made now if need be), or nil when libmicrohttpd cannot make one.
    func response(variesWithAccept: Bool) -> PreparedResponse? {
        // (Two branches: an atomic reference cannot be picked into a variable.)
        if variesWithAccept {
            if let made = varying.load() { return made }
            return prepare(headersVaryingWithAccept).map { varying.storeIfNil($0) }
        }
        if let made = plain.load() { return made }
        return prepare(headers).map { plain.storeIfNil($0) }
    }

    private func prepare(_ lines: [(String, String)]) -> PreparedResponse? {
        guard let pointer = RetainedBytes.response(over: bytes) else { return nil }
        // Owned from here: a header that cannot be added destroys it with the wrapper.
        let prepared = PreparedResponse(pointer: pointer)
        for (name, value) in lines where MHD_add_response_header(pointer, name, value) != .YES { return nil }
        ResponseCounters.prepared.add(1, ordering: .relaxed)
        return prepared
    }
}
