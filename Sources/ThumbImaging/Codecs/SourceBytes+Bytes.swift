extension SourceBytes {
    /// The bytes, for code in this package that inspects a source as it is (the test worker's
    /// fault hook reads its instructions from the first line).
    package func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: buffer.baseAddress, count: count))
    }
}
