// thumbd-crash-child: the process the crash tests kill with SIGKILL while it writes a cache.
// A test binary re-running one of its own tests as the child made that test pass by returning
// at once in every ordinary run, and could not tell a child that trapped from one that was killed.
//
//   thumbd-crash-child pipeline ROOT     renders ROOT/assets/* into the pipeline cache ROOT/cache
//   thumbd-crash-child disk-cache DIR    inserts, replaces, reads, records failures and removes in DIR
//
// Each creates its ready file (ROOT/ready, DIR.ready) once something is indexed, then works until
// it is killed. Exit status: 64 usage, 70 set-up failed (stderr says why), 75 still alive after
// `lifetimeSeconds` (the parent died or never killed it). A parent must see SIGKILL, none of these.
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3 else { CrashChild.fail(64, "usage: thumbd-crash-child pipeline ROOT | disk-cache DIR") }
let target = arguments[2]
switch arguments[1] {
case "pipeline":
    await PipelineWriter(root: target).run()
case "disk-cache":
    DiskCacheWriter(directory: target).run()
default:
    CrashChild.fail(64, "unknown mode \(arguments[1])")
}
CrashChild.fail(75, "not killed within \(CrashChild.lifetimeSeconds) s")
