import { groupFigures, parseCreationLine } from './worker-groups';

const line = (fields: Record<string, unknown>) =>
  JSON.stringify({ level: 30, msg: 'creation job finished', ...fields });

describe('parseCreationLine', () => {
  it('reads the request and its group job, the job itself when it led the group', () => {
    expect(
      parseCreationLine('w', line({ reqId: 'gw0-1', jobId: 'r1', entries: 2, status: 'done' })),
    ).toEqual({
      worker: 'w',
      reqId: 'gw0-1',
      groupId: 'r1',
      entries: 2,
      status: 'done',
    });
    expect(
      parseCreationLine('w', line({ reqId: 'gw0-2', jobId: 'r2', groupJobId: 'r1', entries: 1 }))
        ?.groupId,
    ).toBe('r1');
  });

  it('ignores every other line', () => {
    expect(parseCreationLine('w', JSON.stringify({ msg: 'worker started' }))).toBeNull();
    expect(parseCreationLine('w', 'creation job finished, but not JSON')).toBeNull();
  });
});

describe('groupFigures', () => {
  it('counts groups per worker, requests per gateway and groups mixing gateways', () => {
    const parsed = [
      line({ reqId: 'gw0-1', jobId: 'r1' }),
      line({ reqId: 'gw0-2', jobId: 'r2', groupJobId: 'r1' }),
      line({ reqId: 'gw1-3', jobId: 'r3' }),
    ].map((text) => parseCreationLine('a', text)!);
    parsed.push(parseCreationLine('b', line({ reqId: 'gw1-4', jobId: 'r4' }))!);
    const figures = groupFigures(parsed, (reqId) => reqId.split('-')[0]);
    expect(figures.groupsByWorker.get('a')).toEqual({ groups: 2, shared: 1, largest: 2 });
    expect(figures.groupsByWorker.get('b')).toEqual({ groups: 1, shared: 0, largest: 1 });
    expect(Object.fromEntries(figures.requestsByWorkerAndGateway.get('a')!)).toEqual({
      gw0: 2,
      gw1: 1,
    });
    expect(figures.mixedGateways).toBe(0);
    const mixed = groupFigures(
      [parseCreationLine('a', line({ reqId: 'gw1-5', jobId: 'r5', groupJobId: 'r1' }))!, ...parsed],
      (reqId) => reqId.split('-')[0],
    );
    expect(mixed.mixedGateways).toBe(1);
  });
});
