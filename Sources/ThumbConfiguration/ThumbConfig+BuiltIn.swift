package import ThumbImaging

extension ThumbConfig {
    /// The freedesktop.org thumbnail flavours (sizes in pixels at @1x, fit): what `thumbd`
    /// offers when no config file is given.
    package static let freedesktopKinds: [SlotKind] = [
        SlotKind(name: "normal", widthPoints: 128, heightPoints: 128),
        SlotKind(name: "large", widthPoints: 256, heightPoints: 256),
        SlotKind(name: "x-large", widthPoints: 512, heightPoints: 512),
        SlotKind(name: "xx-large", widthPoints: 1024, heightPoints: 1024),
    ]

    package static var builtIn: ThumbConfig {
        var config = ThumbConfig()
        config.catalog = SlotCatalog(kinds: freedesktopKinds)
        return config
    }
}
