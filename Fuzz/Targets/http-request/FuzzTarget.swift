import FuzzDoors

/// libFuzzer's entry point (built by scripts/fuzz with --sanitize fuzzer): FuzzDoor.httpRequest.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzDoor.httpRequest.run(data, size)
}
