// Global types for `tsc --checkJs` over assets/: `Schemas[...]` are the API's schemas,
// generated from the served /openapi.yaml by openapi-typescript into api.d.ts next to this file
// (the test writes it; it is not committed, so it always matches the binary).
type Schemas = import('./api').components['schemas'];
