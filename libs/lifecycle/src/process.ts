import type { Logger } from '@linkservice/logger';

/**
 * An error nothing handled leaves the process in an unknown state: log it as fatal and exit, so
 * the orchestrator restarts a clean one. Call first thing in main(), once the logger exists.
 */
export function exitOnFatalErrors(logger: Logger): void {
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    process.exit(1);
  });
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled rejection');
    process.exit(1);
  });
}

export type ShutdownSignal = 'SIGTERM' | 'SIGINT';

/**
 * Runs `shutdown` on SIGTERM (the orchestrator) or SIGINT (a terminal). `shutdown` ends the
 * process itself; if it fails, the failure is logged as fatal and the process exits with 1.
 * A second signal while it runs is for `shutdown` to ignore.
 */
export function onShutdownSignal(
  logger: Logger,
  shutdown: (signal: ShutdownSignal) => Promise<void>,
): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      shutdown(signal).catch((error: unknown) => {
        logger.fatal({ err: error }, 'shutdown failed');
        process.exit(1);
      });
    });
  }
}
