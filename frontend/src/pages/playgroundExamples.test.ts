import { Kind, parse } from 'graphql';
import { describe, expect, it } from 'vitest';

import examples from './playground-examples.graphql?raw';
import { EXAMPLE_TABS, exampleTabs } from './playgroundExamples';

describe('the playground examples', () => {
  it('open as tabs, the first listing the jobs, then starting one and watching its run', () => {
    const names = EXAMPLE_TABS.map((tab) => {
      const doc = parse(tab.query);
      expect(doc.definitions).toHaveLength(1);
      const op = doc.definitions[0];
      return op?.kind === Kind.OPERATION_DEFINITION ? `${op.operation} ${op.name?.value}` : String(op?.kind);
    });
    expect(names).toEqual(['query ListJobs', 'mutation StartJob', 'subscription WatchRun']);
    expect(EXAMPLE_TABS[0]?.query).toMatch(/jobs\(first: 20\) \{\s+nodes \{\s+name/);
    expect(EXAMPLE_TABS[0]?.query).toMatch(/me \{ name role \}/);
    expect(EXAMPLE_TABS[2]?.variables).toMatch(/"runId"/);
  });
  it('are the whole file, every operation and its comment', () => {
    expect(EXAMPLE_TABS.map((tab) => tab.query.trim()).join('\n\n') + '\n').toBe(examples);
    expect(exampleTabs('# a\nquery A { me { name } }\n\n\n# b\nquery B { me { role } }\n').map((t) => t.query)).toEqual([
      '# a\nquery A { me { name } }\n',
      '# b\nquery B { me { role } }\n',
    ]);
  });
});
