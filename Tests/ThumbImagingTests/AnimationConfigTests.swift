import Foundation
import Testing
import ThumbConfiguration
import ThumbImaging

/// Issue 26: a kind's `"animation"` key and the `limits` that bound an animation.
@Suite("Animation in configs")
struct AnimationConfigTests {
    static func config(kind fields: String, limits: String = "{}") throws -> ThumbConfig {
        let json = #"{"kinds": {"k": {"width": 48, "height": 48, "# + fields + #"}}, "limits": "# + limits + "}"
        return try ThumbConfig.parse(Data(json.utf8), file: "test.json", relativeTo: "/tmp")
    }

    @Test("animation: still (the default) or keep", arguments: [
        (#""mode": "fit""#, SlotKind.Animation.still),
        (#""animation": "still""#, .still),
        (#""animation": "keep""#, .keep),
        (#""mode": "fill", "animation": "keep""#, .keep),
    ])
    func goodAnimation(_ fields: String, _ animation: SlotKind.Animation) throws {
        #expect(try Self.config(kind: fields).catalog.kinds["k"]?.animation == animation)
    }

    @Test("any other animation is a config error naming kinds.k.animation", arguments: [
        #""animation": "Keep""#, #""animation": "animate""#, #""animation": true"#, #""animation": 1"#,
    ])
    func badAnimation(_ fields: String) {
        do {
            let config = try Self.config(kind: fields)
            Issue.record("\(fields): accepted as \(String(describing: config.catalog.kinds["k"]?.animation))")
        } catch let error as ConfigError {
            #expect(error.key == "kinds.k.animation", "\(fields): key '\(error.key)' (\(error.reason))")
        } catch {
            Issue.record("\(fields): \(error)")
        }
    }

    @Test("limits.maxAnimationFrames and maxAnimationPixels are read, and refused out of range")
    func limits() throws {
        let config = try Self.config(kind: "\"mode\": \"fit\"", limits: #"{"maxAnimationFrames": 42, "maxAnimationPixels": 5000000}"#)
        #expect(config.limits.maxAnimationFrames == 42 && config.limits.maxAnimationPixels == 5_000_000)
        let defaults = try Self.config(kind: "\"mode\": \"fit\"")
        #expect(defaults.limits.maxAnimationFrames == ImageLimits().maxAnimationFrames)
        for bad in [#"{"maxAnimationFrames": 0}"#, #"{"maxAnimationPixels": -1}"#, #"{"maxAnimationFrames": "many"}"#] {
            #expect(throws: ConfigError.self, "\(bad)") { try Self.config(kind: "\"mode\": \"fit\"", limits: bad) }
        }
    }
}
