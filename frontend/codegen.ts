// GraphQL Code Generator: typed documents for every graphql(`...`) call in src/, generated
// from the server's schema (../graph/*.graphqls) into src/gql. Run with `npm run codegen`
// (`make generate`); CI fails when the checked-in output drifts.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: '../graph/*.graphqls',
  documents: ['src/**/*.{ts,tsx}', '!src/gql/**/*', '!src/**/*.test.{ts,tsx}'],
  ignoreNoDocuments: false,
  errorsOnly: false,
  generates: {
    './src/gql/': {
      preset: 'client',
      presetConfig: {
        fragmentMasking: false,
      },
      config: {
        useTypeImports: true,
        enumsAsTypes: true,
        skipTypename: false,
        dedupeFragments: true,
        strictScalars: true,
        scalars: {
          ID: 'string',
          Time: 'string',
          Map: 'Record<string, unknown>',
        },
      },
    },
  },
};

export default config;
