import CThumbSystem

/// Gives the heap glibc holds free back to the system (`malloc_trim(0)`): after a large
/// transient allocation (a reconcile's listings) a long-running process otherwise idles at
/// its peak. True when something was released.
@discardableResult
package func releaseFreedHeap() -> Bool {
    CThumb_releaseFreedHeap() == 1
}
