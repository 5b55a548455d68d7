/**
 * Waiting that an AbortSignal cuts short, written once: a pause that ends early when the signal fires (a drainer's
 * throttle wait, a stream's long poll, `deno task listen`'s back-off), and a promise raced against the signal (a DNS
 * lookup, a broker's connect or publish), whose work goes on and whose result is then dropped.
 */

/** Resolves after `ms` (at least 1), or at once when `signal` fires (or has fired). */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, Math.max(1, ms));
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * `work`'s outcome, or a rejection with `reason(signal)` (the signal's own reason by default) as soon as `signal` fires
 * (or at once when it has fired). `work` is not stopped: its result is dropped.
 */
export function raceAbort<T>(
  work: Promise<T>,
  signal: AbortSignal,
  reason: (signal: AbortSignal) => unknown = (s) => s.reason,
): Promise<T> {
  if (signal.aborted) return Promise.reject(reason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(reason(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
