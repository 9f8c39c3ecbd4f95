import type { Scenario } from './scenarios';

/** A scenario for the bench's unit tests: only what a test names; its load never runs. */
export function scenario(fields: Partial<Scenario> & Pick<Scenario, 'id'>): Scenario {
  return {
    title: fields.id,
    subject: 'gateway',
    job: () => {
      throw new Error('not run in this test');
    },
    ...fields,
  };
}
