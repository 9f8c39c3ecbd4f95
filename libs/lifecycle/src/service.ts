import { loadOrExit } from '@linkservice/config';
import type { Logger } from '@linkservice/logger';
import { createLogger } from '@linkservice/logger';
import type { ShutdownSignal } from './process';
import { exitOnFatalErrors, onShutdownSignal } from './process';
import type { ReadinessProbe } from './readiness';
import { waitForDependencies } from './startup';

/**
 * After the work in flight has ended, time for closing Redis, BullMQ and the pool, then for
 * flushing telemetry: 4.5 s together, within the 5 s the chart allows beyond SHUTDOWN_GRACE_MS.
 */
export const CLOSE_DEPENDENCIES_MS = 3_000;
export const FLUSH_TELEMETRY_MS = 1_500;

/** The variables runService reads; every service's config has them. */
export interface ServiceConfig {
  LOG_LEVEL: string;
  /** After SIGTERM: how long the work in flight may take. */
  SHUTDOWN_GRACE_MS: number;
}

/** What a composition root (a service's deps.ts) returns. */
export interface Resources<D> {
  deps: D;
  /** Closes every client buildDeps opened (Redis, BullMQ, then the pool). Safe to call twice. */
  close(): Promise<void>;
  /**
   * What must have answered once before the service starts (listens, consumes): runService
   * waits for them, so the first request finds its clients connected rather than a 503.
   */
  dependencies?: Record<string, ReadinessProbe>;
}

/** Set once SIGTERM or SIGINT arrived: readiness fails and reconnecting clients give up. */
export class ShutdownState {
  private begun = false;

  get inProgress(): boolean {
    return this.begun;
  }

  begin(): void {
    this.begun = true;
  }
}

/** What a composition root may take beside the config and the logger. */
export interface BuildOptions<Clients> {
  /** runService's: clients that reconnect forever stop trying once shutdown began. */
  shutdown?: ShutdownState;
  /**
   * For tests: swaps clients (a dead Redis, a counting Kysely) before any repository or service
   * is built over them. close() still closes what the composition root opened.
   */
  clients?: (opened: Clients) => Clients;
}

export interface ServiceContext<C> {
  config: C;
  logger: Logger;
  shutdown: ShutdownState;
}

export interface StartedService {
  /** What stop() stops accepting, for the shutdown line: 'connections', 'jobs'. */
  intake: string;
  /**
   * The ports it listens on, by role ({ http: 8080, metrics: 9464 }): the ports asked for, or
   * the ones picked for a 0. runService prints them in its one `<name> started:` line.
   */
  ports?: Record<string, number>;
  /**
   * Stops accepting new work before it returns (whoever reads the shutdown line may rely on
   * that), then resolves once the work in flight has ended, at most `graceMs` later: 'drained'
   * when nothing is left (what was still open when the grace ended was cut), 'unfinished' when
   * work is still running that cannot be cut. The process then exits 1 at once, without
   * closing anything: Postgres rolls the open transactions back when their connections drop.
   */
  stop(graceMs: number): Promise<'drained' | 'unfinished'>;
}

/** Telemetry as the service's instrument.ts started it. */
export interface TelemetryHandle {
  shutdown(): Promise<void>;
}

export interface ServiceDefinition<C extends ServiceConfig, R extends Resources<unknown>> {
  /** The logger's `service` and the "failed to start" line: 'gateway'. */
  name: string;
  /** From instrument.ts, which main.ts imports first (see README). */
  telemetry: TelemetryHandle;
  /** The service's config.ts loadConfig: a bad variable is listed and the process exits 78. */
  loadConfig(): C;
  /** The service's composition root. */
  buildDeps(config: C, logger: Logger, options: { shutdown: ShutdownState }): R;
  /** Listens or starts consuming, and logs that it did. */
  start(resources: R, context: ServiceContext<C>): Promise<StartedService>;
  /** How long the resources' dependencies may take to answer; STARTUP_TIMEOUT_MS by default. */
  startupTimeoutMs?: number;
}

/**
 * The one plain line a started service prints (on stderr: stdout holds its JSON log), for
 * whoever started it by hand: `gateway started: http port 8080, metrics port 41877`.
 */
export function startedLine(name: string, started: Pick<StartedService, 'ports'>): string {
  const ports = Object.entries(started.ports ?? {}).map(([role, port]) => `${role} port ${port}`);
  return `${name} started${ports.length > 0 ? `: ${ports.join(', ')}` : ''}`;
}

/** True when `work` finished in time; false when the time ran out first. */
export async function settlesWithin(work: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<false>((resolve) => {
    timer = setTimeout(() => {
      resolve(false);
    }, ms);
  });
  const outcome = await Promise.race([work.then(() => true), timeUp]);
  clearTimeout(timer);
  return outcome;
}

/**
 * The one way to run a service: config, logger, fatal-error handlers, the composition root, the
 * wait for its dependencies (bounded: a process that cannot reach them exits 1, and Kubernetes
 * restarts it; meanwhile it has no port open, so nothing can reach it early), start, then on
 * SIGTERM/SIGINT the ordered, bounded shutdown: stop accepting and drain (at most
 * SHUTDOWN_GRACE_MS), close the clients (bounded), flush telemetry (bounded; last, so the spans
 * of the shutdown itself are exported too), exit 0. A failure to start (a port in use) is one
 * stderr line and exit code 1; once started, failures are the logger's.
 */
export function runService<C extends ServiceConfig, R extends Resources<unknown>>(
  service: ServiceDefinition<C, R>,
): void {
  const main = async (): Promise<void> => {
    const config = loadOrExit(() => service.loadConfig());
    const logger = createLogger(service.name, config.LOG_LEVEL);
    exitOnFatalErrors(logger);
    const shutdown = new ShutdownState();
    const resources = service.buildDeps(config, logger, { shutdown });
    if (resources.dependencies) {
      await waitForDependencies(resources.dependencies, {
        timeoutMs: service.startupTimeoutMs,
        logger,
      });
    }
    const started = await service.start(resources, { config, logger, shutdown });
    process.stderr.write(`${startedLine(service.name, started)}\n`);

    const stop = async (signal: ShutdownSignal): Promise<void> => {
      if (shutdown.inProgress) return;
      shutdown.begin();
      const drained = started.stop(config.SHUTDOWN_GRACE_MS);
      logger.info({ signal }, `shutting down: no longer accepting ${started.intake}`);
      if ((await drained) === 'unfinished') process.exit(1);
      // Bounded: a client stuck reconnecting to a dead Redis must not keep the pod terminating.
      const closed = await settlesWithin(
        resources.close().catch((error: unknown) => {
          logger.warn({ err: error }, 'closing clients failed');
        }),
        CLOSE_DEPENDENCIES_MS,
      );
      if (!closed) logger.warn('Redis/Postgres clients did not close in time; exiting anyway');
      const flushed = await settlesWithin(
        service.telemetry.shutdown().catch((error: unknown) => {
          logger.warn({ err: error }, 'flushing telemetry failed');
        }),
        FLUSH_TELEMETRY_MS,
      );
      if (!flushed) logger.warn('telemetry did not flush in time; exiting anyway');
      logger.info('stopped');
      process.exit(0);
    };
    onShutdownSignal(logger, stop);
  };
  main().catch((error: unknown) => {
    process.stderr.write(
      `${service.name} failed to start: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exit(1);
  });
}
