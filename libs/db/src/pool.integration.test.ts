import pg from 'pg';
import { constantStatement, createDb, executeStatement } from './pool';

// libs/testing depends on this package, so read the per-run database its global setup exported.
const databaseUrl = process.env.DATABASE_URL!;

describe('createDb', () => {
  it('reports a connection lost while checked out instead of crashing the process', async () => {
    let reportLost: (error: Error) => void = () => undefined;
    const lost = new Promise<Error>((resolve) => (reportLost = resolve));
    const handle = createDb({
      connectionString: databaseUrl,
      max: 2,
      onConnectionError: (error) => {
        reportLost(error);
      },
    });
    try {
      const client = await handle.pool.connect();
      const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await handle.pool.query('SELECT pg_terminate_backend($1)', [rows[0].pid]);
      // Waits on the report itself (libs/testing's eventually is out of reach: it depends on
      // this package); the test's timeout is the deadline.
      await expect(lost).resolves.toBeInstanceOf(Error);
      await expect(client.query('SELECT 1')).rejects.toThrow();
      client.release(true);
      // The pool replaces the connection.
      await expect(handle.pool.query('SELECT 1 AS one')).resolves.toMatchObject({
        rows: [{ one: 1 }],
      });
    } finally {
      await handle.close();
    }
  });

  it('parses int8 as a number', async () => {
    const handle = createDb({ connectionString: databaseUrl, max: 1 });
    try {
      const { rows } = await handle.pool.query<{ n: unknown }>(
        'SELECT 9007199254740991::int8 AS n',
      );
      expect(rows[0].n).toBe(9007199254740991);
    } finally {
      await handle.close();
    }
  });

  it("reads timestamps as pg's own parser does, in any session time zone", async () => {
    const handle = createDb({ connectionString: databaseUrl, max: 1 });
    const pgParse = pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ);
    const values = [
      '2026-11-28 19:30:00.123456+00',
      '2026-11-28 19:30:00+00',
      '2026-03-29 01:59:59.999999+00',
      '1999-12-31 23:59:59.5-03:30',
      '0099-06-01 12:00:00+00',
      '2000-01-01 00:00:00+00 BC',
      'infinity',
      '-infinity',
    ];
    const client = await handle.pool.connect();
    try {
      for (const zone of ['UTC', 'Asia/Kathmandu', 'America/St_Johns']) {
        await client.query(`SET TIME ZONE '${zone}'`);
        const { rows } = await client.query<{
          at: unknown;
          text: string;
          local: unknown;
          localText: string;
        }>(
          `SELECT v::timestamptz AS at, v::timestamptz::text AS text, v::timestamp AS local,
             v::timestamp::text AS "localText"
           FROM unnest($1::text[]) AS v`,
          [values],
        );
        for (const row of rows) {
          expect({ zone, text: row.text, at: row.at }).toEqual({
            zone,
            text: row.text,
            at: pgParse(row.text),
          });
          // Without a time zone: the Node process's local time, as pg reads it.
          expect(row.local).toEqual(pgParse(row.localText));
        }
        // A session zone with an offset sends `+05:45`-like suffixes: the instant is the same.
        expect((rows[0].at as Date).toISOString()).toBe('2026-11-28T19:30:00.123Z');
      }
    } finally {
      client.release();
      await handle.close();
    }
  });
});

describe('DbHandle.close', () => {
  it('ends the pool even when Kysely never ran a query on it', async () => {
    const handle = createDb({ connectionString: databaseUrl, max: 1 });
    await handle.pool.query('SELECT 1');
    expect(handle.pool.totalCount).toBe(1);
    await handle.close();
    expect(handle.pool.ended).toBe(true);
    expect(handle.pool.totalCount).toBe(0);
    await expect(handle.close()).resolves.toBeUndefined();
  });

  it('ends the pool Kysely used, once', async () => {
    const handle = createDb({ connectionString: databaseUrl, max: 1 });
    await handle.db.selectFrom('apps').select('id').limit(1).execute();
    await Promise.all([handle.close(), handle.close()]);
    expect(handle.pool.ended).toBe(true);
  });
});

describe('constantStatement', () => {
  interface Row {
    a: number;
    b: string;
  }
  const SELECT_ROW = constantStatement<Row>('SELECT a, b FROM pool_test_rows WHERE a = $1');

  /** What one connection's session holds after running SELECT_ROW twice and a Kysely query. */
  async function preparedAfterRuns(namedStatements: boolean | undefined): Promise<string[]> {
    const handle = createDb({
      connectionString: databaseUrl,
      max: 1,
      ...(namedStatements === undefined ? {} : { namedStatements }),
    });
    try {
      // One connection, so the check below sees the session the statements ran in.
      await handle.pool.query('CREATE TEMPORARY TABLE pool_test_rows (a int, b text)');
      await handle.pool.query("INSERT INTO pool_test_rows VALUES (1, 'one'), (2, 'two')");

      expect(await executeStatement(handle.db, SELECT_ROW, [1])).toEqual([{ a: 1, b: 'one' }]);
      expect(await executeStatement(handle.db, SELECT_ROW, [2])).toEqual([{ a: 2, b: 'two' }]);
      await handle.db.selectFrom('apps').select('id').limit(1).execute();
      const prepared = await handle.pool.query<{ name: string; statement: string }>(
        'SELECT name, statement FROM pg_prepared_statements',
      );
      return prepared.rows.map((row) => `${row.name}: ${row.statement}`);
    } finally {
      await handle.close();
    }
  }

  it('runs named by default: the session parses and plans it once, under a name of its text', async () => {
    expect(await preparedAfterRuns(undefined)).toEqual([
      expect.stringMatching(/^ls_[0-9a-f]{24}: SELECT a, b FROM pool_test_rows WHERE a = \$1$/),
    ]);
  });

  it('runs unnamed without namedStatements: no session keeps a prepared statement (PgBouncer before 1.21)', async () => {
    expect(await preparedAfterRuns(false)).toEqual([]);
  });
});
