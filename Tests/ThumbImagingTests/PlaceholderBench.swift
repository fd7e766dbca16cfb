import Foundation
import Testing
@testable import ThumbImaging

/// What computing the placeholder adds to a render (issue 12: < 3 %), in release, on the corpus's
/// 8–12 MP camera JPEGs and a few PNGs: each source rendered into the sample config's
/// `contact-avatar@3x` and `large` from one decode, with and without the placeholder, and (for
/// the JPEGs) without it but with column cropping off, which is what the placeholder's
/// full-width sink costs the decode; interleaved, the median of `rounds` each. Opt-in:
///
///     THUMBD_PLACEHOLDER_BENCH=1 swift test -c release -Xswiftc -enable-testing --skip-build --filter PlaceholderRenderBench
@Suite(.enabled(if: ProcessInfo.processInfo.environment["THUMBD_PLACEHOLDER_BENCH"] == "1"))
struct PlaceholderRenderBench {
    @Test func renderCost() throws {
        let rounds = Int(ProcessInfo.processInfo.environment["THUMBD_PLACEHOLDER_ROUNDS"] ?? "") ?? 7
        let folder = Paths.corpus + "/large-photos"
        let photos = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasSuffix(".jpg") }.sorted().map { folder + "/" + $0 }
        let pngs = ["libpng-testpngs/rgb-alpha-8.png", "libpng-testpngs/rgb-16.png"].map { Paths.corpus + "/" + $0 }
            + [Paths.packageRoot + "/Samples/assets/p3-color-ring-alpha.png"]
        let requests = [try Sample.request("contact-avatar@3x"), try Sample.request("large")]
        let thumbnailer = Thumbnailer()
        var totals = (without: 0.0, with: 0.0)
        var decodes = (cropped: 0.0, uncropped: 0.0, sampled: 0.0)
        func seconds(_ body: () throws -> Void) rethrows -> Double {
            let start = ContinuousClock.now
            try body()
            return (ContinuousClock.now - start) / .seconds(1)
        }
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        for path in photos + pngs {
            let source = try loadSource(path)
            var without: [Double] = [], with: [Double] = []
            var cropped: [Double] = [], uncropped: [Double] = [], sampled: [Double] = []
            for _ in 0..<rounds {
                without.append(try seconds { _ = try thumbnailer.thumbnailSet(of: source, requests: requests, computesPlaceholder: false) })
                with.append(try seconds { _ = try thumbnailer.thumbnailSet(of: source, requests: requests, computesPlaceholder: true) })
                if source.format == .jpeg {
                    // The decode alone (no encode): column cropping on, off, and the placeholder's sink and hash.
                    cropped.append(try seconds { _ = try thumbnailer.renderJPEG(source, requests: [requests[0]], isCancelled: nil) })
                    uncropped.append(try seconds {
                        _ = try thumbnailer.renderJPEG(source, requests: [requests[0]], isCancelled: nil, cropsColumns: false)
                    })
                    sampled.append(try seconds {
                        let sampler = PlaceholderSampler()
                        _ = try thumbnailer.renderJPEG(source, requests: [requests[0]], isCancelled: nil, placeholder: sampler)
                        _ = sampler.placeholder()
                    })
                }
            }
            totals.without += median(without)
            totals.with += median(with)
            if !cropped.isEmpty {
                decodes.cropped += median(cropped)
                decodes.uncropped += median(uncropped)
                decodes.sampled += median(sampled)
            }
            print(String(format: "placeholder-bench %@: without %.2f ms, with %.2f ms (%+.1f %%)", (path as NSString).lastPathComponent,
                         median(without) * 1000, median(with) * 1000, (median(with) / median(without) - 1) * 100))
        }
        print(String(format: "placeholder-bench total over %d files (avatar@3x + large): without %.1f ms, with %.1f ms: ratio %.4f (%+.2f %%)",
                     photos.count + pngs.count, totals.without * 1000, totals.with * 1000, totals.with / totals.without,
                     (totals.with / totals.without - 1) * 100))
        print(String(format: "placeholder-bench JPEG decodes for contact-avatar@3x alone (no encode): columns cropped %.1f ms, "
                     + "not cropped %.1f ms, with the placeholder (not cropped, + hash) %.1f ms (%+.2f %% over cropped)",
                     decodes.cropped * 1000, decodes.uncropped * 1000, decodes.sampled * 1000, (decodes.sampled / decodes.cropped - 1) * 100))
        #expect(totals.with > 0)
    }
}
