import Testing
import ThumbImaging
@testable import ThumbPipeline

/// Each caller's share of the renderers in the job table (issue 23, fair shares): a caller that
/// holds `maxRunningPerOwner` renderers has its next job passed over, not dropped, while
/// another caller's job starts; unrationed work (no owner) is never held back.
@Suite struct JobTableShareTests {
    typealias T = JobTableTests

    @Test("a caller at its share is passed over for another caller's older job; its own job starts when one of its renders finishes")
    func aCallerAtItsShareIsPassedOver() throws {
        let table = JobTableProbe(maxQueuedJobs: 100, maxRunningPerOwner: 1)
        T.attach(table, T.version("app.jpg"), owner: "app")
        for index in 0..<5 { T.attach(table, T.version("flood-\(index).jpg"), owner: "flood") }
        // Visible work is newest first: the flooder's latest job starts.
        let first = try #require(table.popGroup(maxJobs: 8))
        #expect(first.map(\.asset.path) == ["flood-4.jpg"])
        #expect(table.runningByOwner == ["flood": 1])
        // The flooder holds its share: the app's older job is next, not another flood job.
        let second = try #require(table.popGroup(maxJobs: 8))
        #expect(second.map(\.asset.path) == ["app.jpg"])
        // Both hold their share now; four flood jobs wait, held back, none dropped.
        #expect(table.popGroup(maxJobs: 8) == nil)
        #expect(table.queuedJobs == 4 && table.hasHeldBackJobs)
        #expect(table.finish(first[0]).count == 1)
        #expect(table.runningByOwner == ["app": 1])
        #expect(try #require(table.popGroup(maxJobs: 8)).map(\.asset.path) == ["flood-3.jpg"])
        #expect(table.finish(second[0]).count == 1)
        #expect(table.runningByOwner == ["flood": 1])
    }

    @Test("visible work goes round the callers: a freed renderer goes to the caller served longest ago, not to the newest request")
    func visibleWorkGoesRoundTheCallers() throws {
        let table = JobTableProbe(maxQueuedJobs: 100, maxRunningPerOwner: 1)
        T.attach(table, T.version("c.jpg"), owner: "c")
        for index in 0..<3 {
            T.attach(table, T.version("a-\(index).jpg"), owner: "a")
            T.attach(table, T.version("b-\(index).jpg"), owner: "b")
        }
        let b = try #require(table.popGroup(maxJobs: 8))
        let a = try #require(table.popGroup(maxJobs: 8))
        #expect(b.map(\.asset.path) == ["b-2.jpg"] && a.map(\.asset.path) == ["a-2.jpg"])
        // a finishes and keeps asking: its newest job is newer than c's, but c has not been served.
        #expect(table.finish(a[0]).count == 1)
        T.attach(table, T.version("a-new.jpg"), owner: "a")
        let c = try #require(table.popGroup(maxJobs: 8))
        #expect(c.map(\.asset.path) == ["c.jpg"])
        #expect(table.finish(b[0]).count == 1)
        // b started before a: b's newest goes next, then a's, though a asked last.
        #expect(try #require(table.popGroup(maxJobs: 8)).map(\.asset.path) == ["b-1.jpg"])
        #expect(table.finish(c[0]).count == 1)
        #expect(try #require(table.popGroup(maxJobs: 8)).map(\.asset.path) == ["a-new.jpg"])
    }

    @Test("a job wanted by a caller under its share, or by unrationed work, starts although another of its callers is at its share")
    func anyCallerUnderItsShareStartsTheJob() throws {
        let table = JobTableProbe(maxQueuedJobs: 100, maxRunningPerOwner: 1)
        T.attach(table, T.version("one.jpg"), owner: "flood")
        _ = try #require(table.popGroup(maxJobs: 8))
        T.attach(table, T.version("shared.jpg"), owner: "flood")
        T.attach(table, T.version("pre.jpg"), owner: "flood")
        #expect(table.popGroup(maxJobs: 8) == nil)
        // The app joins the flooder's job: it starts, charged to both.
        T.attach(table, T.version("shared.jpg"), owner: "app")
        #expect(try #require(table.popGroup(maxJobs: 8)).map(\.asset.path) == ["shared.jpg"])
        #expect(table.runningByOwner == ["flood": 2, "app": 1])
        // Pre-rendering (no owner) joins the other one: unrationed, it starts.
        T.attach(table, T.version("pre.jpg"), priority: .batch)
        #expect(try #require(table.popGroup(maxJobs: 8)).map(\.asset.path) == ["pre.jpg"])
        #expect(table.popGroup(maxJobs: 8) == nil && table.queuedJobs == 0)
    }

    @Test("another caller's job for the same asset does not ride along with a caller's decode; its own and unrationed ones do")
    func siblingsRideAlongOnlyForTheSameCallers() throws {
        let table = JobTableProbe(maxQueuedJobs: 100, maxRunningPerOwner: 1)
        let asset = T.version("a.jpg")
        T.attach(table, asset, T.small, owner: "flood")
        T.attach(table, asset, owner: "app")
        let group = try #require(table.popGroup(maxJobs: 8))
        #expect(group.map(\.request.kind.name) == ["large"], "the flooder's job made the app's decode longer")
        let other = T.version("b.jpg")
        T.attach(table, other, T.small, priority: .batch)
        T.attach(table, other, owner: "flood")
        let flood = try #require(table.popGroup(maxJobs: 8))
        #expect(Set(flood.map(\.request.kind.name)) == ["large", "small"])
        #expect(table.popGroup(maxJobs: 8) == nil, "the flooder's job for a.jpg waits for its share")
        #expect(table.runningByOwner == ["app": 1, "flood": 1])
    }

    @Test("without a share (the default) nothing is held back")
    func noShareHoldsNothingBack() throws {
        let table = JobTableProbe(maxQueuedJobs: 100)
        for index in 0..<3 { T.attach(table, T.version("\(index).jpg"), owner: "flood") }
        for _ in 0..<3 { #expect(table.popGroup(maxJobs: 8) != nil) }
        #expect(table.runningByOwner.isEmpty && !table.hasHeldBackJobs)
    }
}
