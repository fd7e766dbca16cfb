// thumbd-test-worker: the render worker (RenderWorkerMain) with a fault hook, for the worker
// tests. A source whose bytes begin with `THUMBD-FAULT:<word>\n` makes the worker misbehave after
// its sandbox is in place, as a decoder exploited or gone wrong would (see FaultHook.swift); every
// other source renders as in production. The production thumbd never passes a hook.
import ThumbWorker

RenderWorkerMain.run(faultHook: FaultHook.act)
