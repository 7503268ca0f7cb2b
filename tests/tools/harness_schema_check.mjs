// Runs JSON schemas through the published @deepseek-ai/dsh-tools checks.
//
// Usage: node harness_schema_check.mjs <install-prefix> < request.json
// Request:  {"schemas": {label: schema}, "values": [{label, schema, value}]}
// Response: {"version": "...", "schemas": {label: {supported, object, violations}},
//            "values": [{label, violations}]}
//
// The package is imported from the prefix's node_modules by absolute path, so
// this file can live in the repository and the packages in a cache.
import { createRequire } from 'node:module'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'

const prefix = process.argv[2]
const require = createRequire(join(prefix, 'package.json'))
const entry = require.resolve('@deepseek-ai/dsh-tools')
const pkg = JSON.parse(readFileSync(require.resolve('@deepseek-ai/dsh-tools/package.json'), 'utf8'))
const tools = await import(pathToFileURL(entry).href)

const violationsOf = (fn, schema) => {
  try {
    fn(schema)
    return []
  } catch (err) {
    return Array.isArray(err?.violations) ? err.violations : [String(err?.message ?? err)]
  }
}

const request = JSON.parse(readFileSync(0, 'utf8'))
const out = { version: pkg.version, schemas: {}, values: [] }
for (const [label, schema] of Object.entries(request.schemas ?? {})) {
  const supported = violationsOf(tools.assertSupportedJsonSchema, schema)
  const object = violationsOf(tools.assertObjectJsonSchema, schema)
  out.schemas[label] = { supported: supported.length === 0, object: object.length === 0, violations: supported.concat(object) }
}
for (const { label, schema, value } of request.values ?? []) {
  out.values.push({ label, violations: tools.validateJsonSchemaValue(schema, value) })
}
process.stdout.write(JSON.stringify(out))
