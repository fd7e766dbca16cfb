import Foundation
import Testing
@testable import ThumbBatch

/// The job format producers write (jobs files, spool files).
@Suite struct BatchJobTests {
    @Test func parsesFullAndMinimalJobs() throws {
        let full = try BatchJob.parse(Data(#"{"asset": "a/b.jpg", "kinds": ["large", "contact-avatar"], "scale": 3}"#.utf8))
        #expect(full == BatchJob(asset: "a/b.jpg", kinds: ["large", "contact-avatar"], scale: 3))
        #expect(try BatchJob.parse(Data(#"{"asset": "x.png"}"#.utf8)) == BatchJob(asset: "x.png"))
        // Round trip through the JSON a producer would write.
        #expect(try BatchJob.parse(full.json) == full)
    }

    /// `--kinds` and Redis `kinds` fields: commas separate kinds, except the options of an
    /// inline spec (`crop=` was split off as a kind of its own: "no such kind crop=attention").
    @Test func splitsKindsKeepingInlineSpecOptions() {
        #expect(BatchJob.splitKinds("large,48x48@3x,fill,circle,crop=attention,contact-avatar")
                == ["large", "48x48@3x,fill,circle,crop=attention", "contact-avatar"])
        #expect(BatchJob.splitKinds("56x56,fill,radius=8,upscale,crop=focus") == ["56x56,fill,radius=8,upscale,crop=focus"])
    }

    @Test(arguments: [
        ("not json", "not a JSON object"),
        (#"["a"]"#, "not a JSON object"),
        (#"{"kinds": ["large"]}"#, "'asset' must be a non-empty string"),
        (#"{"asset": ""}"#, "'asset' must be a non-empty string"),
        (#"{"asset": "a.jpg", "kinds": []}"#, "'kinds' must be a non-empty list"),
        (#"{"asset": "a.jpg", "scale": 9}"#, "'scale' must be 1 to 4"),
        (#"{"asset": "a.jpg", "scale": true}"#, "'scale' must be 1 to 4"),
        (#"{"asset": "a.jpg", "colour": "red"}"#, "unknown key 'colour'"),
    ])
    func refusesMalformedJobsWithAReason(_ text: String, _ reason: String) {
        #expect(throws: BatchJob.FormatError.self) { try BatchJob.parse(Data(text.utf8)) }
        do {
            _ = try BatchJob.parse(Data(text.utf8))
        } catch {
            #expect(error.reason.hasPrefix(reason), "\(text): \(error.reason)")
        }
    }
}
