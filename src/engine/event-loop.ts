/**
 * A step boundary's pause for the event loop. A run whose steps never wait (synchronous compute
 * nodes over synchronous SQLite calls) would otherwise keep its fiber, and so Node's thread, until
 * the run ends: Pi could answer no RPC, draw no TUI frame and see no Escape meanwhile. On the live
 * clock it is a macrotask (`setImmediate`): `Effect.yieldNow` only hands the fiber back to
 * Effect's scheduler, which resumes it from a microtask, before any I/O callback runs. Under
 * another clock (TestClock, a simulation's) time and turns are that clock's: it gets a zero
 * sleep, so a test that drives the clock also drives this pause.
 */
import { Clock, Context, DefaultServices, Duration, Effect } from "effect"

const liveClock = Context.get(DefaultServices.liveServices, Clock.Clock)

const macrotask: Effect.Effect<void> = Effect.async<void>((resume) => {
  const handle = setImmediate(() => resume(Effect.void))
  return Effect.sync(() => clearImmediate(handle))
})

/** Let Node's pending I/O callbacks and timers run, then continue. */
export const yieldToEventLoop: Effect.Effect<void> = Effect.clockWith((clock) =>
  clock === liveClock ? macrotask : clock.sleep(Duration.zero)
)
