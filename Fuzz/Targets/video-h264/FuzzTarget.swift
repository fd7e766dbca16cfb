import FuzzDoors

/// libFuzzer's entry point (built by scripts/fuzz with --sanitize fuzzer): FuzzDoor.videoH264.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    FuzzDoor.videoH264.run(data, size)
}
