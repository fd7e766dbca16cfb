#if canImport(Glibc)
import Glibc
#endif

/// A path (or any name a file system keeps) compared and hashed by its UTF-8 bytes. Swift's
/// `String` equality and hashing treat canonically equivalent spellings as one (NFC `café.jpg`
/// and NFD `café.jpg`, `K` and the Kelvin sign), but on Linux those are two files: a table
/// keyed by asset path must not hand one file's entry to the other's request.
package struct ExactPath: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    package let text: String

    package init(_ text: String) { self.text = text }

    package init(stringLiteral text: String) { self.text = text }

    package static func == (left: ExactPath, right: ExactPath) -> Bool {
        guard left.text.utf8.count == right.text.utf8.count else { return false }
        // Native strings hold their UTF-8 contiguously: one memcmp, as fast as String's own ==.
        let compared = left.text.utf8.withContiguousStorageIfAvailable { leftBytes in
            right.text.utf8.withContiguousStorageIfAvailable { rightBytes in
                leftBytes.count == 0 || memcmp(leftBytes.baseAddress!, rightBytes.baseAddress!, leftBytes.count) == 0
            }
        }
        if let compared = compared ?? nil { return compared }
        return left.text.utf8.elementsEqual(right.text.utf8)
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(text.utf8.count)
        // In one call over the contiguous bytes (a deep folder's path is thousands of them).
        if text.utf8.withContiguousStorageIfAvailable({ hasher.combine(bytes: UnsafeRawBufferPointer($0)) }) == nil {
            for byte in text.utf8 { hasher.combine(byte) }
        }
    }

    package var description: String { text }

    /// The parts between `/` bytes. Split by byte, never by `Character`: a `/` joins a
    /// preceding prepend mark (U+0600…) or a following combining mark into one `Character`, so
    /// a split by characters leaves a real `/` inside a part, which `openat` then resolves,
    /// symlinks and all.
    package static func components(_ path: String, omittingEmpty: Bool = true) -> [Substring] {
        path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: omittingEmpty).map { Substring($0) }
    }
}
