import Foundation
import Testing
import ThumbImaging
import ThumbSystem
@testable import ThumbWorker

/// The daemon decodes answers from a process that may be compromised: every malformed answer
/// is a clear error naming its field, never a trap, never an allocation the frame only claims.
@Suite struct WorkerAnswerHostileTests {
    static let requests = [ThumbnailRequest(kind: WorkerFixture.avatar, scale: 2), ThumbnailRequest(kind: WorkerFixture.large, scale: 1)]
    static let limits = ImageLimits()
    static let jpegBytes: [UInt8] = [0xFF, 0xD8, 0xFF, 0xDB] + [UInt8](repeating: 3, count: 200)

    /// A valid answer built field by field, with `adjust` changing what the test breaks.
    static func frame(requestID: UInt64 = 9, _ fields: (inout FrameWriter) -> Void) -> [UInt8] {
        var writer = FrameWriter(type: .answer, requestID: requestID)
        fields(&writer)
        return (try? writer.finish(maxPayloadBytes: .max)) ?? []
    }

    static func thumbnail(_ writer: inout FrameWriter, format: UInt8 = 0, width: UInt32 = 96, height: UInt32 = 96,
                          bytes: [UInt8] = jpegBytes, crop: [Double] = [0, 0, 1000, 1000]) {
        writer.uint8(0)
        writer.uint8(format)
        writer.uint32(width)
        writer.uint32(height)
        writer.optionalString(nil)
        for value in crop { writer.double(value) }
        writer.data(bytes)
    }

    static let valid = frame { writer in
        writer.double(0.5)
        writer.count(2)
        thumbnail(&writer)
        thumbnail(&writer, width: 256, height: 170)
        writer.bool(false) // no placeholder
        writer.count(0) // no placements
        writer.uint8(WorkerAnswer.noSourceFormatTag)
    }

    func problem(_ frame: [UInt8], requestID: UInt64 = 9) -> WorkerProtocolError? {
        do {
            _ = try WorkerAnswer.decode(frame: frame, requestID: requestID, requests: Self.requests, limits: Self.limits)
            return nil
        } catch {
            return error
        }
    }

    @Test func validAnswerDecodes() throws {
        let answer = try WorkerAnswer.decode(frame: Self.valid, requestID: 9, requests: Self.requests, limits: Self.limits)
        #expect(try answer.results[1].get().width == 256 && answer.cpuSeconds == 0.5)
    }

    @Test func everyTruncationIsRefused() {
        for length in 0..<Self.valid.count {
            #expect(problem(Array(Self.valid.prefix(length))) != nil, "a frame cut at \(length) bytes")
        }
        #expect(problem(Self.valid + [0])?.field == "frame.payloadLength", "a byte beyond the announced payload")
    }

    @Test func headerLiesAreRefused() {
        var frame = Self.valid
        frame[0] = 0x47
        #expect(problem(frame)?.field == "frame.magic")
        frame = Self.valid
        frame[4] = 9
        #expect(problem(frame)?.field == "frame.version")
        frame = Self.valid
        frame[6] = 77
        #expect(problem(frame)?.problem == "unknown frame type 77")
        frame = Self.valid
        frame[6] = UInt8(WorkerFrameType.render.rawValue)
        #expect(problem(frame)?.field == "frame.type")
        #expect(problem(Self.valid, requestID: 10)?.problem == "request 9, expected 10")
        // A payload length far past the answer's bound is refused from the header alone.
        frame = Self.valid
        frame.replaceSubrange(16..<20, with: [0xFF, 0xFF, 0xFF, 0xFF])
        let oversized = problem(frame)
        #expect(oversized?.field == "frame.payloadLength" && oversized?.problem.contains("over the") == true, "\(String(describing: oversized))")
    }

