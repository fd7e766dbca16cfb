extension Thumbnail {
    /// A thumbnail made elsewhere: a render worker's answer, decoded by the daemon (a label apart
    /// from the memberwise initializer, which is internal and keeps its signature).
    package init(encoded bytes: [UInt8], format: ImageFormat, width: Int, height: Int, warning: String?, crop: CropRectangle) {
        self.bytes = bytes
        self.format = format
        self.width = width
        self.height = height
        self.warning = warning
        self.crop = crop
    }
}
