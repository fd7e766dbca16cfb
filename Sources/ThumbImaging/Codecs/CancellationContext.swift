import CThumbShim

/// The caller's `CancellationCheck`, boxed so that the C shim can hold it as a context pointer
/// and ask it from inside a library call. `ask` returns to C: the shim alone decides to abandon
/// the call (by its own longjmp, over C frames only), after this Swift frame is gone.
final class CancellationContext {
    let isCancelled: CancellationCheck

    init(_ isCancelled: @escaping CancellationCheck) { self.isCancelled = isCancelled }

    /// Borrowed by the shim: the owner keeps this object alive while C may ask it.
    var pointer: UnsafeMutableRawPointer { Unmanaged.passUnretained(self).toOpaque() }

    static let ask: CThumb_CancelCheck = { context in
        Unmanaged<CancellationContext>.fromOpaque(context!).takeUnretainedValue().isCancelled() ? 1 : 0
    }
}