    @Test func countsPastTheirBoundsAreRefused() {
        let tooMany = Self.frame { writer in
            writer.double(0)
            writer.count(Int(UInt32.max))
        }
        #expect(problem(tooMany)?.field == "answer.results.count")
        let fewer = Self.frame { writer in
            writer.double(0)
            writer.count(1)
            Self.thumbnail(&writer)
        }
        #expect(problem(fewer)?.problem == "1 results for 2 requests")
        let hugeBytes = Self.frame { writer in
            writer.double(0)
            writer.count(2)
            writer.uint8(0); writer.uint8(0); writer.uint32(96); writer.uint32(96); writer.optionalString(nil)
            for _ in 0..<4 { writer.double(0) }
            writer.uint32(.max) // the length of the bytes, then nothing
        }
        #expect(problem(hugeBytes)?.field == "answer.results[0].bytes.length")
        let longReason = Self.frame { writer in
            writer.double(0)
            writer.count(2)
            writer.uint8(1); writer.uint8(1); writer.uint32(UInt32(WorkerProtocol.maxStringBytes + 1))
        }
        #expect(problem(longReason)?.field == "answer.results[0].reason.length")
    }

    @Test func fieldsOutOfRangeAreRefused() {
        func answer(cpu: Double = 0, _ first: (inout FrameWriter) -> Void) -> [UInt8] {
            Self.frame { writer in
                writer.double(cpu)
                writer.count(2)
                first(&writer)
                Self.thumbnail(&writer)
                writer.bool(false)
                writer.count(0)
                writer.uint8(WorkerAnswer.noSourceFormatTag)
            }
        }
        let cases: [(String, [UInt8])] = [
            ("answer.cpuSeconds", answer(cpu: .nan) { Self.thumbnail(&$0) }),
            ("answer.cpuSeconds", answer(cpu: -1) { Self.thumbnail(&$0) }),
            ("answer.results[0].tag", answer { $0.uint8(9) }),
            ("answer.results[0].format", answer { Self.thumbnail(&$0, format: 5) }),
            ("answer.results[0].width", answer { Self.thumbnail(&$0, width: 0) }),
            ("answer.results[0].width", answer { Self.thumbnail(&$0, width: 9000) }),
            ("answer.results[0].width", answer { Self.thumbnail(&$0, width: 8192, height: 8192) }),
            ("answer.results[0].bytes", answer { Self.thumbnail(&$0, bytes: Array("<html>".utf8)) }),
            ("answer.results[0].bytes.length", answer { Self.thumbnail(&$0, width: 1, height: 1, bytes: Self.jpegBytes + [UInt8](repeating: 0, count: 70_000)) }),
            ("answer.results[0].error", answer { $0.uint8(1); $0.uint8(200) }),
            ("answer.results[0].error", answer { $0.uint8(2); $0.uint8(3) }),
            ("answer.results[0].reason", answer { $0.uint8(1); $0.uint8(1); $0.uint32(2); $0.uint8(0xC3); $0.uint8(0x28) }),
            ("answer.results[0].warning.present", answer { $0.uint8(0); $0.uint8(0); $0.uint32(96); $0.uint32(96); $0.uint8(2) }),
            ("answer.results[0].crop", answer { Self.thumbnail(&$0, crop: [.nan, 0, 10, 10]) }),
            ("answer.results[0].crop", answer { Self.thumbnail(&$0, crop: [-1, 0, 10, 10]) }),
            ("answer.results[0].crop", answer { Self.thumbnail(&$0, crop: [65_000, 0, 1000, 10]) }),
            ("answer.results[0].crop", answer { Self.thumbnail(&$0, crop: [0, 0, .infinity, 10]) }),
        ]
        for (field, frame) in cases {
            let error = problem(frame)
            #expect(error?.field == field, "\(field): \(String(describing: error))")
        }
    }

    @Test func placeholdersOutOfBoundsAreRefused() {
        func answer(hash: [UInt8]) -> [UInt8] {
            Self.frame { writer in
                writer.double(0)
                writer.count(2)
                Self.thumbnail(&writer)
                Self.thumbnail(&writer)
                writer.bool(true)
                writer.data(hash)
                for _ in 0..<4 { writer.uint8(200) }
                writer.count(0)
                writer.uint8(WorkerAnswer.noSourceFormatTag)
            }
        }
        func problem(_ frame: [UInt8]) -> WorkerProtocolError? {
            do {
                _ = try WorkerAnswer.decode(frame: frame, requestID: 9, requests: Self.requests, limits: Self.limits, placeholder: .always)
                return nil
            } catch {
                return error
            }
        }
        #expect(problem(answer(hash: [UInt8](repeating: 1, count: ThumbHash.maxBytes))) == nil)
        #expect(problem(answer(hash: [UInt8](repeating: 1, count: ThumbHash.maxBytes + 1)))?.field == "answer.placeholder.thumbHash.length")
        #expect(problem(answer(hash: [1, 2, 3]))?.field == "answer.placeholder.thumbHash")
    }

