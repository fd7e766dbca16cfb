// The system libraries behind CThumbShim. Their module maps carry the link flags, which
// SwiftPM applies only to modules that import them; nothing here uses them directly.
internal import CJPEG
internal import CLCMS
internal import CPNG
