// Coalesce work to at most once per animation frame, per key; and run work when the page is idle.

const queue = new Map<object, () => void>();
let scheduled = false;

const raf: (cb: () => void) => void =
  typeof requestAnimationFrame === "function"
    ? (cb) => requestAnimationFrame(() => cb())
    : (cb) => setTimeout(cb, 16);

/** Run `fn` in the next frame; a later call with the same key replaces (and goes after) the earlier one. */
export function schedule(key: object, fn: () => void): void {
  queue.delete(key);
  queue.set(key, fn);
  if (!scheduled) {
    scheduled = true;
    raf(flushFrames);
  }
}

export function cancelScheduled(key: object): void {
  queue.delete(key);
}

/** Run everything scheduled now (also used by tests). */
export function flushFrames(): void {
  scheduled = false;
  const jobs = [...queue.values()];
  queue.clear();
  for (const job of jobs) {
    try {
      job();
    } catch (err) {
      console.error("anvia: render error", err);
    }
  }
}

/** About one frame at 60 Hz (ms). */
export const FRAME_MS = 16;

const clock = (): number => (typeof performance !== "undefined" ? performance.now() : Date.now());
const lastRun = new WeakMap<object, number>();

/**
 * Run `fn` at once when `key` has not run within the last frame and nothing waits for it; else in
 * the next frame, as `schedule` does. Streamed text arriving in batches (one every 50 ms) is
 * drawn as soon as each arrives, and still at most about once a frame when they come faster.
 */
export function scheduleLeading(key: object, fn: () => void): void {
  const run = (): void => {
    lastRun.set(key, clock());
    fn();
  };
  const last = lastRun.get(key);
  if (!queue.has(key) && (last === undefined || clock() - last >= FRAME_MS)) {
    try {
      run();
    } catch (err) {
      console.error("anvia: render error", err);
    }
    return;
  }
  schedule(key, run);
}

/** How long one idle slice may spend building (older entries, a report's rows), in ms. */
const SLICE_MS = 8;

export type IdleHandle = { cancel(): void };

/** Run `fn` when the page is idle; `fn` works while `timeLeft()` (at most SLICE_MS: an idle
 * period may last 50 ms, and a click must not wait that long). */
export function whenIdle(fn: (timeLeft: () => boolean) => void): IdleHandle {
  if (typeof requestIdleCallback === "function") {
    const id = requestIdleCallback((d) => {
      const end = performance.now() + SLICE_MS;
      fn(() => d.timeRemaining() > 1 && performance.now() < end);
    });
    return { cancel: () => cancelIdleCallback(id) };
  }
  const id = setTimeout(() => {
    const end = performance.now() + SLICE_MS;
    fn(() => performance.now() < end);
  }, 16);
  return { cancel: () => clearTimeout(id) };
}