    /// Placements name a request whose crop attention places, once, with a point of the unit square.
    @Test func placementsOutOfBoundsAreRefused() {
        var requests = Self.requests
        requests[0].kind.crop = .attention
        func answer(_ placements: [(index: Int, x: Double, y: Double)], count: Int? = nil) -> [UInt8] {
            Self.frame { writer in
                writer.double(0)
                writer.count(2)
                Self.thumbnail(&writer)
                Self.thumbnail(&writer)
                writer.bool(false)
                writer.count(count ?? placements.count)
                for placement in placements {
                    writer.count(placement.index)
                    writer.double(placement.x)
                    writer.double(placement.y)
                }
                writer.uint8(WorkerAnswer.noSourceFormatTag)
            }
        }
        func decoded(_ frame: [UInt8]) -> Result<WorkerAnswer, WorkerProtocolError> {
            Result { () throws(WorkerProtocolError) in
                try WorkerAnswer.decode(frame: frame, requestID: 9, requests: requests, limits: Self.limits)
            }
        }
        let valid = try? decoded(answer([(0, 0.25, 1)])).get()
        #expect(valid?.placements == [AttentionPlacement(shape: "a1:96x96c", centre: FocusRegion(x: 0.25, y: 1)!)])
        let cases: [(String, [UInt8])] = [
            ("answer.placements.count", answer([(0, 0.5, 0.5)], count: 3)),
            ("answer.placements[0].request", answer([(2, 0.5, 0.5)])),
            ("answer.placements[0].request", answer([(1, 0.5, 0.5)])), // `large` is a fit: nothing to place
            ("answer.placements[1].request", answer([(0, 0.5, 0.5), (0, 0.5, 0.5)])),
            ("answer.placements[0].centre", answer([(0, .nan, 0.5)])),
            ("answer.placements[0].centre", answer([(0, 0.5, 1.5)])),
            ("answer.placements[0].centre", answer([(0, -0.0001, 0.5)])),
        ]
        for (field, frame) in cases {
            guard case .failure(let error) = decoded(frame) else {
                Issue.record("\(field): decoded")
                continue
            }
            #expect(error.field == field, "\(field): \(error)")
        }
    }

    /// A PNG where the request asked for JPEG is a lie about the format.
    @Test func formatTheRequestDidNotAllowIsRefused() {
        var requests = Self.requests
        requests[0].encoder.format = .jpeg
        let png = Self.frame { writer in
            writer.double(0)
            writer.count(2)
            Self.thumbnail(&writer, format: 1, bytes: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            Self.thumbnail(&writer)
            writer.bool(false)
            writer.count(0)
            writer.uint8(WorkerAnswer.noSourceFormatTag)
        }
        #expect(throws: WorkerProtocolError.self) {
            try WorkerAnswer.decode(frame: png, requestID: 9, requests: requests, limits: Self.limits)
        }
        #expect(problem(png) == nil, "the same answer to requests of any format decodes")
    }

    @Test func renderOrderDecoderRefusesMalformedOrders() throws {
        let valid = try WorkerProtocolTests.order.encode()
        for length in 0..<valid.count {
            #expect(throws: WorkerProtocolError.self, "cut at \(length)") { try WorkerRenderOrder.decode(frame: Array(valid.prefix(length))) }
        }
        var noRequests = FrameWriter(type: .render, requestID: 1)
        noRequests.fileStatus(WorkerProtocolTests.status)
        noRequests.string("x")
        noRequests.limits(ImageLimits())
        noRequests.tuning(ShrinkPlan.Tuning())
        noRequests.bool(false)
        noRequests.count(0)
        #expect(throws: WorkerProtocolError(field: "render.requests.count", problem: "no requests")) {
            try WorkerRenderOrder.decode(frame: try noRequests.finish(maxPayloadBytes: .max))
        }
    }
}
