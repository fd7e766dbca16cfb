import Dispatch
import Synchronization
package import ThumbAccess
package import ThumbPipeline

/// Each principal's share of the renderers: a bound on its requests waiting for a render, a
/// token bucket of renders it may start (refill `rendersPerSecond`, depth `burstRenders`), and
/// the renderers it may hold at once (`maxRunningRenders`, kept by the job table).
/// Past either it is answered 429 with `Retry-After`, so that one caller's flood of cold renders
/// cannot push another's visible requests back. Hits cost nothing: the bucket is asked only for
/// a miss that starts a render, the waiting bound only while a miss waits (`RenderAdmission`).
package final class FairShare: RenderAdmission, Sendable {
    struct Account {
        var tokens: Double
        var refilledAt: UInt64
        var waiting = 0
    }

    let settings: AccessSettings.FairShare
    let now: @Sendable () -> UInt64
    private let accounts = Mutex<[String: Account]>([:])
    /// Principals kept at once; a full bucket with nothing waiting is what a forgotten one comes
    /// back to, so the oldest such accounts are dropped first.
    static let maxAccounts = 65_536

    package init(settings: AccessSettings.FairShare, now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }) {
        self.settings = settings
        self.now = now
    }

    /// The principal starts waiting for a render; nil, or the refusal when it already has
    /// `maxQueuedRenders` waiting. Every admitted `enterWait` is followed by one `leaveWait`.
    package func enterWait(owner: String) -> ThumbFailure? {
        accounts.withLock { accounts in
            var account = accounts[owner] ?? newAccount()
            guard account.waiting < settings.maxQueuedRenders else {
                return .fairShare(retryAfterSeconds: 1, reason: "\(settings.maxQueuedRenders) requests of this caller already wait for renders")
            }
            account.waiting += 1
            store(account, owner, in: &accounts)
            return nil
        }
    }

    package func leaveWait(owner: String) {
        accounts.withLock { accounts in
            guard var account = accounts[owner] else { return }
            account.waiting = max(0, account.waiting - 1)
            accounts[owner] = account
        }
    }

    package func admitRender(owner: String) -> ThumbFailure? {
        accounts.withLock { accounts in
            var account = accounts[owner] ?? newAccount()
            refill(&account)
            guard account.tokens >= 1 else {
                let seconds = Int(((1 - account.tokens) / settings.rendersPerSecond).rounded(.up))
                return .fairShare(retryAfterSeconds: max(1, min(seconds, 3600)),
                                  reason: "this caller may start \(JSONNumber.text(settings.rendersPerSecond)) renders a second "
                                      + "(\(settings.burstRenders) at once)")
            }
            account.tokens -= 1
            store(account, owner, in: &accounts)
            return nil
        }
    }

    package func maxRunningRenders(workers: Int) -> Int {
        settings.maxRunningRenders ?? max(1, workers - 1)
    }

    private func newAccount() -> Account { Account(tokens: Double(settings.burstRenders), refilledAt: now()) }

    private func refill(_ account: inout Account) {
        let at = now()
        guard at > account.refilledAt else { return }
        let seconds = Double(at - account.refilledAt) / 1e9
        account.tokens = min(Double(settings.burstRenders), account.tokens + seconds * settings.rendersPerSecond)
        account.refilledAt = at
    }

    private func store(_ account: Account, _ owner: String, in accounts: inout [String: Account]) {
        if accounts[owner] == nil, accounts.count >= Self.maxAccounts {
            // Idle accounts first: they hold nothing a caller would miss but a partly used bucket.
            let idle = accounts.filter { $0.value.waiting == 0 }.keys.prefix(Self.maxAccounts / 4)
            for key in idle { accounts[key] = nil }
            guard accounts.count < Self.maxAccounts else { return }
        }
        accounts[owner] = account
    }
}

enum JSONNumber {
    /// A rate as people write it: whole numbers without ".0".
    static func text(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : String(value)
    }
}
