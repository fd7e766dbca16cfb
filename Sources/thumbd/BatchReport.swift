import Foundation
import ThumbBatch
import ThumbImaging
import ThumbSystem
#if canImport(Glibc)
import Glibc
#endif

/// Progress on stderr: a redrawn bar on a terminal, a plain line every few seconds otherwise.
final class ProgressReporter {
    let interactive: Bool
    private var lastLine = Date.distantPast
    private var drew = false

    init(interactive: Bool) {
        self.interactive = interactive
    }

    func report(_ summary: BatchRunner.Summary, expected: Int?) {
        let done = summary.total
        let rate = summary.imagesPerSecond
        var text = "\(done)\(expected.map { "/\($0)" } ?? "") thumbnails, \(String(format: "%.1f", rate)) img/s, \(summary.failures.count) failed"
        if let expected, rate > 0, expected > done {
            text += ", ETA \(CheckedConversion.clampedInteger(Double(expected - done) / rate, to: 0...Int(Int32.max)))s"
        }
        if interactive {
            var bar = ""
            if let expected, expected > 0 {
                let filled = min(30, 30 * done / expected)
                bar = "[" + String(repeating: "=", count: filled) + String(repeating: " ", count: 30 - filled) + "] "
            }
            Console.error("\r\u{1B}[K" + bar + text, newline: false)
            drew = true
        } else if Date().timeIntervalSince(lastLine) >= 5 {
            lastLine = Date()
            Console.error("thumbd batch: " + text)
        }
    }

    func finish() {
        if drew { Console.error("") }
    }
}

/// The summary at the end of a batch: text, or JSON with `--json`.
enum BatchReport {
    static func print(_ summary: BatchRunner.Summary, json: Bool) {
        // Asset names, kinds and reasons come from job files, spool file names and queues: each
        // line stays short, and stays one line (a line feed or an ESC in a job's asset name must
        // not forge a line of its own in the journal, nor repaint the operator's terminal).
        for failure in summary.failures {
            Console.error("thumbd: " + JSONLines.textLine("\(DisplayText.truncated(failure.asset)) "
                                                          + "[\(DisplayText.truncated(failure.kind, maxBytes: 60))]: "
                                                          + DisplayText.truncated(failure.reason, maxBytes: 400)))
        }
        if json {
            let object: [String: Any] = [
                "rendered": summary.rendered, "upToDate": summary.upToDate, "failed": summary.failures.count,
                "elapsedSeconds": (summary.elapsedSeconds * 1000).rounded() / 1000,
                "imagesPerSecond": (summary.imagesPerSecond * 10).rounded() / 10,
                "failures": summary.failures.map { ["asset": $0.asset, "kind": $0.kind, "reason": $0.reason] },
            ]
            let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .prettyPrinted])) ?? Data()
            Console.out(String(decoding: data, as: UTF8.self))
            return
        }
        Console.out("rendered \(summary.rendered), already up to date \(summary.upToDate), failed \(summary.failures.count), "
                    + "\(String(format: "%.1f", summary.elapsedSeconds)) s, \(String(format: "%.1f", summary.imagesPerSecond)) img/s")
    }
}
