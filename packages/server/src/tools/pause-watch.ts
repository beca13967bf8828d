/**
 * @module A periodic check that judges others by their silence (a node's heartbeats, another
 * process's announcements, a job's frames) must not blame them for this process's own pause: a
 * SIGSTOP, a frozen virtual machine, a long garbage collection. What they sent meanwhile waits in
 * the sockets and is read only after the timers due at the wake-up have run, so a check that runs
 * late looks again at its next tick instead of judging now.
 */
export class PauseWatch {
  private last = Date.now()

  /**
   * @param intervalMs how often the check is meant to run
   * @param slackMs lateness still taken for an ordinary busy moment, not a pause
   */
  constructor(
    private intervalMs: number,
    private slackMs = 1000,
  ) {}

  /** Call at each tick: true when this tick came so late that the process was paused. */
  wasPaused(): boolean {
    const now = Date.now()
    const late = now - this.last - this.intervalMs
    this.last = now
    return late > this.slackMs
  }
}
