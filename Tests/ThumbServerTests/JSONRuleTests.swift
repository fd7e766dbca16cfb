import Foundation
import Testing
@testable import ThumbBatch
@testable import ThumbServer

/// One JSON rule at every door (issue 23, finding 8): a key given twice is refused, where
/// Foundation's decoder kept the first without a word; `-0` is `0`.
@Suite struct JSONRuleTests {
    static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

    @Test func aFocusBodyWithADuplicateKeyIsRefusedNamingTheKey() {
        #expect(throws: APIError.self) { try FocusBody.parse(Self.bytes(#"{"x": 0.5, "y": 0.5, "x": 2}"#)) }
        do {
            _ = try FocusBody.parse(Self.bytes(#"{"x": 0.5, "y": 0.5, "x": 0.25}"#))
            Issue.record("a duplicate 'x' was accepted")
        } catch {
            #expect(error.status == 400 && error.message.contains("'x' is given twice"), "\(error)")
        }
    }

    @Test func minusZeroIsZero() throws {
        let focus = try FocusBody.parse(Self.bytes(#"{"x": -0, "y": -0.0e5}"#))
        #expect(focus.x == 0 && focus.x.sign == .plus && focus.y.sign == .plus, "\(focus)")
    }

    @Test func duplicateKeysAreRefusedInNestedObjectsAndEveryBody() {
        // A job (spool, jobs file, Redis field) and a prefetch body follow the same rule.
        #expect(throws: BatchJob.FormatError.self) { try BatchJob.parse(Data(#"{"asset": "a.jpg", "asset": "b.jpg"}"#.utf8)) }
        #expect(throws: APIError.self) {
            try PlaceholdersCall.parse(body: Self.bytes(#"{"assets": ["a.jpg"], "assets": ["b.jpg"]}"#))
        }
        // The same key in two objects is no duplicate.
        #expect(throws: Never.self) { try PlaceholdersCall.parse(body: Self.bytes(#"{"assets": ["a.jpg"]}"#)) }
    }

    @Test func theGrammarIsRFC8259() {
        let refused = [#"{"x": 01, "y": 0}"#, #"{"x": .5, "y": 0}"#, #"{"x": 0.5, "y": 0,}"#, #"{"x": 1e999, "y": 0}"#,
                       #"{'x': 0.5, "y": 0}"#, #"{"x": 0.5, "y": 0} x"#, "{\"x\": 0.5, \"y\": 0, \"\u{1}\": 1}",
                       #"{"x": 0.5, "y": 0, "\ud800": 1}"#, String(repeating: "[", count: 100)]
        for body in refused {
            #expect(throws: APIError.self, "\(body)") { try FocusBody.parse(Self.bytes(body)) }
        }
        #expect(throws: Never.self) { try FocusBody.parse(Self.bytes(" {\"x\" : 5E-1 ,\n\"y\":\t1.0 } ")) }
    }
}
