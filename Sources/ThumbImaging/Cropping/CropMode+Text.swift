extension SlotKind.CropMode {
    /// A config's or inline spec's crop: the raw values, and "center" as an alias of "centre"
    /// (the spelling most configs elsewhere use; refusing it would only cost a restart).
    package init?(configText text: String) {
        if text == "center" {
            self = .centre
        } else {
            self.init(rawValue: text)
        }
    }
}

extension SlotKind {
    /// Whether this kind's crop can move with the asset's focus: only a `fill` of crop `focus`
    /// (a `fit` has no crop; `centre` and `attention` ignore any focus).
    package var cropFollowsFocus: Bool { mode == .fill && crop == .focus }

    /// The crop mode that decides this kind's output: `centre` for every `fit` (it has no crop).
    package var effectiveCrop: CropMode { mode == .fill ? crop : .centre }
}

extension CropRectangle {
    /// "x,y,w,h" in displayed source pixels (Swift's shortest round-tripping decimals): the
    /// index's `entries.crop`.
    package var indexText: String { "\(x),\(y),\(width),\(height)" }

    /// Reads `indexText` back; nil for anything else (a damaged or hand-edited row), never a trap.
    package init?(indexText text: String) {
        let parts = text.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 4 else { return nil }
        var values: [Double] = []
        for part in parts {
            guard part.utf8.count <= 32, let value = Double(part), value.isFinite, value >= 0 else { return nil }
            values.append(value)
        }
        self.init(x: values[0], y: values[1], width: values[2], height: values[3])
    }
}
