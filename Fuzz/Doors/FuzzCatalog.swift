import Foundation
import ThumbConfiguration
import ThumbImaging

/// The kinds every text and HTTP door resolves against: docs/configuration.md's example config (masks,
/// radius, a grid kind, several scales) plus the built-in freedesktop flavours.
enum FuzzCatalog {
    static let configText = #"""
        {
          "kinds": {
            "contact-avatar": { "width": 48, "height": 48, "scales": [2, 3], "mode": "fill", "mask": "circle", "pregenerate": true },
            "product-row":    { "width": 56, "height": 56, "scales": [2, 3], "mode": "fill", "cornerRadius": 8 },
            "product-grid":   { "grid": { "columns": 2, "containerWidth": 390, "leadingInset": 16,
                                          "trailingInset": 16, "spacing": 12 },
                                "height": 100, "mode": "fit", "scales": [3] },
            "normal": { "width": 128, "height": 128, "mode": "fit" },
            "large":  { "width": 256, "height": 256, "mode": "fit" }
          }
        }
        """#

    static let catalog: SlotCatalog = {
        do {
            return try ThumbConfig.parse(Data(configText.utf8), file: "fuzz-catalog.json", relativeTo: ".").catalog
        } catch {
            fatalError("the fuzz catalog does not parse: \(error)")
        }
    }()

    /// What a render asks of a resolved kind at each scale: its pixel size, and the geometry for
    /// a few source sizes (a dot, a photo, the widest source the limits allow).
    static func exercise(_ kind: SlotKind, scales: [Int]) {
        for scale in scales {
            let slot = kind.pixelSize(scale: scale)
            for (width, height) in [(1, 1), (4000, 3000), (65_500, 1)] {
                _ = ThumbnailGeometry(sourceWidth: width, sourceHeight: height, slotWidth: slot.width,
                                      slotHeight: slot.height, mode: kind.mode, upscale: kind.upscale)
            }
        }
    }
}
