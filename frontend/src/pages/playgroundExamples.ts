// The playground's example operations, one tab each: src/pages/playground-examples.graphql,
// which the README shows too (a Go test keeps the two the same and checks the operations
// against the schema).
import examples from './playground-examples.graphql?raw';

export interface ExampleTab {
  query: string;
  variables?: string;
}

// exampleTabs splits the examples at their blank lines: each part is an operation with the
// comment above it, and becomes a tab. WatchRun's tab has its runId variable ready to fill in.
export function exampleTabs(text: string): ExampleTab[] {
  return text
    .split(/\n\s*\n/)
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((part) => {
      const query = part + '\n';
      return /subscription WatchRun\b/.test(part) ? { query, variables: '{\n  "runId": "the id StartJob returned"\n}' } : { query };
    });
}

export const EXAMPLE_TABS: ExampleTab[] = exampleTabs(examples);
