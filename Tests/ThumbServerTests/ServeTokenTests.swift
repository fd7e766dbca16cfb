import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// Slot tokens over HTTP: a newer request on a slot supersedes the pending one, a late request
/// with a lower token is refused at once, and releasing a slot cancels its pending request.
///
/// One worker, kept busy by two slow visible renders (12 MP photos at xx-large@4x, about a
/// second each); the request under test asks for `priority=prefetch`, so it is certainly still
/// queued (pending) when the next one on its slot arrives (visible jobs go first).
@Suite("thumbd serve: slot tokens")
struct ServeTokenTests {
    let daemon: ServeDaemon
    let blockers: ServeBatch

    init() throws {
        let photos = try ServePaths.largePhotos()
        let assets = Dictionary(uniqueKeysWithValues: photos.enumerated().map { ("p\($0.offset).jpg", $0.element) })
        daemon = try ServeDaemon(config: ServeDaemon.config(workers: 1), assets: assets)
        try daemon.start()
        blockers = try ServeCurl.startBatch(socket: daemon.socket, ["p0", "p7"].map { "/v1/thumbnails/xx-large/\($0).jpg?scale=4" })
        try daemon.waitForMetrics("the worker busy and a job queued") {
            $0["thumbd_running_renders"] == 1 && $0.queued("visible") == 1
        }
    }

    /// Waits for the blockers (all 200) and checks how many renders ran in all.
    func finish(renders: Double) throws {
        for result in try blockers.finish() { #expect(result.status == 200, "\(result)\n\(daemon.log)") }
        try daemon.waitForMetrics("the worker idle") { $0["thumbd_running_renders"] == 0 && $0.sum("thumbd_queue_depth") == 0 }
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_render_seconds_count"] == renders, "work nobody waits for was rendered:\n\(metrics.text)")
        #expect(daemon.stop() == 0, "\(daemon.log)")
    }

    @Test("two requests on one slot: the first gets 409 superseded, the second the image")
    func newerRequestSupersedesThePendingOne() throws {
        let first = ServeCurl.background(socket: daemon.socket,
                                         "/v1/thumbnails/xx-large/p2.jpg?client=app&slot=cell-7&priority=prefetch")
        try daemon.waitForMetrics("the first request queued on the slot") { $0["thumbd_slots"] == 1 && $0.queued("prefetch") == 1 }

        let second = try daemon.request("/v1/thumbnails/large/p3.jpg?client=app&slot=cell-7")
        #expect(second.status == 200 && second.headers["x-thumbd-token"] == "2", "\(second.summary)")
        #expect(ServeImageHeader.size(second.body).map { max($0.width, $0.height) } == 256)

        let superseded = try first.result()
        #expect(superseded.status == 409 && superseded.errorCode == "superseded", "\(superseded.summary)")
        #expect(superseded.json["currentToken"] as? Int == 2 && superseded.headers["x-thumbd-token"] == "2", "\(superseded.summary)")
        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_superseded_total"] == 1 && metrics.requests("thumbnails", 409) == 1, "\(metrics.text)")
        try finish(renders: 3) // the blockers and the second request: the superseded job was dropped unrendered
    }

    @Test("a late request with a lower token gets 409 at once, the pending one is served; equal or no token is served")
    func lowerTokenIsRefusedAtOnce() throws {
        let slot = "client=app&slot=cell-3"
        let current = ServeCurl.background(socket: daemon.socket,
                                           "/v1/thumbnails/large/p4.jpg?\(slot)&token=5&as=path&priority=prefetch")
        try daemon.waitForMetrics("the request with token 5 queued") { $0["thumbd_slots"] == 1 && $0.queued("prefetch") == 1 }

        // Refused from the slot's token alone, while the worker is still busy with the blockers.
        let late = try daemon.request("/v1/thumbnails/large/p5.jpg?\(slot)&token=3", timeout: 5)
        #expect(late.status == 409 && late.errorCode == "superseded", "\(late.summary)")
        #expect(late.json["currentToken"] as? Int == 5 && late.headers["x-thumbd-token"] == "5", "\(late.summary)")
        #expect(try daemon.metrics()["thumbd_running_renders"] == 1, "the blockers were done: 'at once' is not shown")

        let served = try current.result()
        #expect(served.status == 200 && served.json["token"] as? Int == 5 && served.headers["x-thumbd-token"] == "5",
                "the late request must not disturb the pending one: \(served.summary)")
        let same = try daemon.request("/v1/thumbnails/large/p4.jpg?\(slot)&token=5")
        #expect(same.status == 200 && same.headers["x-thumbd-token"] == "5", "\(same.summary)")
        let next = try daemon.request("/v1/thumbnails/large/p4.jpg?\(slot)")
        #expect(next.status == 200 && next.headers["x-thumbd-token"] == "6", "the server issues the next token: \(next.summary)")
        try finish(renders: 3) // the blockers and p4: p5 was never rendered
    }

    @Test("DELETE /v1/slots/{client}/{slot}: 204, and the slot's pending request gets 409 cancelled")
    func releasingASlotCancelsItsPendingRequest() throws {
        let pending = ServeCurl.background(socket: daemon.socket,
                                           "/v1/thumbnails/xx-large/p6.jpg?client=app&slot=cell-9&priority=prefetch")
        try daemon.waitForMetrics("the request queued on the slot") { $0["thumbd_slots"] == 1 && $0.queued("prefetch") == 1 }

        let released = try daemon.request("/v1/slots/app/cell-9", method: "DELETE")
        #expect(released.status == 204 && released.body.isEmpty, "\(released.summary)")
        let cancelled = try pending.result()
        #expect(cancelled.status == 409 && cancelled.errorCode == "cancelled", "\(cancelled.summary)")
        #expect(cancelled.headers["x-thumbd-token"] == "1", "\(cancelled.summary)")
        let again = try daemon.request("/v1/slots/app/cell-9", method: "DELETE")
        #expect(again.status == 204, "releasing an idle slot: \(again.summary)")

        let metrics = try daemon.metrics()
        #expect(metrics["thumbd_cancelled_total"] == 1 && metrics.requests("slots", 204) == 2, "\(metrics.text)")
        try finish(renders: 2)
    }
}
