#if canImport(Glibc)
import Glibc
#endif
package import ThumbImaging
package import ThumbSystem

extension RenderWorker {
    /// Renders `requests` of the open file `descriptor` (the daemon opened it with its confined
    /// open; `status` is its `fstat`) in the worker, waiting at most `deadlineSeconds` (wall) for
    /// the answer. A worker past its deadline is killed and reaped; one that dies or sends a
    /// malformed answer is reaped (killed first if it still runs). The descriptor stays the
    /// caller's (the worker gets its own copy).
    package func render(source descriptor: Int32, status: FileStatus, label: String, requests: [ThumbnailRequest],
                        limits: ImageLimits, tuning: ShrinkPlan.Tuning, deadlineSeconds: Double, placeholder: PlaceholderDemand = .skip,
                        isCancelled: (@Sendable () -> Bool)? = nil) -> WorkerOutcome {
        if let ending { return .crashed(WorkerDeath(pid: pid, symptom: .notListening, ending: ending, killedByDaemon: false, cpuSeconds: 0)) }
        guard !requests.isEmpty else { return .rendered(WorkerAnswer(results: [], cpuSeconds: 0)) }
        let start = ContinuousClock.now
        let deadline = start + .milliseconds(CheckedConversion.clampedInteger(deadlineSeconds * 1000, to: 0...86_400_000))
        let id = nextRequestID
        nextRequestID &+= 1
        let order = WorkerRenderOrder(requestID: id, status: status, label: label, limits: limits, tuning: tuning, requests: requests,
                                      placeholder: placeholder)
        let frame: [UInt8]
        do throws(WorkerProtocolError) {
            frame = try order.encode()
        } catch {
            // More requests than one order may carry: the daemon's mistake, not the file's.
            return .rendered(WorkerAnswer(results: requests.map { _ in .failure(.imaging(.outputTooLarge(reason: "\(error)"))) },
                                          cpuSeconds: 0))
        }
        beginRequest(id)
        defer { endRequest() }
        // A cancel that came before `beginRequest` found no request to cancel: it is seen here
        // (the caller's flag is set before its cancel reaches `cancelCurrent`; both sides are
        // sequentially consistent, so one of them sees the other).
        if isCancelled?() == true { page.cancel(id) }
        do throws(FrameTransportError) {
            try socket.send(frame, passing: descriptor, deadline: deadline)
        } catch {
            return fail(error, start: start, notSent: true)
        }
        let answerFrame: [UInt8]
        do throws(FrameTransportError) {
            (answerFrame, _) = try socket.receiveFrame(
                maxPayloadBytes: WorkerAnswer.maxPayloadBytes(requestCount: requests.count, limits: limits),
                deadline: deadline) { (header) throws(WorkerProtocolError) in try header.expect(.answer, requestID: id) }
        } catch {
            return fail(error, start: start, notSent: false)
        }
        do throws(WorkerProtocolError) {
            let answer = try WorkerAnswer.decode(frame: answerFrame, requestID: id, requests: requests, limits: limits,
                                                 placeholder: placeholder)
            accountedCPUSeconds += answer.cpuSeconds
            return .rendered(answer)
        } catch {
            return .crashed(killForMisbehaviour(symptom: .malformedAnswer(reason: error.description)))
        }
    }

    /// The outcome of a send or receive that failed: the worker is reaped in every case.
    private func fail(_ error: FrameTransportError, start: ContinuousClock.Instant, notSent: Bool) -> WorkerOutcome {
        switch error {
        case .timedOut:
            let (_, cpu) = reap(kill: true)
            return .timedOut(seconds: Self.seconds(since: start), cpuSeconds: cpu)
        case .closed(let received):
            let symptom: WorkerDeath.Symptom = notSent ? .notListening : received == 0 ? .closedSocket : .closedMidAnswer(receivedBytes: received)
            return .crashed(reapAfterSocketClosed(symptom: symptom))
        case .malformed(let problem):
            return .crashed(killForMisbehaviour(symptom: .malformedAnswer(reason: problem.description)))
        case .failed(let systemError):
            return .crashed(killForMisbehaviour(symptom: .socketFailed(reason: systemError.description)))
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let (seconds, attoseconds) = start.duration(to: .now).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
